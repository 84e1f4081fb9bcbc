#!/bin/sh
# tools/fuzz.sh SECONDS -- builds the libFuzzer harnesses tests/fuzz/fuzz_cfg.c
# (scenarios) and tests/fuzz/fuzz_sweep.c (sweep specs) with clang (ASan +
# UBSan) and runs a bounded campaign of SECONDS each, seeded with every YAML
# file in configs/ and tests/data/. New inputs go to build/fuzz/corpus-*; a
# crash leaves crash-* files in build/fuzz: turn each into a tests/data/bad case.
set -e
secs=${1:-60}
B=build/fuzz
mkdir -p $B/corpus $B/seed
find configs tests/data -name '*.yaml' -exec cp {} $B/seed/ \;
sh tools/embed.sh $(ls configs/chips/*.yaml) configs/scenarios/default.yaml > $B/embedded.c
src=$(ls sim/*.c topology/*.c kernels/*.c models/*.c traces/*.c | grep -v sim/main.c)
for h in cfg sweep; do
    clang -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 -I. \
        $(pkg-config --cflags simgrid yaml-0.1) \
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
        tests/fuzz/fuzz_$h.c $src $B/embedded.c -o $B/fuzz_$h \
        $(pkg-config --libs simgrid yaml-0.1) -lm
done
cd $B
for h in cfg sweep; do
    mkdir -p corpus-$h
    echo "== fuzz_$h"
    ./fuzz_$h -max_total_time="$secs" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 corpus-$h seed 2>&1 | grep -E '^(stat::|Done|==|SUMMARY)' || true
    ls crash-* leak-* timeout-* 2>/dev/null && exit 1
done
exit 0
