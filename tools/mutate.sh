#!/bin/sh
# tools/mutate.sh -- mutation testing: applies each one-line mutant of a list
# (tools/mutants.txt: FILE :: ORIGINAL => REPLACEMENT) to a scratch copy of
# the tree, builds it and runs the test suites until one fails (the mutant is
# killed) or all pass (it survived), then restores the file. Prints a line per
# mutant, the survivors and the kill rate; exits 1 when the rate is below -r.
#
#   sh tools/mutate.sh [-t "unit bad-input e2e docs-test"] [-n FIRST-LAST]
#                      [-r MIN_PERCENT] [-k] [MUTANTS_FILE]
#
#   -t  the suites, run in that order: unit (each test binary, fastest first,
#       stopping at the first that fails), bad-input, e2e, docs-test, checks
#       (default: unit bad-input e2e docs-test; the user guide's figures
#       caught mutants nothing else did)
#   -n  only mutants FIRST to LAST (1-based, in list order) -- to split a run
#   -r  the kill rate to reach (default 95)
#   -k  keep the scratch copy (its path is printed)
#
# The copy is the working tree as it is (uncommitted edits included; build/
# and out/ left out), under /tmp; it builds into its own build/mut with
# make -j2. A mutant whose original text is not in its file exactly once is
# reported "stale" (the list needs updating) and one that does not compile
# "stillborn"; neither counts in the rate. Each suite runs under a timeout (a
# mutant that loops is killed by it). It takes minutes per surviving mutant
# (every suite runs) and well under one per killed one: run it on a quiet
# machine, or a range at a time.
set -u
suites="unit bad-input e2e docs-test"
range=
min_rate=95
keep=
while getopts t:n:r:k opt; do
    case $opt in
    t) suites=$OPTARG ;;
    n) range=$OPTARG ;;
    r) min_rate=$OPTARG ;;
    k) keep=1 ;;
    *) sed -n '2,27s/^# \{0,1\}//p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
repo=$(cd "$(dirname "$0")/.." && pwd)
list=${1:-$repo/tools/mutants.txt}
[ -r "$list" ] || { echo "mutate: cannot read $list" >&2; exit 2; }
first=1 last=1000000
if [ -n "$range" ]; then
    first=${range%-*} last=${range#*-}
fi

scratch=$(mktemp -d /tmp/tpusim-mutate-XXXXXX) || exit 2
cleanup() { [ -n "$keep" ] && echo "scratch copy kept: $scratch" || rm -rf "$scratch"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
(cd "$repo" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$scratch") \
    || { echo "mutate: cannot copy the tree" >&2; exit 2; }
B=build/mut
mk() { make -C "$scratch" --no-print-directory -j2 B=$B "$@" </dev/null >"$scratch/make.log" 2>&1; }
build() { mk all $B/tests/jsoncheck $(cd "$scratch" && ls tests/unit/test_*.c | sed "s|tests/unit/\(.*\)\.c|$B/tests/\1|"); }

# One suite; prints what failed, returns 1 if the mutant is killed.
run_suite() {
    case $1 in
    unit)
        for t in $(cat "$scratch/unit.order"); do
            (cd "$scratch" && timeout 300 "$B/tests/$t" </dev/null >/dev/null 2>&1) \
                || { echo "$t"; return 1; }
        done ;;
    bad-input) (cd "$scratch" && timeout 900 sh tests/run_bad.sh $B/tpusim </dev/null >/dev/null 2>&1) \
                   || { echo bad-input; return 1; } ;;
    e2e) (cd "$scratch" && timeout 1200 sh tests/run_e2e.sh $B/tpusim </dev/null >/dev/null 2>&1 \
              && timeout 600 sh tests/run_trace.sh $B/tpusim </dev/null >/dev/null 2>&1) \
             || { echo e2e; return 1; } ;;
    docs-test) (cd "$scratch" && timeout 900 sh tests/run_docs.sh $B/tpusim </dev/null >/dev/null 2>&1) \
                   || { echo docs-test; return 1; } ;;
    checks) mk checks || { echo checks; return 1; } ;;
    *) echo "unknown suite $1"; return 1 ;;
    esac
    return 0
}

echo "mutate: building and testing the unmutated tree in $scratch"
build || { echo "mutate: the tree does not build"; tail -20 "$scratch/make.log"; exit 2; }
# the unit binaries, fastest first (timed on the unmutated tree)
for t in $(cd "$scratch/$B/tests" && ls test_* | grep -v "\\."); do
    s0=$(date +%s%N)
    (cd "$scratch" && timeout 600 "$B/tests/$t" </dev/null >/dev/null 2>&1) \
        || { echo "mutate: $t fails unmutated" >&2; echo "0 FAIL"; }
    echo "$(($(date +%s%N) - s0)) $t"
done | sort -n | awk '{ print $2 }' >"$scratch/unit.order"
grep -q '^FAIL$' "$scratch/unit.order" && exit 2
for s in $suites; do
    [ "$s" = unit ] && continue
    failed=$(run_suite "$s") || { echo "mutate: $failed fails unmutated"; exit 2; }
done

n=0 killed=0 survived=0 stale=0 stillborn=0 survivors=
grep -v '^[[:space:]]*#' "$list" | grep -v '^[[:space:]]*$' >"$scratch/mutants"
while IFS= read -r line <&3; do
    n=$((n + 1))
    [ $n -lt "$first" ] || [ $n -gt "$last" ] && continue
    file=${line%% :: *}
    rest=${line#* :: }
    tag="$file: ${rest%% => *}"
    cp "$scratch/$file" "$scratch/mutant.orig" 2>/dev/null || { echo "$n stale (no $file)"; stale=$((stale + 1)); continue; }
    if ! MUT="$rest" python3 - "$scratch/$file" <<'EOF'
import os, sys
path = sys.argv[1]
orig, repl = os.environ["MUT"].split(" => ", 1)
text = open(path).read()
if text.count(orig) != 1:
    sys.exit(1)
open(path, "w").write(text.replace(orig, repl))
EOF
    then
        printf '%s\n' "$n STALE      $tag (not exactly once in the file)"
        stale=$((stale + 1)); continue
    fi
    if ! build; then
        printf '%s\n' "$n stillborn  $tag"
        stillborn=$((stillborn + 1))
    else
        by=
        for s in $suites; do
            by=$(run_suite "$s") || break
            by=
        done
        if [ -n "$by" ]; then
            printf '%s\n' "$n killed     $tag  (by $by)"
            killed=$((killed + 1))
        else
            printf '%s\n' "$n SURVIVED   $tag"
            survived=$((survived + 1))
            survivors="$survivors
  $n $line"
        fi
    fi
    cp "$scratch/mutant.orig" "$scratch/$file"
done 3<"$scratch/mutants"

tried=$((killed + survived))
rate=$(awk -v k=$killed -v t=$tried 'BEGIN { printf "%.1f", t ? 100 * k / t : 100 }')
echo "mutate: $killed of $tried mutants killed ($rate %); $survived survived, $stillborn stillborn, $stale stale"
[ -n "$survivors" ] && printf 'survivors:%s\n' "$survivors"
awk -v r="$rate" -v m="$min_rate" 'BEGIN { exit !(r + 0 >= m + 0) }'
