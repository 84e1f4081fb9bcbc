#!/bin/sh
# tests/run_docs.sh TPUSIM -- runs every ```sh run block of docs/user-guide.md
# as written, in order, in one scratch directory holding the repository's
# configs/ (the guide's out/ directories go there), with TPUSIM's directory
# first on the PATH; a block must exit 0. Then checks that the figures the
# guide quotes are what the runs print.
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
repo=$(pwd)
guide=docs/user-guide.md
t=$(mktemp -d)
mkdir -p "$t/bin" && ln -s "$bin" "$t/bin/tpusim" && ln -s "$repo/configs" "$t/configs"
fail=0; n=0
ok() { n=$((n + 1)); }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL: $*"; }
# split the blocks into t/block.N.sh
awk -v dir="$t" '
    /^```sh run[ \t]*$/ { inb = 1; k++; f = dir "/block." k ".sh"; next }
    /^```/ && inb { inb = 0; close(f); next }
    inb { print > f }' "$guide"
blocks=$(ls "$t"/block.*.sh 2>/dev/null | wc -l)
[ "$blocks" -ge 8 ] && ok || bad "$guide: $blocks runnable blocks, want 8 or more"
i=1
while [ -f "$t/block.$i.sh" ]; do
    (cd "$t" && PATH="$t/bin:$PATH" sh -e "block.$i.sh") > "$t/out.$i" 2>&1 \
        && ok || bad "block $i exits $?: $(head -c 600 "$t/block.$i.sh"): $(tail -5 "$t/out.$i")"
    i=$((i + 1))
done
# the figures the guide quotes come from these runs
quote() { grep -qF -- "$1" "$guide" && grep -qF -- "$1" "$t"/out.* && ok \
    || bad "the guide quotes '$1', the runs do not print it"; }
quote "plan llama2_70b_v5p_512: 64 candidates on v5p: 8 illegal, 16 do not fit in HBM (pruned), 40 to simulate"
quote "flash-train: hbm 47% of its time, then mxu 46%; fwd 1.533 ms, di 658.625 us, dkv 4.574 ms, dq 3.435 ms"
quote "gather: ici 99% of its time, then hbm 21%; algbw 89.9 GB/s, busbw 84.2 GB/s over 16 devices, 93.6% of the links' 90.0 GB/s"
quote "allreduce: ici 85% of its time, then hbm 31%; algbw 38.8 GB/s, busbw 72.7 GB/s over 16 devices, 80.7% of the links' 90.0 GB/s"
quote "model decode step: 0.001 s, 52523 tokens/s (6565.3 per chip), MFU 2.0% (0.0 TFLOP per device)"
quote "layer.attn: hbm 96% of its time, then mxu 31%; HBM moved 9135 MB for 2152 MB of data (76% tile padding and discarded fetches)"
quote "warning: trace.json is incomplete: 49393 events dropped past --trace-max-events 500; the run has 49893 events at this level; for all of them: --trace-max-events 100000, or 108 runs with --trace-window 0:102.4us, --trace-window 102.4us:201.728us, --trace-window 201.728us:303.104us, ... (all 108 in summary.json's trace.windows), or --trace units"
quote "faults: total 4.150 ms without them, +1.197 ms with (x1.288)"
quote "faults: total 4.150 ms without them, +983.989 us with (x1.237)"
quote "64 points: 48 feasible, 16 infeasible; default point 17"
quote "10.030 us"
quote "448.561 us"
quote "64.258 us"
quote "45.821 us"
quote "63.125 us"
quote "65.809 us"
quote "best: point 44, 10.9 ms, bound mxu; 2.34x the speed of the default (point 17)"
quote "cost: \$0.04817 per step at \$0.54 per chip-hour (3y) x 256 chips, \$0.01148 per million tokens"
quote "time to train: 51.93 days (3576279 steps of 1.254 s; 299 evaluations of 2 forward steps, 662.928 ms each; an evaluation block (11921 steps and its evaluation) 4.15 h; 3576 checkpoints of 0.09015 s; compile 600 s), \$172307, 62.56 MWh"
quote "pipeline: 4 stages, 8 microbatches (gpipe, 1 repeats): 11 iterations a pass, bubble 27.3% of the step"
quote "bubble 15.8% of the step"
quote "model train step: 0.249 s"
quote "activations 0.12"
quote "activations 0.06"
quote "0.63% of routed tokens dropped"
quote "bytes: 10485760"
quote 'total 13.681 ms ± 875.563 us (6.4%, 68% band; docs/reference.md, "Error bars")'
quote 'total 15.431 ms ± 1.079 ms (7.0%, 68% band; docs/reference.md, "Error bars")'
quote 'total 1.254 s ± 117.035 ms (9.3%, 68% band, the model-step floor'
quote "collective_exposed 35.382 ms"
quote "collective_exposed 81.864 ms (6.4%)"
quote '"p99": 0.0172022839'
quote '"p99": 0.0110341471'
quote "1.170 ms"
quote "p99 96.55"
quote "71.51"
quote "15 points: 15 feasible, 0 infeasible"
quote "model train step: 1.276 s"
quote "program: HLO module jit_mlp: 15 instructions (9 fusions, 3 collectives, 0 while loops)"
quote "lowered to 7 fusion, 2 all_gather, 2 einsum, 1 all_reduce"
quote '"name": "all-gather", "op_name": "jit(mlp)/dot_general"'
quote "413.4 output tokens/s"
quote "826.8 output tokens/s"
quote "TPOT mean 9.36 ms"
rm -rf "$t"
echo "docs: $((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
