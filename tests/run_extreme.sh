#!/bin/sh
# tests/run_extreme.sh TPUSIM -- every numeric key of tests/data/extreme/keys.txt at every
# extreme value (0, -1, a subnormal, 1e308, 2^63, 2^32, NaN, infinity), set with --set on
# its base scenario (tests/data/extreme/BASE.yaml). `check` must exit 0, or 2 with a
# message; when it exits 0 a short `run` must exit 0 with a valid summary.json (no NaN,
# no null where a figure belongs), or 2 with a message. Never a crash, a hang (60 s), a
# sanitizer report or another exit status. JSONCHECK defaults to the one beside TPUSIM.
bin=$1
jsoncheck=${2:-$(dirname "$bin")/tests/jsoncheck}
data=tests/data/extreme
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
n=0; fail=0; checked=0; ran=0
values='0 -1 1e-310 1e308 9223372036854775808 4294967296 .nan .inf'
crashy='runtime error|AddressSanitizer|LeakSanitizer|assertion .* failed|Segmentation|Aborted'
bad() { fail=$((fail + 1)); echo "FAIL $*"; head -c 600 "$t/err"; echo; }
# exit 2 needs a message; 0 and 2 are the only statuses; no sanitizer or assertion text
judge() { # WHAT RC
    if grep -Eq "$crashy" "$t/err"; then bad "$1: crashed (exit $2)"; return 1; fi
    if [ "$2" = 2 ] && [ ! -s "$t/err" ]; then bad "$1: exit 2 without a message"; return 1; fi
    if [ "$2" != 0 ] && [ "$2" != 2 ]; then bad "$1: exit $2"; return 1; fi
    return 0
}
grep -v '^#' "$data/keys.txt" | while read -r base key unit; do
    [ -n "$key" ] || continue
    [ "$unit" = - ] && unit=
    for v in $values; do
        set="$key=$v$unit"
        what="$base $set"
        n=$((n + 1))
        timeout 60 "$bin" check "$data/$base.yaml" --set "$set" >/dev/null 2>"$t/err"
        rc=$?
        judge "check $what" $rc || continue
        [ $rc = 0 ] || continue
        checked=$((checked + 1))
        rm -rf "$t/o"
        timeout 60 "$bin" run "$data/$base.yaml" --set "$set" -o "$t/o" -q --trace none \
            >/dev/null 2>"$t/err"
        rc=$?
        ran=$((ran + 1))
        judge "run $what" $rc || continue
        [ $rc = 0 ] || continue
        if ! "$jsoncheck" "$t/o/summary.json" >"$t/err" 2>&1; then
            bad "run $what: summary.json is not valid JSON"
        elif grep -Eq '"(total_time_s|time_s|peak_fraction|flops|hbm_bytes|mfu|tokens_per_s)": null' \
            "$t/o/summary.json"; then
            grep -Eo '"[a-z_]+": null' "$t/o/summary.json" | sort -u >"$t/err"
            bad "run $what: a figure is null in summary.json (NaN or infinity upstream)"
        fi
    done
    echo "$n $fail $checked $ran" >"$t/count"
done
read -r n fail checked ran <"$t/count"
echo "extreme: $n cases, $fail failed ($checked accepted by check and run)"
[ "$fail" = 0 ]
