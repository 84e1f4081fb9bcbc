#!/bin/sh
# tests/run_bad.sh TPUSIM -- runs every tests/data/bad/*.yaml and checks the
# exit status and message. Each file says what it expects in its header:
#   # expect: TEXT      stderr must contain TEXT ({file} stands for the path)
#   # exit: N           exit status (default 2)
#   # cmd: run|check    command (default check)
#   # args: ...         extra arguments
# A run must never crash, hang or leave partial output files.
bin=$1
fail=0; n=0
out=$(mktemp -d)
for f in tests/data/bad/*.yaml; do
    n=$((n + 1))
    expect=$(sed -n 's/^# expect: //p' "$f" | head -n 1 | sed "s|{file}|$f|g")
    want=$(sed -n 's/^# exit: //p' "$f" | head -n 1); want=${want:-2}
    cmd=$(sed -n 's/^# cmd: //p' "$f" | head -n 1); cmd=${cmd:-check}
    args=$(sed -n 's/^# args: //p' "$f" | head -n 1 | sed "s|{out}|$out|g")
    rm -rf "$out/run"
    if [ "$cmd" = run ]; then
        timeout 60 $VALGRIND "$bin" run "$f" -o "$out/run" -q $args >/dev/null 2>"$out/err"
    else
        timeout 60 $VALGRIND "$bin" "$cmd" "$f" $args >/dev/null 2>"$out/err"
    fi
    rc=$?
    if [ "$rc" != "$want" ]; then
        echo "FAIL $f: exit $rc, want $want"; cat "$out/err"; fail=$((fail + 1)); continue
    fi
    if [ -z "$expect" ] || ! grep -qF -- "$expect" "$out/err"; then
        echo "FAIL $f: stderr lacks: $expect"; cat "$out/err"; fail=$((fail + 1)); continue
    fi
    if [ -d "$out/run" ] && ls "$out/run" | grep -q '\.tmp\.'; then
        echo "FAIL $f: left a temporary file"; fail=$((fail + 1)); continue
    fi
done
rm -rf "$out"
echo "bad-input: $((n - fail)) passed, $fail failed"
[ "$fail" = 0 ]
