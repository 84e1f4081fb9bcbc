#!/bin/sh
# tools/fuzz.sh SECONDS [TARGET...] -- builds the libFuzzer harnesses
# tests/fuzz/fuzz_cfg.c (scenarios), tests/fuzz/fuzz_sweep.c (sweep specs) and
# tests/fuzz/fuzz_set.c (--set overrides and sweep keys) with clang (ASan +
# UBSan) and runs a bounded campaign of SECONDS each (all three targets unless
# some are named: cfg, sweep, set), seeded with every YAML file in configs/ and
# tests/data/ (fuzz_set: with the --set lines of tests/data/bad/ and a few
# edits). New inputs go to build/fuzz/corpus-*; a crash leaves crash-* files in
# build/fuzz: turn each into a tests/data/bad case. FUZZ_RUNS=N runs N inputs
# per target instead of a time (CI: `make fuzz FUZZ_SECONDS=60`). -timeout=30: an alias
# bomb stopped at the 1,000,000-node limit takes 2.7 s in a release build and 15 s
# under ASan+UBSan on a loaded machine (bounded, not a hang).
set -e
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-cfg sweep set}
B=build/fuzz
mkdir -p $B/corpus $B/seed $B/seed-set
find configs tests/data -name '*.yaml' -exec cp {} $B/seed/ \;
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
    configs/scenarios/default.yaml > $B/embedded.c
# the library once (objects rebuilt when their source is newer), then one link per harness
flags="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 -I. \
    $(pkg-config --cflags simgrid yaml-0.1) -fsanitize=fuzzer-no-link,address,undefined \
    -fno-sanitize-recover=all"
mkdir -p $B/obj
objs=
for c in $(ls base/*.c sim/*.c topology/*.c kernels/*.c models/*.c traces/*.c | grep -v sim/main.c) \
         $B/embedded.c; do
    o=$B/obj/$(echo "$c" | tr / _ | sed 's/\.c$/.o/')
    if [ ! -f "$o" ] || [ "$c" -nt "$o" ] || [ -n "$(find base sim topology kernels models traces \
            -name '*.h' -newer "$o" | head -n 1)" ]; then
        clang $flags -c "$c" -o "$o"
    fi
    objs="$objs $o"
done
rm -f $B/libfuzz.a
ar rcs $B/libfuzz.a $objs
for h in $targets; do
    [ -f tests/fuzz/fuzz_$h.c ] || { echo "no target $h (cfg, sweep, set)"; exit 2; }
    clang $flags -fsanitize=fuzzer tests/fuzz/fuzz_$h.c $B/libfuzz.a -o $B/fuzz_$h \
        $(pkg-config --libs simgrid yaml-0.1) -lm
done
cd $B
limit="-max_total_time=$secs"
[ -n "$FUZZ_RUNS" ] && limit="-runs=$FUZZ_RUNS"
for h in $targets; do
    mkdir -p corpus-$h
    seed=seed; [ $h = set ] && seed=seed-set
    echo "== fuzz_$h"
    ./fuzz_$h $limit -max_len=4096 -rss_limit_mb=2048 -timeout=30 \
        -print_final_stats=1 corpus-$h $seed 2>&1 | grep -E '^(stat::|Done|==|SUMMARY)' || true
    ls crash-* leak-* timeout-* oom-* 2>/dev/null && exit 1
done
exit 0
