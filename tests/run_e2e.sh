#!/bin/sh
# tests/run_e2e.sh TPUSIM -- end-to-end runs of the CLI: the default scenario
# writes a trace and a summary that are valid JSON with the contract's keys;
# the same scenario gives byte-identical outputs twice; check/platform/chips work.
bin=$1
dir=$(dirname "$bin")
fail=0; n=0
t=$(mktemp -d)
ok() { n=$((n + 1)); }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL: $*"; }

cp "$dir/tests/jsoncheck" "$t/jsoncheck" || exit 1

$VALGRIND "$bin" run -o "$t/a" $SIMFLAGS >"$t/stdout" 2>"$t/stderr" && ok || bad "default run exit $?"
grep -q '^attention-fwd-bwd .*flash_attention' "$t/stdout" && grep -q '^gather-weights .*ici' "$t/stdout" && ok || bad "table lacks the op rows"
"$t/jsoncheck" "$t/a/trace.json" "$t/a/summary.json" && ok || bad "outputs are not JSON"
for k in '"scenario"' '"chip"' '"topology"' '"total_time_s"' '"ops"' '"name"' '"kind"' \
         '"start_s"' '"end_s"' '"time_s"' '"flops"' '"hbm_bytes"' '"ici_bytes"' \
         '"vmem_peak_bytes"' '"grid_steps"' '"bound"'; do
    grep -q "$k" "$t/a/summary.json" || { bad "summary.json lacks $k"; continue; }
    ok
done
grep -q '"traceEvents"' "$t/a/trace.json" && grep -q '"ph":"X"' "$t/a/trace.json" && ok \
    || bad "trace has no spans"
grep -q '<cluster id="pod"' "$t/a/platform.xml" && ok || bad "platform.xml missing"
$VALGRIND "$bin" run -o "$t/b" -q $SIMFLAGS 2>/dev/null && ok || bad "second run"
cmp -s "$t/a/summary.json" "$t/b/summary.json" && cmp -s "$t/a/trace.json" "$t/b/trace.json" \
    && ok || bad "two runs differ"
"$bin" check configs/scenarios/default.yaml >/dev/null && ok || bad "check default"
"$bin" platform configs/scenarios/default.yaml | grep -q 'topology="TORUS"' && ok || bad "platform"
"$bin" chips | grep -q '^v5e ' && ok || bad "chips table"
"$bin" --help | grep -q 'usage: tpusim' && ok || bad "--help"
"$bin" --version | grep -q '^tpusim ' && ok || bad "--version"
"$bin" frobnicate >/dev/null 2>&1; [ $? = 2 ] && ok || bad "unknown command must exit 2"
# the worked example of pallas-semantics.md 3.3 (upstream tpu_splash_attention_mask_test.py)
want='{"block_mask":[[[1,1,0],[1,1,1],[1,1,1],[1,1,0]]],"data_next":[[[0,1,0],[0,1,2],[1,2,3],[2,3,0]]],"mask_next":[[[0,1,0],[2,0,1],[2,0,1],[2,0,0]]],"num_partial_blocks":3,"grid_width":3,"skipped_fraction":0.375}'
got=$("$bin" maskinfo --mask local:8,8 --shape 64,64 --block 16,16 --dense --json)
[ "$got" = "$want" ] && ok || bad "maskinfo fwd: $got"
want='{"block_mask":[[[0,1,1,0],[1,1,1,1],[1,1,1,1]]],"data_next":[[[0,0,1,0],[0,1,2,2],[1,2,3,3]]],"mask_next":[[[0,1,1,0],[0,0,0,1],[2,2,2,0]]],"num_partial_blocks":3,"grid_width":3,"skipped_fraction":0.375}'
got=$("$bin" maskinfo --mask local:8,8 --shape 64,64 --block 16,16 --dense --dkv --json)
[ "$got" = "$want" ] && ok || bad "maskinfo dkv: $got"
"$bin" maskinfo --mask causal --shape 8192,8192 --block 512,512 | grep -q '(136 of 256 blocks computed)' \
    && ok || bad "maskinfo causal 8192/512"
"$bin" maskinfo --mask causal --shape 100,64 --block 16,16 >/dev/null 2>"$t/err"; [ $? = 2 ] \
    && grep -q 'should divide' "$t/err" && ok || bad "maskinfo bad block must exit 2"
# block: auto: the run's table names the chosen blocks, summary.json reports them (valid JSON),
# and check searches too
printf 'chip: v5e\nworkload:\n  - {op: matmul, name: mm, m: 2048, k: 2048, n: 2048, block: auto}\n' \
    > "$t/auto.yaml"
$VALGRIND "$bin" run "$t/auto.yaml" -o "$t/auto" $SIMFLAGS >"$t/auto.out" 2>&1 \
    && grep -q '^auto mm: bm=[0-9]* bk=[0-9]* bn=[0-9]* (fastest of [0-9]* timed' "$t/auto.out" \
    && "$t/jsoncheck" "$t/auto/summary.json" && grep -q '"auto_blocks": {"bm": ' "$t/auto/summary.json" \
    && grep -q '"auto_bound": "mxu"' "$t/auto/summary.json" && ok || bad "block: auto run"
"$bin" check "$t/auto.yaml" | grep -q '^block: auto: 1 ops, 1 searches' && ok || bad "block: auto check"
# SIGINT stops a run cleanly: exit 130, no trace or summary, no temporary file
"$bin" run configs/bench/matmul_8192_b128.yaml -o "$t/int" -q --fidelity exact 2>"$t/int.err" &
pid=$!
w=0; while [ ! -e "$t/int/platform.xml" ] && [ $w -lt 600 ]; do sleep 0.1; w=$((w + 1)); done
sleep 0.5
kill -INT $pid
wait $pid
echo $? > "$t/int.rc"
[ "$(cat "$t/int.rc")" = 130 ] && [ ! -e "$t/int/summary.json" ] && [ ! -e "$t/int/trace.json" ] \
    && ! ls "$t/int" | grep -q tmp && grep -q interrupted "$t/int.err" && ok \
    || bad "SIGINT: exit $(cat "$t/int.rc"), $(ls "$t/int" 2>&1)"
# a sweep example: tables, report, plots; infeasible points are rows
"$bin" sweep configs/sweeps/ragged_decode_v6e_blocks.yaml -o "$t/sw" -j 2 >/dev/null 2>&1 \
    && "$t/jsoncheck" "$t/sw/sweep.json" && grep -q ',infeasible,' "$t/sw/sweep.csv" \
    && grep -q '^- \*\*Best\*\*' "$t/sw/report.md" && [ -s "$t/sw/heatmap.svg" ] && ok \
    || bad "sweep example"
for f in configs/scenarios/*.yaml configs/models/*.yaml; do
    "$bin" check "$f" >/dev/null && ok || bad "check $f"
done
# the older chips (v2, v3) run every shipped scenario that fits them: it runs, or the resource
# guard refuses it before it starts (a 16x16 slice without wraparound on v3 is 256 chips); the
# model steps check, or are refused for a 3-D slice (4 ICI ports: a 2-D torus)
for c in v2 v3; do
    for f in configs/scenarios/*.yaml; do
        "$bin" run "$f" --set chip=$c -o "$t/old" -q --max-steps 20000000 >/dev/null 2>"$t/old.err" \
            || grep -q 'above the limit of 20000000' "$t/old.err" && ok || bad "$c: $f: $(tail -n 1 "$t/old.err")"
    done
    for f in configs/models/*.yaml; do
        "$bin" check "$f" --set chip=$c >/dev/null 2>"$t/old.err" \
            || grep -q "topology.shape: expected at most 2 axes longer than 1 ($c has 4 ICI ports" "$t/old.err" \
            && ok || bad "$c: check $f: $(tail -n 1 "$t/old.err")"
    done
done
# check takes sweep specs too: every point checked, nothing run
for f in configs/sweeps/*.yaml; do
    "$bin" check "$f" | tail -n 1 | grep -q "^$f: ok (sweep " && ok || bad "check $f"
done
# ... with block: auto searched as the points' runs search it
printf 'base:\n  chip: v5e\n  workload:\n    - {op: matmul, m: 512, k: 512, n: 512, block: auto}\nsweep:\n  workload.0.m: [256, 512]\n' >"$t/auto_sweep.yaml"
"$bin" check "$t/auto_sweep.yaml" | grep -q ": ok (sweep auto_sweep, 2 points: 2 feasible" && ok \
    || bad "check of a sweep with block: auto"
rm -rf "$t"
echo "e2e: $((n - fail)) passed, $fail failed"
[ "$fail" = 0 ]
