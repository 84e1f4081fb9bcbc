#!/bin/sh
# tests/run_bad.sh TPUSIM -- runs every tests/data/bad/*.yaml and checks the
# exit status and messages. Each file says what it expects in its header:
#   # expect: TEXT      stderr must contain TEXT ({file} stands for the path);
#                       several expect lines must all match
#   # reject: TEXT      stderr must not contain TEXT
#   # exit: N           exit status (default 2)
#   # cmd: run|check|platform|sweep   command (default check), given the file
#   # args: ...         extra arguments
#   # cmdline: ...      the whole command line instead of cmd, file and args
#                       (a shell word list: redirections such as < {file} work)
# {file}, {out} (an empty scratch directory) and {data} (tests/data) are
# substituted in args and cmdline. A case must never crash, hang (60 s), or
# leave a temporary file or a lock in {out}.
# BAD_EVERY=K runs every K-th case only (sorted by name, the first included):
# make valgrind's subset, which spans every prefix of the corpus.
bin=$1
fail=0; n=0; i=0
out=$(mktemp -d)
for f in tests/data/bad/*.yaml; do
    i=$((i + 1))
    [ $(( (i - 1) % ${BAD_EVERY:-1} )) -eq 0 ] || continue
    n=$((n + 1))
    sub() { sed "s|{file}|$f|g; s|{out}|$out/run|g; s|{data}|tests/data|g"; }
    want=$(sed -n 's/^# exit: //p' "$f" | head -n 1); want=${want:-2}
    cmd=$(sed -n 's/^# cmd: //p' "$f" | head -n 1); cmd=${cmd:-check}
    args=$(sed -n 's/^# args: //p' "$f" | head -n 1 | sub)
    cmdline=$(sed -n 's/^# cmdline: //p' "$f" | head -n 1 | sub)
    rm -rf "$out/run"
    mkdir "$out/run"
    if [ -n "$cmdline" ]; then
        eval "timeout 60 $VALGRIND \"$bin\" $cmdline" >/dev/null 2>"$out/err"
    elif [ "$cmd" = run ]; then
        timeout 60 $VALGRIND "$bin" run "$f" -o "$out/run/o" -q $args >/dev/null 2>"$out/err"
    elif [ "$cmd" = sweep ]; then
        timeout 60 $VALGRIND "$bin" sweep "$f" -o "$out/run/o" $args >/dev/null 2>"$out/err"
    else
        timeout 60 $VALGRIND "$bin" "$cmd" "$f" $args >/dev/null 2>"$out/err"
    fi
    rc=$?
    if [ "$rc" != "$want" ]; then
        echo "FAIL $f: exit $rc, want $want"; head -c 2000 "$out/err"; fail=$((fail + 1)); continue
    fi
    missing=$(sed -n 's/^# expect: //p' "$f" | sub | while IFS= read -r e; do
        grep -qF -- "$e" "$out/err" || printf '%s\n' "$e"; done)
    if [ -z "$(sed -n 's/^# expect: //p' "$f")" ] || [ -n "$missing" ]; then
        echo "FAIL $f: stderr lacks: ${missing:-(no expect line)}"; head -c 2000 "$out/err"
        fail=$((fail + 1)); continue
    fi
    extra=$(sed -n 's/^# reject: //p' "$f" | sub | while IFS= read -r e; do
        grep -qF -- "$e" "$out/err" && printf '%s\n' "$e"; done)
    if [ -n "$extra" ]; then
        echo "FAIL $f: stderr has: $extra"; fail=$((fail + 1)); continue
    fi
    if find "$out/run" -name '*.tmp.*' -o -name '.tpusim-*' | grep -q .; then
        echo "FAIL $f: left a temporary file or a lock: $(find "$out/run")"
        fail=$((fail + 1)); continue
    fi
done
rm -rf "$out"
echo "bad-input: $((n - fail)) passed, $fail failed"
[ "$fail" = 0 ]
