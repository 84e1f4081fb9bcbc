#!/bin/sh
# tests/run_extreme.sh TPUSIM [JSONCHECK] -- every numeric key of tests/data/extreme/keys.txt
# at every extreme value (0, -1, a subnormal, 1e308, 2^63 - 1, 2^63, 2^32, NaN, infinity; then
# the ends of the range its 1e308 message gives, "from 1MBps to 1PBps"),
# set with --set on its base scenario (tests/data/extreme/BASE.yaml). `check` must exit 0, or
# 2 with a message; when it exits 0 a short `run` (--max-steps 2e7, in both) must exit 0 with
# a valid summary.json (no NaN, no null where a figure belongs), or 2 with a message. Never a
# crash, a hang (60 s), a sanitizer report or another exit status. Then products that wrap:
# each integer key at the maximum its range message gives (the 2^63 - 1 case's "in [lo, hi]"),
# alone and with the other keys of its op (or section) at theirs. JSONCHECK defaults to the
# one beside TPUSIM; KEYS (default tests/data/extreme/keys.txt) picks other keys.
bin=$1
jsoncheck=${2:-$(dirname "$bin")/tests/jsoncheck}
data=tests/data/extreme
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
n=0; fail=0; checked=0
steps=20000000 # a short run: the step guard refuses (exit 2) what would take longer
values='0 -1 1e-310 1e308 9223372036854775807 9223372036854775808 4294967296 .nan .inf'
crashy='runtime error|AddressSanitizer|LeakSanitizer|assertion .* failed|Segmentation|Aborted'
bad() { fail=$((fail + 1)); echo "FAIL $*"; head -c 600 "$t/err"; echo; }
# exit 2 needs a message; 0 and 2 are the only statuses; no sanitizer or assertion text
judge() { # WHAT RC
    if grep -Eq "$crashy" "$t/err"; then bad "$1: crashed (exit $2)"; return 1; fi
    if [ "$2" = 2 ] && [ ! -s "$t/err" ]; then bad "$1: exit 2 without a message"; return 1; fi
    if [ "$2" != 0 ] && [ "$2" != 2 ]; then bad "$1: exit $2"; return 1; fi
    return 0
}
# one case: check BASE with the --set edits; when it passes, run it (exit 0: valid JSON)
try_case() { # BASE SET...
    base=$1; shift
    what="$base $*"
    n=$((n + 1))
    sets=; for s in "$@"; do sets="$sets --set $s"; done
    # shellcheck disable=SC2086
    timeout 60 "$bin" check "$data/$base.yaml" $sets --max-steps $steps >/dev/null 2>"$t/err"
    rc=$?
    judge "check $what" $rc || return
    case $* in *=9223372036854775807) # the key's range, for the maxima below
        hi=$(sed -n 's/.*expected an integer in \[-*[0-9]*, \([0-9]*\)\].*/\1/p' "$t/err" | head -n 1)
        [ -n "$hi" ] && echo "$base ${1%%=*}=$hi" >>"$t/max" ;;
    esac
    case $* in *=1e308*) # the ends of the key's range ("from 1MBps to 1PBps"), for below
        sed -n 's/.*from \([^ ]*\) to \([^ ,)]*\).*/\1 \2/p' "$t/err" | head -n 1 |
            while read -r lo hi; do
                printf '%s %s=%s\n%s %s=%s\n' "$base" "${1%%=*}" "$lo" "$base" "${1%%=*}" "$hi"
            done >>"$t/ends" ;;
    esac
    [ $rc = 0 ] || return
    checked=$((checked + 1))
    rm -rf "$t/o"
    # shellcheck disable=SC2086
    timeout 60 "$bin" run "$data/$base.yaml" $sets --max-steps $steps -o "$t/o" -q --trace none \
        >/dev/null 2>"$t/err"
    rc=$?
    judge "run $what" $rc || return
    [ $rc = 0 ] || return
    if ! "$jsoncheck" "$t/o/summary.json" >"$t/err" 2>&1; then
        bad "run $what: summary.json is not valid JSON"
    elif grep -Eq '"(total_time_s|time_s|peak_fraction|flops|hbm_bytes|mfu|tokens_per_s)": null' \
        "$t/o/summary.json"; then
        grep -Eo '"[a-z_]+": null' "$t/o/summary.json" | sort -u >"$t/err"
        bad "run $what: a figure is null in summary.json (NaN or infinity upstream)"
    fi
}
: >"$t/max"; : >"$t/ends"
grep -v '^#' "${KEYS:-$data/keys.txt}" | {
    while read -r base key unit; do
        [ -n "$key" ] || continue
        [ "$unit" = - ] && unit=
        for v in $values; do
            try_case "$base" "$key=$v$unit"
        done
    done
    # each key at its maximum alone, then with the keys of its op (or section) at theirs
    while read -r base set; do
        try_case "$base" "$set"
    done <"$t/max"
    # each key at the ends of its range: the values above are outside it or 0, so no run had
    # an ICI link faster than HBM (SimGrid's solver aborted, engine/sim.c sim_penalty_scale)
    # (no range read at all: the messages' wording changed, and the check would run nothing)
    [ -s "$t/ends" ] || bad "no key's range read from its message (\"from LO to HI\")"
    while read -r base set; do
        try_case "$base" "$set"
    done <"$t/ends"
    echo "$n $fail $checked" >"$t/count2"
    sed 's/^\([a-z]*\) \(workload\.[0-9]*\|[a-z]*\)\..*/\1 \2/' "$t/max" | sort -u |
        while read -r base group; do
            # shellcheck disable=SC2046
            try_case "$base" $(grep "^$base $group\." "$t/max" | cut -d' ' -f2)
            echo "$n $fail $checked" >"$t/count2"
        done
    read -r n fail checked <"$t/count2"
    echo "$n $fail $checked" >"$t/count"
}
read -r n fail checked <"$t/count"
echo "extreme: $n cases, $fail failed ($checked accepted by check and run)"
[ "$fail" = 0 ]
