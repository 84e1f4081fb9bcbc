#!/bin/sh
# tools/fuzz.sh SECONDS [TARGET...] -- builds the libFuzzer harnesses
# tests/fuzz/fuzz_cfg.c (scenarios), tests/fuzz/fuzz_sweep.c (sweep specs),
# tests/fuzz/fuzz_set.c (--set overrides and sweep keys), tests/fuzz/fuzz_hlo.c
# (HLO text), tests/fuzz/fuzz_plan.c (plan specs), tests/fuzz/fuzz_reqs.c (serving
# request traces, CSV), tests/fuzz/fuzz_xprof.c (measured Chrome traces for compare
# --profile, seeded with tests/data/profile/) and tests/fuzz/fuzz_serve.c (serving
# scenarios whose engine loop then runs with a price by hand) with clang and runs a bounded
# campaign of SECONDS each (all eight targets unless some are named: cfg, sweep, set, hlo,
# plan, reqs, xprof, serve), seeded with every YAML and HLO file in configs/, tests/data/ and
# tests/fuzz/seeds/ (the surfaces no shipped file combines: serve: with cost:, train: and
# cost: keys together, affine pallas_call index maps, circular pipelines, the MoE dispatch)
# (fuzz_set: with the --set lines of tests/data/bad/ and a few edits). New
# inputs go to build/fuzz/corpus-*; a crash leaves crash-* files in build/fuzz:
# turn each into a tests/data/bad case. Each target ends with libFuzzer's
# stat:: lines (stat::number_of_executed_units is the count of executions).
#   FUZZ_RUNS=N    runs N inputs per target instead of a time (CI: `make fuzz FUZZ_SECONDS=60`).
#   FUZZ_SAN=asan  (the default, and CI's) AddressSanitizer + UBSan + libFuzzer's leak check.
#   FUZZ_SAN=ub    UBSan only (no ASan, no leak check): several times more executions per
#                  second, for long campaigns; crashes, aborts and UB still stop it. Its
#                  objects and binaries sit apart (build/fuzz/obj-ub, fuzz_*-ub); the corpus is shared.
#   FUZZ_JOBS=N    runs N fuzzing processes per target (libFuzzer -fork=N; default 1); the
#                  count of executions is then the N of its last "fork: #N:" line.
# -timeout=30: an input that expands to just under the 1,000,000-node alias
# limit is legitimately a few seconds under ASan on a loaded machine (bounded, not a hang).
set -e
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-cfg sweep set hlo plan reqs xprof serve}
san=${FUZZ_SAN:-asan}
case $san in
asan) sanflags=address,undefined; sfx= ;;
ub) sanflags=undefined; sfx=-ub ;;
*) echo "FUZZ_SAN is asan or ub, got $san"; exit 2 ;;
esac
B=build/fuzz
mkdir -p $B/corpus $B/seed $B/seed-set $B/seed-reqs $B/seed-xprof
cp tests/fuzz/seeds/reqs/*.csv $B/seed-reqs/
cp tests/data/profile/*.json $B/seed-xprof/
find configs tests/data tests/fuzz/seeds \( -name '*.yaml' -o -name '*.hlo.txt' \) -exec cp {} $B/seed/ \;
# fuzz_set seeds: an even first byte is a list of --set lines, an odd one a sweep key and values
i=0
sed -n 's/^# args: .*--set \([^ ]*\).*/\1/p' tests/data/bad/*.yaml | while IFS= read -r s; do
    i=$((i + 1)); printf '0%s\n' "$s" >$B/seed-set/bad$i
done
printf '0workload.0.m=1024\nchip.hbm.bandwidth=1TBps\n' >$B/seed-set/s1
printf '0workload.3.causal=false\nworkload.1.after.0=ag\nname=x\n' >$B/seed-set/s2
printf '0topology.shape.1=4\nworkload.2.axes.0=1\n' >$B/seed-set/s3
printf '1workload.0.m\n256\n1024\n' >$B/seed-set/s4
printf '1workload.1.bytes\n1MiB\n2MiB\n' >$B/seed-set/s5
printf '1chip.tensorcore.clock\n1GHz\n' >$B/seed-set/s6
sh tools/embed.sh $(ls configs/chips/*.yaml | sort) $(ls configs/models/presets/*.yaml | sort) \
    configs/scenarios/default.yaml > $B/embedded.c.new
cmp -s $B/embedded.c.new $B/embedded.c 2>/dev/null || mv $B/embedded.c.new $B/embedded.c
rm -f $B/embedded.c.new
# the library once (objects rebuilt when their source is newer), then one link per harness
flags="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 -I. \
    $(pkg-config --cflags simgrid yaml-0.1) -fsanitize=fuzzer-no-link,$sanflags \
    -fno-sanitize-recover=all"
O=$B/obj$sfx
mkdir -p $O
objs=
DIRS="base topology models kernels outputs workload config engine study serving cli" # the Makefile's
for c in $(for d in $DIRS; do ls $d/*.c; done | grep -v cli/main.c) \
         $B/embedded.c; do
    o=$O/$(echo "$c" | tr / _ | sed 's/\.c$/.o/')
    if [ ! -f "$o" ] || [ "$c" -nt "$o" ] || [ -n "$(find $DIRS \
            -name '*.h' -newer "$o" | head -n 1)" ]; then
        clang $flags -c "$c" -o "$o"
    fi
    objs="$objs $o"
done
rm -f $B/libfuzz$sfx.a
ar rcs $B/libfuzz$sfx.a $objs
for h in $targets; do
    [ -f tests/fuzz/fuzz_$h.c ] || { echo "no target $h (cfg, sweep, set, hlo, plan, reqs, xprof, serve)"; exit 2; }
    clang $flags -fsanitize=fuzzer tests/fuzz/fuzz_$h.c $B/libfuzz$sfx.a -o $B/fuzz_$h$sfx \
        $(pkg-config --libs simgrid yaml-0.1) -lm
done
cd $B
limit="-max_total_time=$secs"
[ -n "$FUZZ_RUNS" ] && limit="-runs=$FUZZ_RUNS"
jobs=
[ "${FUZZ_JOBS:-1}" -gt 1 ] && jobs="-fork=$FUZZ_JOBS"
for h in $targets; do
    mkdir -p corpus-$h
    seed=seed; [ $h = set ] && seed=seed-set; [ $h = reqs ] && seed=seed-reqs; [ $h = xprof ] && seed=seed-xprof
    echo "== fuzz_$h$sfx"
    ./fuzz_$h$sfx $limit $jobs -max_len=4096 -rss_limit_mb=2048 -timeout=30 \
        -print_final_stats=1 corpus-$h $seed 2>&1 |
        awk '/^(stat::|Done|==|SUMMARY)/ { print } /^#[0-9]+:/ { last = $0 }
             END { if (last) print "fork: " last }' # -fork prints no stat:: lines: its last #N
    # (ls of the four patterns fails as soon as one matches nothing, so a crash
    # file alone never stopped the script: each pattern is tested on its own)
    for f in crash-* leak-* timeout-* oom-*; do
        [ -e "$f" ] && { echo "FAIL: fuzz_$h left $f"; exit 1; }
    done
done
exit 0
