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
# no op beats its roofline: every peak fraction is at most 1 (an HBM-bound op's bytes were once
# taken over all simulated chips, not per chip: the copy read 3.97)
grep -o '"peak_fraction": [0-9.e+-]*' "$t/a/summary.json" | awk '{ n++; if ($2 > 1) bad = 1 }
    END { exit !(n >= 4 && !bad) }' && ok || bad "an op above its peak: $(grep -o '"peak_fraction": [0-9.]*' "$t/a/summary.json" | tr '\n' ' ')"
grep -q '"traceEvents"' "$t/a/trace.json" && grep -q '"ph":"X"' "$t/a/trace.json" && ok \
    || bad "trace has no spans"
# the default scenario's fold (1x2, engine/spmd.h) keeps its transfers' directions: one Full zone
grep -q '<zone id="pod" routing="Full">' "$t/a/platform.xml" && ok || bad "platform.xml missing"
# report.html: self-contained (no script, nothing fetched), with the command, the ops and the path
grep -q '<table id="ops">' "$t/a/report.html" && grep -q '<svg id="timeline"' "$t/a/report.html" \
    && grep -q '<ol id="critical-path">' "$t/a/report.html" \
    && grep -q "id=\"command\">tpusim run -o $t/a" "$t/a/report.html" \
    && ! grep -qi '<script\|<link \|src="http' "$t/a/report.html" && ok || bad "report.html"
# issue 32.13: the console keeps its lines in report.html (it was one run-on line): the
# <pre id="console"> block holds the console table, line for line (stdout less the trace line)
pre_lines() { awk -v id="$2" 'index($0, "<pre id=\"" id "\">") { on = 1 } on { n++ } on && /<\/pre>/ { exit } END { print n + 0 }' "$1"; }
[ "$(pre_lines "$t/a/report.html" console)" = "$(grep -vc '^wrote ' "$t/stdout")" ] && ok \
    || bad "report.html console: $(pre_lines "$t/a/report.html" console) lines, stdout $(grep -vc '^wrote ' "$t/stdout")"
$VALGRIND "$bin" run -o "$t/b" -q $SIMFLAGS 2>/dev/null && ok || bad "second run"
cmp -s "$t/a/summary.json" "$t/b/summary.json" && cmp -s "$t/a/trace.json" "$t/b/trace.json" \
    && ok || bad "two runs differ"
"$bin" check configs/scenarios/default.yaml >/dev/null && ok || bad "check default"
"$bin" platform configs/scenarios/default.yaml | grep -q 'hosts chipN.pM send the other way round' \
    && "$bin" platform configs/scenarios/default.yaml --set options.all_chips=true \
    | grep -q 'topology="TORUS"' && ok || bad "platform"
"$bin" chips | grep -q '^v5e ' && ok || bad "chips table"
"$bin" --help | grep -q 'usage: tpusim' && ok || bad "--help"
"$bin" --version | grep -q '^tpusim ' && ok || bad "--version"
"$bin" frobnicate >/dev/null 2>&1; [ $? = 2 ] && ok || bad "unknown command must exit 2"
# issue 32.20's class: output lost to a full disk is a failure, with the system's reason
if [ -w /dev/full ]; then
    "$bin" chips >/dev/full 2>"$t/full.err"; rc=$?
    [ $rc = 1 ] && grep -q 'cannot write the standard output: No space left on device' "$t/full.err" \
        && ok || bad "chips >/dev/full: exit $rc"
fi
# the worked example of docs/pallas-semantics.md section 4 (upstream tpu_splash_attention_mask_test.py)
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
# the blocks a search chose, given back from summary.json as the op's block_sizes (a block
# the kernel leaves unset is null there, as the YAML takes it), run to the same time
sp='{op: splash_attention, name: sp, q_heads: 2, q_seq_len: 1024, head_dim: 128, mode: fwd, mask: {type: causal}, block_sizes:'
printf 'chip: v5e\nworkload:\n  - %s auto}\n' "$sp" > "$t/spauto.yaml"
"$bin" run "$t/spauto.yaml" -o "$t/spauto" -q $SIMFLAGS \
    && blocks=$(sed -n 's/.*"auto_blocks": \({[^}]*}\).*/\1/p' "$t/spauto/summary.json") \
    && case $blocks in *null*) true ;; *) false ;; esac \
    && printf 'chip: v5e\nworkload:\n  - %s %s}\n' "$sp" "$blocks" > "$t/spback.yaml" \
    && "$bin" run "$t/spback.yaml" -o "$t/spback" -q $SIMFLAGS \
    && [ "$(grep -o '"total_time_s": [^,]*' "$t/spauto/summary.json")" = \
         "$(grep -o '"total_time_s": [^,]*' "$t/spback/summary.json")" ] \
    && ok || bad "block: auto's summary blocks given back run to the same time"
# SIGINT stops a run cleanly: exit 130, no trace or summary, no temporary file
"$bin" run configs/bench/matmul_8192_b128.yaml -o "$t/int" -q --fidelity exact 2>"$t/int.err" &
pid=$!
staged() { ls "$1"/.tpusim-run.*/platform.xml >/dev/null 2>&1; }
w=0; while ! staged "$t/int" && [ $w -lt 600 ]; do sleep 0.1; w=$((w + 1)); done
sleep 0.5
kill -INT $pid
wait $pid
echo $? > "$t/int.rc"
[ "$(cat "$t/int.rc")" = 130 ] && [ ! -e "$t/int/summary.json" ] && [ ! -e "$t/int/trace.json" ] \
    && { [ ! -e "$t/int" ] || [ -z "$(ls -A "$t/int")" ]; } && grep -q interrupted "$t/int.err" \
    && ok || bad "SIGINT: exit $(cat "$t/int.rc"), $(ls "$t/int" 2>&1)"
# Issue 18.3: one run at a time in a directory. A directory whose lock is held (here by this
# shell, as another run would hold it) is refused, exit 1, naming the holder.
mkdir -p "$t/busy"
small="$t/small.yaml"
printf 'name: small-a\nchip: v5e\nworkload:\n  - {op: hbm_copy, name: cp, bytes: 1MiB}\n' >"$small"
exec 9>"$t/busy/.tpusim-lock"
printf '%s run\n' $$ >&9
flock -n 9
"$bin" run "$small" -o "$t/busy" -q >/dev/null 2>"$t/busy.err"; rc=$?
# issue 32.23: a sweep takes the lock before it reads its spec (a bad one here): refused as busy
printf 'base: {chip: v5e, workload: [{op: hbm_copy, bytes: 1MiB}]}\nsweep: {workload.0.byts: [1, 2]}\n' >"$t/busy_spec.yaml"
"$bin" sweep "$t/busy_spec.yaml" -o "$t/busy" >/dev/null 2>"$t/busy_sweep.err"; rcs=$?
exec 9>&-
[ $rcs = 1 ] && grep -qF "tpusim sweep: $t/busy is in use by another run (pid $$)" "$t/busy_sweep.err" \
    && ok || bad "a sweep into a busy directory: exit $rcs, $(head -c 300 "$t/busy_sweep.err")"
[ $rc = 1 ] && grep -qF "$t/busy: in use by another run (pid $$): wait for it to finish" \
    "$t/busy.err" && [ ! -e "$t/busy/summary.json" ] && ok || bad "busy directory: exit $rc"
# ... and once it is free, the run goes, leaving no lock and no stage behind
"$bin" run "$small" -o "$t/busy" -q 2>/dev/null && [ "$(ls -A "$t/busy")" = \
    "$(printf 'platform.xml\nreport.html\nsummary.json\ntrace.json')" ] && ok || bad "run after the lock: $(ls -A "$t/busy")"
# issue 32.23: the lock is taken before any work. A run whose loading and block search take
# seconds (the 256-chip 8B training step: about 3 s before it simulates anything) holds the
# directory from its start: a second run into it half a second later is refused at once.
"$bin" run configs/models/llama3-8b-train-v5e-256.yaml -o "$t/early" -q >/dev/null 2>&1 & pl=$!
# (the second run starts once the lock file is there: within 0.5 s on an idle machine, but a
# loaded CI lane or a sanitizer build may take longer to start the first)
w=0; until [ -s "$t/early/.tpusim-lock" ] || [ $w -ge 300 ]; do sleep 0.1; w=$((w + 1)); done
"$bin" run "$small" -o "$t/early" -q >/dev/null 2>"$t/early.err"; rc=$?
kill -TERM $pl 2>/dev/null; wait $pl 2>/dev/null
[ $rc = 1 ] && grep -qF "$t/early: in use by another run (pid $pl)" "$t/early.err" && ok \
    || bad "a run 0.5 s after another into its directory: exit $rc, $(head -c 300 "$t/early.err")"
# two runs of different scenarios started together into one directory, three times: each
# exits 0 or is refused as busy, and the directory always holds one run's three files
printf 'name: small-b\nchip: v6e\ntopology: {shape: [2, 2]}\nworkload:\n  - {op: all_gather, name: ag, bytes: 1MiB, axes: [0]}\n' >"$t/small_b.yaml"
# (a run refused in the instant before the holder wrote its "PID WHO" line once said
# "in use by another tpusim (pid ?)": test_fsutil's holder_late case)
for i in 1 2 3; do
    "$bin" run "$small" -o "$t/race" -q >/dev/null 2>"$t/race_a.err" & pa=$!
    "$bin" run "$t/small_b.yaml" -o "$t/race" -q >/dev/null 2>"$t/race_b.err" & pb=$!
    wait $pa; ra=$?; wait $pb; rb=$?
    good=1
    for r in "$ra:$t/race_a.err" "$rb:$t/race_b.err"; do
        case $r in 0:*) ;; 1:*) grep -q 'in use by another run' "${r#1:}" || good=0 ;; *) good=0 ;; esac
    done
    sc=$(sed -n 's/.*"scenario": *"\([^"]*\)".*/\1/p' "$t/race/summary.json" | head -n 1)
    case $sc in small-a) scf=$small ;; *) scf=$t/small_b.yaml ;; esac
    [ $good = 1 ] && "$t/jsoncheck" "$t/race/summary.json" "$t/race/trace.json" \
        && grep -q "\"scenario\": *\"$sc\"" "$t/race/trace.json" \
        && "$bin" platform "$scf" | cmp -s - "$t/race/platform.xml" \
        && [ "$(ls -A "$t/race")" = "$(printf 'platform.xml\nreport.html\nsummary.json\ntrace.json')" ] && ok \
        || bad "two runs into one directory ($i): exits $ra $rb, summary of '$sc', $(ls -A "$t/race" | tr '\n' ' ')$(cat "$t/race_a.err" "$t/race_b.err")"
done
# Issue 18.13: a failed run leaves the previous run's files, all three: a deadlock fails
# after the platform was made (v5p [4]); the v5e run's platform.xml stays
cp "$t/busy/platform.xml" "$t/platform.before"
"$bin" run tests/data/bad/remote_copy_deadlock.yaml -o "$t/busy" -q >/dev/null 2>&1; rc=$?
[ $rc = 1 ] && cmp -s "$t/platform.before" "$t/busy/platform.xml" \
    && grep -q '"scenario": *"small-a"' "$t/busy/summary.json" \
    && [ "$(ls -A "$t/busy")" = "$(printf 'platform.xml\nreport.html\nsummary.json\ntrace.json')" ] && ok \
    || bad "failed run mixed the directory: exit $rc, $(ls -A "$t/busy")"
# Issue 18.15: links planted at the old fixed temporary names, at the outputs and at the lock
# are never written through; a planted lock link is refused; a killed run's stage is removed
mkdir -p "$t/plant/.tpusim-run.AbCdEf"
echo precious >"$t/victim"
echo mine >"$t/plant/notes.tmp.abcdef" # the user's file with a temporary-like name stays
for f in summary.json.tmp trace.json.tmp platform.xml.tmp summary.json trace.json; do
    ln -s "$t/victim" "$t/plant/$f"
done
"$bin" run "$small" -o "$t/plant" -q >/dev/null 2>&1 && [ "$(cat "$t/victim")" = precious ] \
    && [ ! -L "$t/plant/summary.json" ] && [ ! -e "$t/plant/.tpusim-run.AbCdEf" ] \
    && [ "$(cat "$t/plant/notes.tmp.abcdef")" = mine ] \
    && grep -q '"scenario": *"small-a"' "$t/plant/summary.json" && ok || bad "planted links"
mkdir -p "$t/plant2"
ln -s "$t/victim" "$t/plant2/.tpusim-lock"
"$bin" run "$small" -o "$t/plant2" -q >/dev/null 2>"$t/plant2.err"; rc=$?
[ $rc = 1 ] && [ "$(cat "$t/victim")" = precious ] && grep -q 'cannot create the lock file' \
    "$t/plant2.err" && ok || bad "planted lock link: exit $rc"
# Issue 18.14: what cannot exist is refused (tests/data/bad/slice_*, dtype_*), but a
# hypothetical chip allows it: a v5e 32x32 running an fp8 matmul
printf 'chip: {base: v5e, hypothetical: true}\ntopology: {shape: [32, 32]}\nworkload:\n  - {op: matmul, m: 1024, k: 1024, n: 1024, dtype: fp8}\n' >"$t/whatif.yaml"
"$bin" check "$t/whatif.yaml" | grep -q ': ok (1 ops, 1024 chips' && ok || bad "hypothetical chip"
# issue 31.7: check counts the chips of every slice (it said 256 for 2 slices of 256); 51 ops
# since the head gathers its weights and reduce-scatters its gradient (issue 27.9), 49 before;
# 52 since each layer gathers its first matmul's weights apart (wgather1 in the forward's and
# the backward's loop) and none before the loop (wg0)
"$bin" check configs/models/llama3-8b-train-v5e-2x256.yaml >"$t/ms_check.out" 2>&1
grep -q ': ok (52 ops, 512 chips in 2 slices of 256, ' "$t/ms_check.out" \
    && ok || bad "check of a multislice job: $(tail -n 1 "$t/ms_check.out")"
# Issue 18.17: two ops of one name compared as +0.0 % while one took 35x longer; names are
# unique in a scenario (tests/data/bad/duplicate_op_name.yaml) and compare, which pairs ops by
# name, refuses a summary with a name twice (an edited or older one)
printf '{"scenario": "d", "chip": "v5e", "total_time_s": 2, "ops": [{"name": "dup", "time_s": 1}, {"name": "dup", "time_s": 1}]}\n' >"$t/dup.json"
"$bin" compare "$t/dup.json" "$t/busy/summary.json" >/dev/null 2>"$t/dup.err"; rc=$?
[ $rc = 2 ] && grep -qF "$t/dup.json: op name 'dup' appears twice (ops 0 and 1); ops are paired by name" \
    "$t/dup.err" && ok || bad "compare of duplicate op names: exit $rc"
# a sweep example: tables, report, plots; infeasible points are rows
"$bin" sweep configs/sweeps/ragged_decode_v6e_blocks.yaml -o "$t/sw" -j 2 >/dev/null 2>&1 \
    && "$t/jsoncheck" "$t/sw/sweep.json" && grep -q ',infeasible,' "$t/sw/sweep.csv" \
    && grep -q '^- \*\*Best\*\*' "$t/sw/report.md" && [ -s "$t/sw/heatmap.svg" ] \
    && grep -q '<table id="points">' "$t/sw/report.html" && ok \
    || bad "sweep example"
[ "$(pre_lines "$t/sw/report.html" report-md)" = "$(wc -l <"$t/sw/report.md")" ] && ok \
    || bad "report.html's report.md: $(pre_lines "$t/sw/report.html" report-md) lines, report.md $(wc -l <"$t/sw/report.md")"
# ... its best and default points carry their error bars (summary.json's uncertainty.sigma_s)
[ "$(grep -c '^- \*\*\(Best\|Default\)\*\*: .*: \*\*[0-9.]* [mu]*s\*\* ± [0-9.]* [mu]*s' "$t/sw/report.md")" = 2 ] && ok \
    || bad "report.md: no error bars: $(grep '^- \*\*' "$t/sw/report.md")"
# multislice: the platform has a slice zone (one slice stands for both, issue 30; the fold 2x2
# of it keeps its transfers' directions: a Full zone, engine/spmd.h; every chip: a TORUS
# cluster each) and the DCN, twice the NICs of the simulated chips (the second half receive);
# a model step with data over the DCN runs, and its expansion (tpusim expand) runs to the
# same step time
"$bin" platform configs/scenarios/multislice_v5e_dp.yaml >"$t/ms.xml" && grep -q '<zone id="slice0" routing="Full">' "$t/ms.xml" \
    && ! grep -q '<zone id="slice1"' "$t/ms.xml" && grep -q '2 slices (1 simulated) .* 8 NICs (the first half send' "$t/ms.xml" \
    && "$bin" platform configs/scenarios/multislice_v5e_dp.yaml --set options.all_chips=true \
    | grep -q '<cluster id="slice1"' \
    && grep -q '<cluster id="dcn" prefix="nic"' "$t/ms.xml" && grep -q 'bb_sharing_policy="SHARED"' "$t/ms.xml" \
    && ok || bad "multislice platform"
printf 'name: tiny-multislice\nchip: v5e\ntopology: {shape: [2, 4], slices: 2}\nmesh: {data: 2, fsdp: 8}\nmodel: {layers: 2, d_model: 512, heads: 4, kv_heads: 4, head_dim: 128, ffn: 1024,\n        vocab: 1024, seq_len: 512, batch: 16, attention: flash}\n' >"$t/msm.yaml"
$VALGRIND "$bin" run "$t/msm.yaml" -o "$t/msm" -q $SIMFLAGS 2>/dev/null && "$bin" expand "$t/msm.yaml" >"$t/msx.yaml" \
    && grep -q 'data: {size: 2, dcn: 2}' "$t/msx.yaml" && grep -q 'name: grad_ar, .*groups: \[data\]' "$t/msx.yaml" \
    && $VALGRIND "$bin" run "$t/msx.yaml" -o "$t/msxo" -q $SIMFLAGS 2>/dev/null \
    && "$t/jsoncheck" "$t/msm/summary.json" && grep -q '"slices": 2' "$t/msm/summary.json" \
    && grep -q '"dcn_bytes": [1-9]' "$t/msm/summary.json" \
    && [ "$(grep '"total_time_s"' "$t/msm/summary.json")" = "$(grep '"total_time_s"' "$t/msxo/summary.json")" ] \
    && ok || bad "multislice model and its expansion"
# issue 32.15: a pipe is read once and its bytes reused: `expand -` kept its chip and topology
# (the second read of stdin was empty), and `check <(...)` (a /dev/fd path, as /dev/stdin is)
# found its chip (the spec-or-scenario sniff had read the pipe first)
cat "$t/msm.yaml" | "$bin" expand - >"$t/msx2.yaml" && sed 1d "$t/msx.yaml" >"$t/msx1" \
    && sed 1d "$t/msx2.yaml" | cmp -s "$t/msx1" - && grep -q '^chip: ' "$t/msx2.yaml" \
    && grep -q '^topology: ' "$t/msx2.yaml" && ok || bad "expand - differs from expand FILE"
cat "$t/msm.yaml" | "$bin" check /dev/stdin >"$t/chk" 2>&1 && grep -q '^/dev/stdin: ok' "$t/chk" \
    && ok || bad "check of a pipe by its path: $(head -n 2 "$t/chk")"
# issue 32.14: a file name with a byte that is not UTF-8 (\377) gives valid JSON (U+FFFD in its
# place); tests/jsoncheck refuses text that is not UTF-8
u8="$t/u8$(printf '\377').yaml"
printf 'chip: v5e\nworkload:\n  - {op: hbm_copy, bytes: 1MiB}\n' >"$u8"
$VALGRIND "$bin" run "$u8" -o "$t/u8run" -q $SIMFLAGS 2>/dev/null \
    && "$t/jsoncheck" "$t/u8run/summary.json" "$t/u8run/trace.json" \
    && grep -q '"scenario": "u8\\ufffd"' "$t/u8run/summary.json" && ok || bad "a non-UTF-8 file name"
# ... and every text output is UTF-8 (report.html and its SVG too: U+FFFD in its place)
if command -v iconv >/dev/null; then
    for f in "$t/u8run"/*; do
        iconv -f UTF-8 -t UTF-8 "$f" >/dev/null 2>&1 && ok || bad "$(basename "$f") is not UTF-8"
    done
fi
u8s="$t/u8$(printf '\376')sweep.yaml"
printf 'name: u8\nbase: {chip: v5e, workload: [{op: hbm_copy, bytes: 1MiB}]}\nsweep:\n  workload.0.bytes: [1MiB, 2MiB]\n' >"$u8s"
$VALGRIND "$bin" sweep "$u8s" -o "$t/u8sw" -j 1 >/dev/null 2>&1 \
    && "$t/jsoncheck" "$t/u8sw/sweep.json" "$t/u8sw/points/0000/point.json" && ok || bad "a non-UTF-8 spec name"
if command -v iconv >/dev/null; then
    for f in "$t/u8sw"/*.*; do
        iconv -f UTF-8 -t UTF-8 "$f" >/dev/null 2>&1 && ok || bad "sweep's $(basename "$f") is not UTF-8"
    done
fi
printf '"a\377"' >"$t/notu8.json"
"$t/jsoncheck" "$t/notu8.json" 2>/dev/null && bad "jsoncheck took text that is not UTF-8" || ok
for f in configs/scenarios/*.yaml configs/models/*.yaml; do
    "$bin" check "$f" >/dev/null && ok || bad "check $f"
done
# the older chips (v2, v3) run every shipped scenario that fits them: it runs, or the resource
# guard refuses it before it starts (a 16x16 slice without wraparound on v3 is 256 chips), or
# it needs what they lack (multislice: no dcn: section; serving: each chip is two JAX devices,
# each an engine of its own, not modelled); the model steps check, or are refused
# for a 3-D slice (a 2-D torus: slice.dims 2), for slices (no dcn: section) or by the resource
# guard (the 8B step on a v3 16x16 without wraparound: 256 chips, two separate cores each,
# every chip's first replays for real: about 2.5e8 steps of work)
for c in v2 v3; do
    for f in configs/scenarios/*.yaml; do
        "$bin" run "$f" --set chip=$c -o "$t/old" -q --max-steps 20000000 >/dev/null 2>"$t/old.err" \
            || grep -q -e 'above the limit of 20000000' -e 'topology.slices: expected 1 for a chip without a dcn' \
                       -e "chip: expected a chip that is one JAX device (a $c chip is 2" "$t/old.err" \
            && ok || bad "$c: $f: $(tail -n 1 "$t/old.err")"
    done
    for f in configs/models/*.yaml; do
        "$bin" check "$f" --set chip=$c >/dev/null 2>"$t/old.err" \
            || grep -q -e "topology.shape: expected a $c slice (at most 2 axes" \
                       -e 'topology.slices: expected 1 for a chip without a dcn' \
                       -e 'above the limit of 50000000; raise it' "$t/old.err" \
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
# Kernel memos (engine/eng_memo.c): a quiet replay sleeps the time the first quiet replay took.
# Four identical matmuls on one chip: one measured, three from the memo, 4x the time of one
# (to float noise of the absolute clock)
printf 'name: memo4\nchip: v5e\nworkload:\n  - repeat:\n      name: l\n      count: 4\n      ops:\n        - {op: matmul, name: mm, m: 2048, k: 2048, n: 2048}\n' >"$t/memo4.yaml"
sed 's/count: 4/count: 1/' "$t/memo4.yaml" >"$t/memo1.yaml"
# (v5p: a megacore pair, a memo per core, 2 measured and 6 replays; v7's two cores are two
# devices running the matmul at once: the same)
for cm in "v5e:3:1" "v5p:6:2" "v7:6:2"; do
    c=${cm%%:*} want=${cm#*:}
    "$bin" run "$t/memo4.yaml" --set chip=$c -o "$t/memo4" -q \
        && "$bin" run "$t/memo1.yaml" --set chip=$c -o "$t/memo1" -q \
        && if [ "$want" = - ]; then ! grep -q kernel_memo "$t/memo4/summary.json"; else
               grep -q "\"kernel_memo\": {\"replays\": ${want%:*}, \"measured\": ${want#*:}}" \
                   "$t/memo4/summary.json"; fi \
        && awk -v a="$(sed -n 's/.*"total_time_s": \([^,]*\),.*/\1/p' "$t/memo1/summary.json")" \
               -v b="$(sed -n 's/.*"total_time_s": \([^,]*\),.*/\1/p' "$t/memo4/summary.json")" \
               'BEGIN { d = b / (4 * a) - 1; exit !(d < 1e-9 && d > -1e-9) }' && ok \
        || bad "kernel memo ($c): four matmuls are not four times one"
done
# a fusion with a scalar input runs (fuzz_cfg: a rank-0 input's last dimension was read at
# index -1; UBSan in the asan stage)
"$bin" run tests/data/fusion_scalar_input.yaml -o "$t/fsc" -q --trace none \
    && "$t/jsoncheck" "$t/fsc/summary.json" && ok || bad "fusion with a scalar input"
# An 8k-context decode of the shipped 8B on v6e runs by default (issue 31.5): kv_len 8192 and
# the new token are 65 pages of 128 tokens, each 128 x (k and v of one KV head, padded to 8
# rows) x 128 lanes x 2 bytes = 262144 bytes; the untuned default takes them all, double-
# buffered 2 x 65 x 262144 = 34078720 bytes, with q and o (2 x 2 x 65536), l, m (65536 each)
# and acc (131072) 34603008, above the 32 MiB scoped limit. Halved to 32 pages: 16777216 +
# 524288 = 17301504 bytes. A standalone op whose given 64 pages do not fit is refused; its
# default is halved.
"$bin" run configs/models/llama3-8b-decode-v6e-8.yaml --set model.kv_len=8192 -o "$t/d8k" -q \
        --trace none \
    && sed -n '/"name": "layer.attn", "kind": "ragged_paged_attention"/,/}/p' "$t/d8k/summary.json" |
           grep -q '"vmem_peak_bytes": 17301504' \
    && ok || bad "8k decode on v6e by default: $(grep -o '"vmem_peak_bytes": [0-9]*' "$t/d8k/summary.json" | head -n 3)"
printf 'chip: v6e\nworkload:\n  - {op: ragged_paged_attention, q_heads: 4, kv_heads: 1, head_dim: 128, page_size: 128, max_model_len: 8192, num_kv_pages_per_block: 64, decode: {batch: 8, kv_len: 8192}}\n' >"$t/rpa64.yaml"
sed 's/, num_kv_pages_per_block: 64//' "$t/rpa64.yaml" >"$t/rpa_def.yaml"
"$bin" check "$t/rpa64.yaml" >/dev/null 2>"$t/rpa64.err"; [ $? = 2 ] && grep -q 'exceeds the scoped limit' "$t/rpa64.err" \
    && "$bin" check "$t/rpa_def.yaml" >/dev/null && ok || bad "RPA: a given block too large for VMEM: $(cat "$t/rpa64.err")"
# A call whose parallel prefix has one point runs on TensorCore 0 alone (pl_core_range): the
# idle core's share ends at once, and the busy core's memo still replays (it ran for real on
# every instance, as a chip running something else: 4 replays instead of 6, 126 s instead of
# 25 s for a Llama-3-70B step at one sequence per chip on v5p)
printf 'name: memo1c\nchip: v5p\nworkload:\n  - repeat:\n      name: l\n      count: 4\n      ops:\n        - {op: matmul, name: mm, m: 512, k: 4096, n: 512, block: {bm: 512, bk: 512, bn: 512}}\n' >"$t/memo1c4.yaml"
sed 's/count: 4/count: 1/' "$t/memo1c4.yaml" >"$t/memo1c1.yaml"
"$bin" run "$t/memo1c4.yaml" -o "$t/m1c4" -q && "$bin" run "$t/memo1c1.yaml" -o "$t/m1c1" -q \
    && grep -q '"kernel_memo": {"replays": 6, "measured": 2}' "$t/m1c4/summary.json" \
    && awk -v a="$(sed -n 's/.*"total_time_s": \([^,]*\),.*/\1/p' "$t/m1c1/summary.json")" \
           -v b="$(sed -n 's/.*"total_time_s": \([^,]*\),.*/\1/p' "$t/m1c4/summary.json")" \
           'BEGIN { d = b / (4 * a) - 1; exit !(d < 1e-9 && d > -1e-9) }' && ok \
    || bad "kernel memo of a call on one of a megacore pair's cores"
# A megacore pair follows a pair's measurement (issue 31.6): four chips of v5p [2, 2, 1], every
# chip simulated, four quiet matmuls. Chip 0's two cores measure the first; the three other
# chips' pairs, started at the same instant, wait for it instead of running it for real
# (3 x 2 = 6 follows, was 0); the three later instances replay on 4 x 2 cores (24): 30
# replays, 2 measured, and the step is four times one matmul (to float noise)
printf 'name: memop\nchip: v5p\ntopology: {shape: [2, 2, 1]}\nworkload:\n  - repeat:\n      name: l\n      count: 4\n      ops:\n        - {op: matmul, name: mm, m: 2048, k: 2048, n: 2048}\n' >"$t/memop4.yaml"
sed 's/count: 4/count: 1/' "$t/memop4.yaml" >"$t/memop1.yaml"
"$bin" run "$t/memop4.yaml" --all-chips -o "$t/mp4" -q && "$bin" run "$t/memop1.yaml" --all-chips -o "$t/mp1" -q \
    && grep -q '"kernel_memo": {"replays": 30, "measured": 2}' "$t/mp4/summary.json" \
    && awk -v a="$(sed -n 's/.*"total_time_s": \([^,]*\),.*/\1/p' "$t/mp1/summary.json")" \
           -v b="$(sed -n 's/.*"total_time_s": \([^,]*\),.*/\1/p' "$t/mp4/summary.json")" \
           'BEGIN { d = b / (4 * a) - 1; exit !(d < 1e-9 && d > -1e-9) }' && ok \
    || bad "kernel memo: megacore pairs of other chips follow the first pair's measurement"
# A repeated op's busy time per core sums its instances, as its time_s does: four matmuls
# have the bound, bound_fraction and peak_fraction of one and four times its MXU time. (The
# MXU, VPU and overhead times were per instance while HBM's summed the instances: four
# overhead-bound matmuls read "bound: hbm" at 0.23; and a non-megacore chip's peak fraction
# divided by the instances.)
first() { grep -o "$2" "$1" | head -n 1 | sed 's/.*: *//; s/"//g'; }
for c in v5e v7; do
    same=no
    "$bin" run "$t/memo4.yaml" --set chip=$c -o "$t/rep4" -q \
        && "$bin" run "$t/memo1.yaml" --set chip=$c -o "$t/rep1" -q && same=yes
    for k in '"bound": "[a-z]*"' '"peak_fraction": [0-9.e+-]*' '"bound_fraction": [0-9.e+-]*'; do
        [ "$(first "$t/rep4/summary.json" "$k")" = "$(first "$t/rep1/summary.json" "$k")" ] \
            || same=no
    done
    [ $same = yes ] \
        && awk -v a="$(first "$t/rep1/summary.json" '"busy_s": {"mxu": [0-9.e+-]*')" \
               -v b="$(first "$t/rep4/summary.json" '"busy_s": {"mxu": [0-9.e+-]*')" \
               'BEGIN { d = b / (4 * a) - 1; exit !(a > 0 && d < 1e-9 && d > -1e-9) }' && ok \
        || bad "summary ($c): four repeated matmuls are not four times one (bound, busy_s)"
done
# ... and an FSDP stack whose gathers overlap the first kernels of each layer equals the run
# without memos: the same summary and trace events (to the nanosecond printed; the memo puts
# its spans on the trace in another order) but for the gathers (and the arrows from their
# ends), which a replay beside them leaves the HBM to (within 2 %). The kernels beside a gather replay the memo measured in the
# first layer: the same gather started the same time before them.
# (and on v5p [2, 2, 1], megacore pairs; on v7 [2, 2, 1], chips of two devices. On v5p the
# four quiet kernels' first runs -- attn, up, down, and the qkv no gather overlaps -- are
# measured on chip 0's pair and followed by the three other chips' pairs, 4 x 3 x 2 = 24
# follows more than the 88 replays a pair counted when it could not follow; v7's devices
# do not follow)
# strip_gather SUMMARY: without the gathers' op entry and the time by category
strip_gather() {
    awk '/"name": "layer.wgather", "kind"/ { skip = 1 } /"name": "layer.qkv", "kind"/ { skip = 0 }
         !skip' "$1" | grep -v -e kernel_memo -e '"bytes"' -e time_by_category
}
gather_s() { sed -n 's/.*"name": "layer.wgather", "kind".*"time_s": \([^,]*\),.*/\1/p' "$1"; }
for cm in "v5e:[4]:56:5" "v5p:[2,2,1]:112:10" "v7:[2,2,1]:88:10"; do
c=${cm%%:*} rest=${cm#*:}; shape=${rest%%:*} want=${rest#*:}
"$bin" run tests/data/memo_layers.yaml --set chip=$c --set "topology.shape=$shape" -o "$t/ml1" -q \
    && "$bin" run tests/data/memo_layers.yaml --set chip=$c --set "topology.shape=$shape" \
           -o "$t/ml0" -q --no-kernel-memo \
    && grep -q "\"kernel_memo\": {\"replays\": ${want%:*}, \"measured\": ${want#*:}}" \
           "$t/ml1/summary.json" \
    && ! grep -q kernel_memo "$t/ml0/summary.json" \
    && for s in ml0 ml1; do
           strip_gather "$t/$s/summary.json" >"$t/$s.summary"
           tid=$(sed -n 's/.*"tid":\([0-9]*\),.*"cat":"all_gather","name":"layer.wgather".*/\1/p' \
                     "$t/$s/trace.json" | sort -u | tr '\n' '|')
           grep -v -e '"name":"layer.wgather"' "$t/$s/trace.json" |  # (and the arrows from its end)
               grep -E -v "\"ph\":\"s\",\"pid\":[0-9]+,\"tid\":(${tid%|}),.*\"name\":\"after\"" |
               sed 's/"ts":\([0-9]*\)\.[0-9]*/"ts":\1/; s/"dur":\([0-9]*\)\.[0-9]*/"dur":\1/; s/,$//' |
               sort >"$t/$s.sorted"
       done && cmp -s "$t/ml0.summary" "$t/ml1.summary" && cmp -s "$t/ml0.sorted" "$t/ml1.sorted" \
    && awk -v a="$(gather_s "$t/ml0/summary.json")" -v b="$(gather_s "$t/ml1/summary.json")" \
           'BEGIN { d = b / a - 1; exit !(a > 0 && d < 0.02 && d > -0.02) }' \
    && ok || bad "kernel memo ($c): the stack differs"
done
# ... and HBM-bound norms beside one gather, each started a different time after it (the
# norm is shorter than the gather): no overlap repeats, nothing replays, and the run is the
# one without memos (a memo matched by the gather alone would give the later norms the
# earlier ones' times: they differ)
"$bin" run tests/data/memo_drift.yaml -o "$t/md1" -q \
    && "$bin" run tests/data/memo_drift.yaml -o "$t/md0" -q --no-kernel-memo \
    && grep -q '"kernel_memo": {"replays": 0, ' "$t/md1/summary.json" \
    && grep -v kernel_memo "$t/md1/summary.json" | cmp -s - "$t/md0/summary.json" \
    && ok || bad "kernel memo: a norm replayed beside a gather at another offset"
# ... and an HBM-bound kernel replayed beside a gather holds the HBM it used (its bytes over
# its measured time), so the 4-layer stack takes the time of the exact run within 2 % (+0.9 %;
# without the hold the gathers had the HBM to themselves beside the replays: 21 % short)
"$bin" run tests/data/memo_hold.yaml -o "$t/mh1" -q \
    && "$bin" run tests/data/memo_hold.yaml -o "$t/mhx" -q --fidelity exact \
    && grep -q '"kernel_memo": {"replays": 12, "measured": 2}' "$t/mh1/summary.json" \
    && awk -v a="$(first "$t/mhx/summary.json" '"total_time_s": [0-9.e+-]*')" \
           -v b="$(first "$t/mh1/summary.json" '"total_time_s": [0-9.e+-]*')" \
           'BEGIN { d = b / a - 1; exit !(a > 0 && d < 0.02 && d > -0.02) }' \
    && ok || bad "kernel memo: a replay beside a gather holds the HBM its run used"
# ... and a reduce-scatter whose sums the matmul beside it pays at its end (the TensorCore's
# debt): the chip is busy while it pays, so fast's pass does not coalesce then, and fast agrees
# with exact within 1 % (+0.9 %; it was 5.2 % above while the wait counted as a quiet chip)
"$bin" run tests/data/rs_debt.yaml -o "$t/rd1" -q --trace none \
    && "$bin" run tests/data/rs_debt.yaml -o "$t/rdx" -q --trace none --fidelity exact \
    && awk -v a="$(first "$t/rdx/summary.json" '"total_time_s": [0-9.e+-]*')" \
           -v b="$(first "$t/rd1/summary.json" '"total_time_s": [0-9.e+-]*')" \
           'BEGIN { d = b / a - 1; exit !(a > 0 && d < 0.01 && d > -0.01) }' \
    && ok || bad "fast against exact: a reduce-scatter beside a matmul paying its sums"
# Serving (issue 28). A single request of one output token: one step, and its TTFT is that
# step's device time plus the host's step overhead (2 ms; 5 ms moves it by exactly 3 ms)
col() { awk -F, -v r="$2" -v c="$3" 'NR == r + 1 { print $c }' "$1"; }
"$bin" run tests/data/serve/tiny.yaml -o "$t/sv1" -q \
    && "$bin" run tests/data/serve/tiny.yaml -o "$t/sv5" -q --set serve.engine.step_overhead=5ms \
    && [ "$(wc -l <"$t/sv1/steps.csv")" = 2 ] \
    && awk -v ttft="$(col "$t/sv1/requests.csv" 1 7)" -v dev="$(col "$t/sv1/steps.csv" 1 3)" \
           -v ttft5="$(col "$t/sv5/requests.csv" 1 7)" \
           'function near(a, b) { return a - b < 1e-9 && b - a < 1e-9 }
            BEGIN { exit !(dev > 0 && near(ttft, dev + 0.002) && near(ttft5, ttft + 0.003)) }' \
    && grep -q '"steps": 1,' "$t/sv1/summary.json" \
    && ok || bad "serve: a single request's TTFT is not its prefill step plus the overhead"
# ... a closed loop at concurrency 1 (every step priced exactly): after the prefill each step
# is one decode of the same time (kv 301..307 tokens: the same pages, with RPA v2, which fetches
# whole pages; v3 copies only the cached tokens, so its steps differ by the last page's rows),
# and TPOT is that step plus the overhead; the second request arrives as the first finishes
"$bin" run tests/data/serve/tiny.yaml -o "$t/svc" -q --set serve.requests.count=2 \
       --set serve.requests.output_len=8 --set serve.engine.step_memo.buckets_per_octave=0 \
       --set serve.engine.attention_kernel=rpa_v2 \
    && awk -F, 'NR > 2 && NR <= 9 { print $3, $5, $6 }' "$t/svc/steps.csv" >"$t/svc.dec" \
    && awk -v tpot="$(col "$t/svc/requests.csv" 1 8)" \
           'NR == 1 { first = $1 } { if ($1 != first || $2 != 1 || $3 != 1) exit 1 }
            END { d = tpot - first - 0.002; exit !(NR == 7 && d < 1e-9 && d > -1e-9) }' \
           "$t/svc.dec" \
    && [ "$(col "$t/svc/requests.csv" 2 2)" = "$(col "$t/svc/requests.csv" 1 4)" ] \
    && ok || bad "serve: TPOT at concurrency 1 is not one decode step plus the overhead"
# ... open-loop arrivals above what the engine serves: TTFT grows (the last request waits far
# longer than the first) and the run says it is overloaded; a rate it serves is not
"$bin" run tests/data/serve/tiny_open.yaml -o "$t/svo" >"$t/svo.out" \
    && grep -q '^  overloaded: 2000 requests/s arrive' "$t/svo.out" \
    && grep -q '"overloaded": true' "$t/svo/summary.json" \
    && awk -v a="$(col "$t/svo/requests.csv" 1 7)" -v b="$(col "$t/svo/requests.csv" 200 7)" \
           'BEGIN { exit !(b > 20 * a) }' \
    && "$bin" run tests/data/serve/tiny_open.yaml -o "$t/svs" -q \
           --set serve.requests.arrival.rate=50/s \
    && grep -q '"overloaded": false' "$t/svs/summary.json" \
    && ok || bad "serve: an open loop above capacity is not reported overloaded"
# ... a trace (CRLF, a blank line and a comment in it) of two requests 5 s apart: the engine
# idles between them, so each TTFT is the single request's of sv1 (its prefill step plus the
# overhead), the second arrives at 5 s, and the run is 2 steps
"$bin" run tests/data/serve/tiny.yaml -o "$t/svt" -q \
       --set 'serve.requests={trace: traces/two_far.csv}' \
    && [ "$(col "$t/svt/requests.csv" 1 7)" = "$(col "$t/sv1/requests.csv" 1 7)" ] \
    && [ "$(col "$t/svt/requests.csv" 2 7)" = "$(col "$t/sv1/requests.csv" 1 7)" ] \
    && [ "$(col "$t/svt/requests.csv" 2 2)" = 5 ] \
    && grep -q '"steps": 2,' "$t/svt/summary.json" \
    && ok || bad "serve: a trace's far-apart requests do not each take one prefill"
# ... lengths drawn (uniform input in [200, 400], lognormal output of mean 12 in [1, 40]) and
# gamma arrivals (cv 2): every request's lengths in range, the headline says the means, and
# the same seed gives the same requests.csv
sv_dist="serve.requests={count: 64, arrival: {rate: 200/s, process: gamma, cv: 2}, input_len: {min: 200, max: 400}, output_len: {mean: 12, sigma: 0.6, max: 40}, seed: 5}"
"$bin" run tests/data/serve/tiny.yaml -o "$t/svd" --set "$sv_dist" >"$t/svd.out" \
    && "$bin" run tests/data/serve/tiny.yaml -o "$t/svd2" -q --set "$sv_dist" \
    && grep -q '^serving 64 requests (mean [0-9.]* in, [0-9.]* out tokens)' "$t/svd.out" \
    && awk -F, 'NR > 1 && ($5 < 200 || $5 > 400 || $6 < 1 || $6 > 40) { bad = 1 }
                NR > 1 { n++; o += $6 } END { exit !(!bad && n == 64 && o / n > 6 && o / n < 20) }' \
           "$t/svd/requests.csv" \
    && cmp -s "$t/svd/requests.csv" "$t/svd2/requests.csv" \
    && ok || bad "serve: drawn lengths or gamma arrivals"
# ... the step memo (a step is its dense part at its padded tokens and rows plus each
# sequence's attention at its position, from probes of one to three sequences) against every
# step priced exactly: each step within 4 % (a chunk's q and kv blocks fall with its place in
# the batch: one block of the kernel is 2 % of these tiny steps, where attention is most of a
# step), the run's duration within 0.5 %; and step_memo.verify_every reports the same
# comparison (every step: at most 4 %)
sv_set="--set serve.requests.count=8 --set serve.requests.concurrency=4 --set serve.requests.output_len=24 --set serve.requests.input_len=700"
# shellcheck disable=SC2086
"$bin" run tests/data/serve/tiny.yaml -o "$t/svb4" -q $sv_set \
    && "$bin" run tests/data/serve/tiny.yaml -o "$t/svb0" -q $sv_set \
           --set serve.engine.step_memo.buckets_per_octave=0 \
    && paste -d, "$t/svb4/steps.csv" "$t/svb0/steps.csv" | awk -F, '
           NR > 1 { e = $3 / $10 - 1; if (e > 0.04 || e < -0.04 || $7 != $14) exit 1; n++ }
           END { exit !(n > 40) }' \
    && awk -v a="$(sed -n 's/.*"duration_s": \([0-9.e-]*\),/\1/p' "$t/svb4/summary.json")" \
           -v b="$(sed -n 's/.*"duration_s": \([0-9.e-]*\),/\1/p' "$t/svb0/summary.json")" \
           'BEGIN { e = a / b - 1; exit !(b > 0 && e <= 0.005 && e >= -0.005) }' \
    && "$bin" run tests/data/serve/tiny.yaml -o "$t/svbv" -q $sv_set \
           --set serve.engine.step_memo.verify_every=1 \
    && grep -q '"verified": 54, "error_mean": [0-9.e-]*, "error_max": 0.0[0-3]' \
           "$t/svbv/summary.json" \
    && ok || bad "serve: the step memo's error is above 4 % per step or 0.5 % per run"
# ... serving presets from their config.json: the KV cache they leave on one v6e chip (31.25 GiB,
# 90 % of it, less the bf16 weights, in pages of 128 tokens). Qwen3-8B: weights 2 x 151936 x 4096
# (embedding, logits) + 36 x (4096 x (4096 + 2 x 1024 + 4096) + 3 x 4096 x 12288 + 2 x 4096)
# + 4096 = 8,190,726,144 parameters, 16,381,452,288 bytes; KV 2 x 36 x 8 x 128 x 2 = 147,456
# bytes a token; (0.9 x 33,554,432,000 - 16,381,452,288) / (147,456 x 128) = 732.07: 732 pages.
# Gemma-2B (multi-query: 1 KV head of 256): 2 x 256000 x 2048 + 18 x (2048 x (2048 + 2 x 256 +
# 2048) + 3 x 2048 x 16384 + 2 x 2048) + 2048 = 3,030,462,464 parameters; KV 2 x 18 x 256 x 2 =
# 18,432 bytes a token; (30,198,988,800 - 6,060,924,928) / (18,432 x 128) = 10,231.2: 10231
for pv in qwen3-8b:732 gemma-2b:10231; do
    "$bin" run tests/data/serve/tiny.yaml -o "$t/svp" -q --set "serve.model={preset: ${pv%:*}}" \
           --set serve.engine.page_size=128 \
        && grep -q "\"kv_cache\": {\"pages\": ${pv#*:}," "$t/svp/summary.json" \
        && ok || bad "serve: preset ${pv%:*}'s KV cache is not ${pv#*:} pages"
done
# ... speculative decoding (serve.engine.speculative_config): every draft accepted, 3 a step,
# 9 output tokens: the prefill (token 1), then two steps verifying 3 drafts each and emitting
# 4 tokens each (1 + 3): 3 steps, 2 drafts of 3 tokens, all accepted, mean acceptance length 4
sv_draft="{model: {arch: llama, layers: 1, d_model: 512, heads: 4, kv_heads: 2, head_dim: 128, ffn: 1024, vocab: 8192}, num_speculative_tokens: 3, acceptance_rate: 1}"
"$bin" run tests/data/serve/tiny.yaml -o "$t/svsd" -q --set serve.requests.output_len=9 \
       --set "serve.engine.speculative_config=$sv_draft" \
    && [ "$(wc -l <"$t/svsd/steps.csv")" = 4 ] \
    && grep -q '"speculative": {"num_speculative_tokens": 3, "acceptance_rate": 1, "num_drafts": 2, "num_draft_tokens": 6, "num_accepted_tokens": 6, "draft_acceptance_rate": 1, "mean_acceptance_length": 4, "draft_device_s": [0-9.e-]*, ' "$t/svsd/summary.json" \
    && [ "$(col "$t/svsd/steps.csv" 2 7)" = 4 ] \
    && ok || bad "serve: speculative decoding's steps or its counts"
# ... and its draft's memory: Llama-3-8B with Llama-3.2-1B as the draft on one v6e chip, pages
# of 128. Target 8,030,261,248 parameters (16,060,522,496 bytes bf16: 2 x 128256 x 4096 + 32 x
# (4096 x 10240 + 3 x 4096 x 14336 + 2 x 4096) + 4096); draft 1,498,482,688 (2,996,965,376
# bytes: 2 x 128256 x 2048 + 16 x (2048 x 5120 + 3 x 2048 x 8192 + 2 x 2048) + 2048); KV a token
# 2 x 32 x 8 x 128 x 2 + 2 x 16 x 8 x 64 x 2 = 163,840 bytes; (30,198,988,800 - 16,060,522,496 -
# 2,996,965,376) / (163,840 x 128) = 531.3: 531 pages (842 without the draft)
"$bin" run tests/data/serve/tiny.yaml -o "$t/svsm" -q --set "serve.model={preset: llama3-8b}" \
       --set serve.engine.page_size=128 \
       --set "serve.engine.speculative_config={model: {preset: llama3.2-1b}, num_speculative_tokens: 2, acceptance_rate: 0.5}" \
    && grep -q '"kv_cache": {"pages": 531,' "$t/svsm/summary.json" \
    && ok || bad "serve: a draft model's weights and KV cache are not taken from the KV pages"
# ... SIGINT stops a serving run: exit 130, nothing written (the directory it made is gone).
# (every step priced exactly, verify_every 1, keeps the run going well past the signal: the
# step memo alone ends 20000 requests within a second)
"$bin" run tests/data/serve/tiny_open.yaml -o "$t/svi" -q --set serve.requests.count=20000 \
       --set serve.requests.arrival.rate=50/s --set serve.engine.step_memo.verify_every=1 \
       2>"$t/svi.err" &
svi=$!
sleep 1
kill -INT $svi
wait $svi
[ $? = 130 ] && [ ! -e "$t/svi" ] && grep -q '^interrupted: summary.json' "$t/svi.err" \
    && ok || bad "serve: SIGINT: $(cat "$t/svi.err")"
# ... the shipped example: every summary key of the serving block, a row per request; every
# third step priced exactly as well, the memo within 2 % of it (measured on every step: mean
# 0.14 %, max 1.7 %)
"$bin" run configs/scenarios/serve_llama3_8b_v6e.yaml -o "$t/sve" -q \
       --set serve.engine.step_memo.verify_every=3 \
    && grep -q '"verified": 44, "error_mean": [0-9.e-]*, "error_max": 0.0[01]' "$t/sve/summary.json" \
    && (for k in requests completed duration_s request_throughput input_tokens_per_s \
                 output_tokens_per_s ttft_s tpot_s itl_s e2e_s goodput kv_cache preemptions \
                 steps mean_batch overloaded step_memo; do
            grep -q "\"$k\":" "$t/sve/summary.json" || exit 1
        done) \
    && [ "$(wc -l <"$t/sve/requests.csv")" = 17 ] \
    && ok || bad "serve: the shipped example's outputs"
# issue 28.4: a sweep over the arrival rate records each point's serving figures and draws the
# latency-throughput curve; TTFT grows with the rate (more queueing: p50 and p99 never fall from
# one rate to the next), 2000/s is overloaded (as above) and 50/s is not, and the knee the sweep
# names is the first point whose p99 TTFT is above the 20 ms SLO or that is overloaded (read
# from sweep.csv's own columns)
"$bin" sweep tests/data/sweeps/serve_rate.yaml -o "$t/svsw" -j 2 --set serve.slo.ttft=20ms \
    >"$t/svsw.out" 2>/dev/null \
    && "$t/jsoncheck" "$t/svsw/sweep.json" \
    && awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { n++; p50 = $c["ttft_p50_s"]; p99 = $c["ttft_p99_s"]
          if ($c["status"] != "ok" || $c["request_throughput"] <= 0 || p50 <= 0) exit 1
          if (n > 1 && (p50 < last50 || p99 < last99)) exit 1
          last50 = p50; last99 = p99; over[n] = $c["overloaded"]
          if (!knee && (p99 > 0.02 || $c["overloaded"] == "true")) knee = $1 }
        END { if (n != 4 || over[1] != "false" || over[4] != "true" || knee == "") exit 1
              print knee }' "$t/svsw/sweep.csv" >"$t/svsw.knee" \
    && grep -q "^knee: point $(cat "$t/svsw.knee") (" "$t/svsw.out" \
    && python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot()
assert r.tag.endswith("svg") and sys.argv[2] in open(sys.argv[1]).read()' \
           "$t/svsw/latency_throughput.svg" "knee: point $(cat "$t/svsw.knee") (" \
    && grep -q '<p id="serving-knee">knee: point' "$t/svsw/report.html" \
    && grep -q '<title>Latency against throughput</title>' "$t/svsw/report.html" \
    && ok || bad "serve: a rate sweep's latency-throughput curve: $(head -c 300 "$t/svsw.out")"
# scheduler: jetstream (JetStream's engine): 3 requests at once on 2 slots, 4 outputs each.
# Steps: prefill r0, prefill r1 (each one request alone, 300 tokens padded to 512), 3 generate
# steps of 2 slots, prefill r2, 3 generate steps of r2 alone: 9. Every generate step runs the
# decode state's fixed shapes -- both slots over the whole 2048-token dense cache -- so all
# six take the same device time, r2's alone as the pairs; both prefills the same too. The
# same with serve.mesh data 2 (shard_on_batch): one engine, a group steps 1 slot, every group
# runs each prefill: the same 9 steps, one engine (no replica column), each prefill's device
# time the one-chip run's (a prefill is not split) plus its insert, a select over the group's
# whole cache slice read and written (1 slot x 2048 tokens x 2048 B: 2 x 4,194,304 B at v6e's
# 1.638e12 B/s, 5.12125 us), a generate step's below it (one slot a chip)
svjs="--set serve.engine.scheduler=jetstream --set serve.engine.max_num_seqs=2 --set serve.engine.chunked_prefill=false"
"$bin" run tests/data/serve/tiny.yaml -o "$t/svj" -q $svjs \
       --set 'serve.requests={count: 3, concurrency: 3, input_len: 300, output_len: 4}' \
    && awk -F, 'NR > 1 { s = s $5 "/" $6 " " } END { exit s != "1/0 1/0 2/2 2/2 2/2 1/0 1/1 1/1 1/1 " }' \
           "$t/svj/steps.csv" \
    && [ "$(awk -F, 'NR > 1 && $6 > 0 { print $3 }' "$t/svj/steps.csv" | sort -u | wc -l)" = 1 ] \
    && [ "$(awk -F, 'NR > 1 && $6 == 0 { print $3 }' "$t/svj/steps.csv" | sort -u | wc -l)" = 1 ] \
    && grep -q '"signatures": 2,' "$t/svj/summary.json" \
    && "$bin" run tests/data/serve/tiny_dp.yaml -o "$t/svjd" -q $svjs \
           --set 'serve.requests={count: 3, concurrency: 3, input_len: 300, output_len: 4}' \
    && [ "$(wc -l <"$t/svjd/steps.csv")" = 10 ] && head -1 "$t/svjd/steps.csv" | grep -q ',tokens$' \
    && awk -v a="$(col "$t/svjd/steps.csv" 1 3)" -v b="$(col "$t/svj/steps.csv" 1 3)" \
           'BEGIN { e = a - b - 2 * 2048 * 2048 / 1.638e12; exit !(e < 1e-11 && e > -1e-11) }' \
    && awk -v a="$(col "$t/svjd/steps.csv" 3 3)" -v b="$(col "$t/svj/steps.csv" 3 3)" \
           'BEGIN { exit !(a < b) }' \
    && ok || bad "serve: scheduler jetstream's steps (prefills alone, generate steps of fixed shape)"
# issue 28.5: data-parallel replicas behind a router (serve.mesh data: 2, one chip each). A
# closed loop at concurrency 2: round robin gives request 0 to replica 0 and request 1 to
# replica 1, each alone on its engine: both TTFTs are the single request's of sv1 (its prefill
# step plus the overhead), the run lasts as long as one engine's first request at concurrency 1
# (svr1), so the request throughput is twice svr1's (2 requests in the time svr1 serves 1 of 2)
"$bin" run tests/data/serve/tiny_dp.yaml -o "$t/svr" -q \
    && "$bin" run tests/data/serve/tiny.yaml -o "$t/svr1" -q --set serve.requests.count=2 \
           --set serve.requests.output_len=8 \
    && [ "$(col "$t/svr/requests.csv" 1 11)" = 0 ] && [ "$(col "$t/svr/requests.csv" 2 11)" = 1 ] \
    && [ "$(col "$t/svr/requests.csv" 1 7)" = "$(col "$t/sv1/requests.csv" 1 7)" ] \
    && [ "$(col "$t/svr/requests.csv" 2 7)" = "$(col "$t/sv1/requests.csv" 1 7)" ] \
    && [ "$(col "$t/svr/requests.csv" 1 4)" = "$(col "$t/svr1/requests.csv" 1 4)" ] \
    && grep -q '"replicas": 2,' "$t/svr/summary.json" \
    && grep -q '"router": {"policy": "round_robin"}' "$t/svr/summary.json" \
    && [ "$(grep -c '{"requests": 1, "steps": 8, "mean_batch": 1,' "$t/svr/summary.json")" = 2 ] \
    && awk -v a="$(sed -n 's/.*"request_throughput": \([0-9.e+-]*\),/\1/p' "$t/svr/summary.json")" \
           -v b="$(sed -n 's/.*"request_throughput": \([0-9.e+-]*\),/\1/p' "$t/svr1/summary.json")" \
           'BEGIN { e = a / (2 * b) - 1; exit !(e < 1e-6 && e > -1e-6) }' \
    && head -1 "$t/svr/steps.csv" | grep -q ',tokens,replica$' \
    && awk -F, 'NR > 2 && $2 < last { exit 1 } NR > 1 { last = $2 }' "$t/svr/steps.csv" \
    && ok || bad "serve replicas: a closed loop at concurrency 2 on 2 replicas"
# ... its trace.json: one process per replica ("replica 0", "replica 1"), each with its own
# 8 steps (per_replica's) and its request's track; the checker's nesting and counts hold
svchk_r() { python3 tests/serve_trace_check.py "$1/trace.json" "$1/summary.json"; }
svchk_r "$t/svr" >/dev/null \
    && python3 -c 'import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = sorted(e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name")
x = [sum(1 for e in ev if e.get("ph") == "X" and e.get("pid") == p) for p in (0, 1)]
b = [sum(1 for e in ev if e.get("ph") == "b" and e.get("pid") == p and e.get("cat") == "request" and e["name"].startswith("request")) for p in (0, 1)]
sys.exit(not (names == ["replica 0", "replica 1"] and x == [8, 8] and b == [1, 1]))' "$t/svr/trace.json" \
    && ok || bad "serve replicas: trace.json is not one process per replica"
# ... with preemptions on the replicas (a KV cache of 1 % of HBM, 256 sequences of 2800 tokens
# against it): each engine logs its own preemptions; the run's log is theirs joined (it was
# left empty while the count said 1298: the trace writer read past it, a crash), so the
# trace's preempted spans nest in their requests and the checker's counts hold
"$bin" run tests/data/serve/tiny_dp.yaml -o "$t/svrp" -q --set serve.engine.kv_cache.hbm_fraction=0.01 \
       --set serve.engine.max_num_seqs=128 --set serve.engine.max_model_len=4096 \
       --set 'serve.requests={count: 400, concurrency: 256, input_len: 1800, output_len: 1000}' \
    && grep -q '"preemptions": [1-9]' "$t/svrp/summary.json" && svchk_r "$t/svrp" >/dev/null \
    && [ "$(grep -o '"name":"preempted"' "$t/svrp/trace.json" | wc -l)" \
         = "$(( 2 * $(sed -n 's/.*"preemptions": \([0-9]*\).*/\1/p' "$t/svrp/summary.json" | head -1) ))" ] \
    && ok || bad "serve replicas: preemptions on replicas and the trace"
# ... open-loop arrivals: round robin alternates, request i on replica i mod 2
"$bin" run tests/data/serve/tiny_dp.yaml -o "$t/svro" -q \
       --set 'serve.requests={count: 20, arrival: {rate: 2000/s}, input_len: 300, output_len: 16}' \
    && awk -F, 'NR > 1 { n++; if ($11 != (NR - 2) % 2) exit 1 } END { exit n != 20 }' \
           "$t/svro/requests.csv" \
    && ok || bad "serve replicas: round robin does not alternate"
# ... a long request (64 output tokens, ~135 ms of decodes) and a short one at 0, a short one at
# 50 ms: both policies send the first two to replicas 0 and 1; round robin sends the third to
# replica 0, still decoding the long one (it waits for the step in flight and shares the next
# with a decode: TTFT above a lone prefill's), least outstanding tokens to replica 1,
# idle since its short request left (0 tokens left against the long one's): its TTFT is sv1's
for p in round_robin:0 least_outstanding_tokens:1; do
    "$bin" run tests/data/serve/tiny_dp.yaml -o "$t/svl" -q --set "serve.router.policy=${p%:*}" \
           --set 'serve.requests={trace: traces/long_short.csv}' \
        && [ "$(awk -F, 'NR > 1 { printf "%s", $11 }' "$t/svl/requests.csv")" = "01${p#*:}" ] \
        && awk -v a="$(col "$t/svl/requests.csv" 3 7)" -v b="$(col "$t/sv1/requests.csv" 1 7)" \
               -v idle="${p#*:}" 'BEGIN { exit !(idle ? a == b : a > b) }' \
        && ok || bad "serve replicas: ${p%:*} on a long and two short requests"
done
# ... each replica's step is one engine's on its chips: data 2 x tensor 2 on a 2x2 slice prices
# every step as one engine of tensor 2 on a 2x1 slice does (the same device times and KV pages)
"$bin" run tests/data/serve/tiny_dp.yaml -o "$t/svr4" -q --set 'topology.shape=[2, 2]' \
       --set 'serve.mesh={data: 2, tensor: 2}' \
    && "$bin" run tests/data/serve/tiny.yaml -o "$t/svr2" -q --set 'topology.shape=[2, 1]' \
           --set 'serve.mesh={tensor: 2}' --set serve.requests.output_len=8 \
    && [ "$(awk -F, 'NR > 1 && $8 == 0 { print $3 }' "$t/svr4/steps.csv")" \
         = "$(awk -F, 'NR > 1 { print $3 }' "$t/svr2/steps.csv")" ] \
    && [ "$(grep -o '"kv_cache": {"pages": [0-9]*' "$t/svr4/summary.json")" \
         = "$(grep -o '"kv_cache": {"pages": [0-9]*' "$t/svr2/summary.json")" ] \
    && ok || bad "serve replicas: a replica's step is not one engine's on its tensor chips"
# issue 28.4: a serving run's trace.json (tests/serve_trace_check.py: JSON, one step span per
# step of summary.json, every request's b/e events nested and closed). The single request of
# sv1 arrives at 0 into an idle engine: it is scheduled at once (no queued phase) and its
# prefill runs from 0 to the end of step 0 (its device time plus the 2 ms overhead), when its
# first token comes: prefill = TTFT (summary.json's ttft_s mean, its only one) - queued (0).
# With max_num_seqs 1, two requests arriving together: request 1 waits through request 0's
# one step (queued = request 0's first token time), then prefills alone: prefill = its TTFT
# - queued. (ts are in us with 3 decimals: within 2 ns.)
svchk() { python3 tests/serve_trace_check.py "$1/trace.json" "$1/summary.json"; }
"$t/jsoncheck" "$t/sv1/trace.json" && svchk "$t/sv1" >"$t/sv1.ph" \
    && awk -v ttft="$(sed -n 's/.*"ttft_s": {"mean": \([0-9.e+-]*\),.*/\1/p' "$t/sv1/summary.json")" \
           '{ n++; d = $3 - (ttft * 1e6 - $2) } END { exit !(n == 1 && $2 == 0 && d < 0.002 && d > -0.002) }' \
           "$t/sv1.ph" \
    && "$bin" run tests/data/serve/tiny.yaml -o "$t/svq" -q --set serve.requests.count=2 \
           --set serve.requests.concurrency=2 --set serve.engine.max_num_seqs=1 \
    && svchk "$t/svq" >"$t/svq.ph" \
    && awk -v first0="$(col "$t/svq/requests.csv" 1 3)" -v ttft1="$(col "$t/svq/requests.csv" 2 7)" \
           'NR == 2 { q = $2 - first0 * 1e6; d = $3 - (ttft1 * 1e6 - $2) }
            END { exit !(NR == 2 && q < 0.002 && q > -0.002 && d < 0.002 && d > -0.002) }' "$t/svq.ph" \
    && svchk "$t/sve" >/dev/null && svchk "$t/svd" >/dev/null \
    && ok || bad "serve: trace.json: $(svchk "$t/sv1" 2>&1 | head -2) $(cat "$t/svq.ph")"
# ... the cap (--trace-max-events 50 of the 64 drawn requests' run): the rest is dropped and
# said (even with --quiet), the trace keeps its beginning whole (no begin without its end) and
# its metadata and summary.json say it is incomplete
"$bin" run tests/data/serve/tiny.yaml -o "$t/svcap" -q --set "$sv_dist" --trace-max-events 50 \
       2>"$t/svcap.err" \
    && grep -q '^warning: trace.json is incomplete: [0-9]* events dropped past --trace-max-events 50 ' \
           "$t/svcap.err" \
    && grep -q '"complete": false' "$t/svcap/summary.json" \
    && grep -q '"capped":"incomplete: ' "$t/svcap/trace.json" \
    && svchk "$t/svcap" >/dev/null \
    && ok || bad "serve: a capped trace: $(cat "$t/svcap.err")"
# ... --trace-window 100ms:150ms: only the steps that overlap it (consecutive ones), request
# tracks whole, and the rest counted as filtered
"$bin" run tests/data/serve/tiny.yaml -o "$t/svw" -q --set "$sv_dist" --trace-window 100ms:150ms \
    && svchk "$t/svw" >/dev/null \
    && grep -q '"filtered": [1-9][0-9]*, .*"window_s": \[0.1, 0.15\]' "$t/svw/summary.json" \
    && grep '"ph":"X"' "$t/svw/trace.json" | sed 's/.*"ts":\([0-9.]*\),"dur":\([0-9.]*\),.*/\1 \2/' \
       | awk '$1 > 150000 || $1 + $2 < 100000 { exit 1 } { n++ } END { exit !(n > 0) }' \
    && ok || bad "serve: --trace-window"
# ... --trace none: no trace.json (an earlier run's goes), the summary and the console say so;
# --trace-chips has no chips to pick in a serving run: refused
cp -r "$t/sv1" "$t/svn" \
    && "$bin" run tests/data/serve/tiny.yaml -o "$t/svn" --trace none >"$t/svn.out" \
    && [ ! -e "$t/svn/trace.json" ] && grep -q '"level": "none", "path": null' "$t/svn/summary.json" \
    && grep -q 'steps.csv (no trace: --trace none)$' "$t/svn.out" \
    && ok || bad "serve: --trace none"
"$bin" run tests/data/serve/tiny.yaml -o "$t/svx" -q --trace-chips 0 2>"$t/svx.err"; [ $? = 2 ] \
    && grep -q -- "--trace-chips: a serving run's trace has no chips" "$t/svx.err" && [ ! -e "$t/svx" ] \
    && ok || bad "serve: --trace-chips: $(cat "$t/svx.err")"
# issue 28.5: prefill/decode disaggregation (tests/data/serve/tiny_disagg.yaml: one prefill
# and one decode engine of one v6e chip each, the KV over the ICI). One request of 300 in, 8
# out: the prefill engine's one step (replica 0), then the prompt's KV cache, 2 layers x 2 KV
# heads x 128 x 2 (K, V) x 2 B x 300 tokens = 614400 B, over one ICI link at 90 GB/s x 0.96 =
# 86.4e9 B/s = 7.1111 us, after the collective's 5 us and a hop's 0.2 us: 12.3111 us; TTFT is
# the prefill step plus the 2 ms overhead plus the transfer (its first token reaches the client
# with the KV), and the decode engine (replica 1) runs the 7 decodes from then, one step each
"$bin" run tests/data/serve/tiny_disagg.yaml -o "$t/svdg" -q \
    && awk -F, 'NR == 2 && $8 != 0 { exit 1 } NR > 2 && ($8 != 1 || $6 != 1) { exit 1 }
                END { exit NR != 9 }' "$t/svdg/steps.csv" \
    && awk -v ttft="$(col "$t/svdg/requests.csv" 1 7)" -v x="$(col "$t/svdg/requests.csv" 1 12)" \
           -v dev="$(col "$t/svdg/steps.csv" 1 3)" -v d0="$(col "$t/svdg/steps.csv" 2 2)" \
           'function near(a, b) { return a - b < 1e-9 && b - a < 1e-9 }
            BEGIN { exit !(near(x, 12.3111111e-6) && near(ttft, dev + 0.002 + x) && near(d0, ttft)) }' \
    && [ "$(col "$t/svdg/requests.csv" 1 11)" = 1 ] \
    && head -1 "$t/svdg/requests.csv" | grep -q ',replica,kv_transfer_s$' \
    && grep -q '"disaggregation": {"prefill_engines": 1, "decode_engines": 1, "kv_transfer": "ici", "kv_transfers": 1, "kv_transfer_bytes_mean": 614400, ' "$t/svdg/summary.json" \
    && ok || bad "serve disaggregation: one request's prefill, KV transfer over the ICI and decodes"
# ... its trace.json: the request's prefill from its scheduling on the prefill engine to its
# first token (after the transfer), the steps on their engines' processes (the prefill copy
# was left without its scheduling time and preemption slot: the run crashed in the engine)
python3 tests/serve_trace_check.py "$t/svdg/trace.json" "$t/svdg/summary.json" >/dev/null \
    && [ "$(grep -c '"name":"process_name"' "$t/svdg/trace.json")" = 2 ] \
    && ok || bad "serve disaggregation: trace.json"
# ... over the DCN: two slices of 2x4 (one host of 8 chips each), an engine of tensor 8 on each;
# each chip holds the one KV head its query heads read (2 heads over tensor 8, replicated as
# vLLM does), 2 x 1 x 128 x 2 x 2 B x 300 = 307200 B, 2457600 B in all, and the host's 8 chips
# share its 100 GB/s of NICs: 8 x 307200 / 1e11 = 24.576 us after the DCN's 10 us = 34.576 us
"$bin" run tests/data/serve/tiny_disagg.yaml -o "$t/svdd" -q \
       --set 'topology={shape: [2, 4], slices: 2}' --set 'serve.mesh={data: 2, tensor: 8}' \
       --set serve.disaggregation.kv_transfer=dcn \
    && awk -v x="$(col "$t/svdd/requests.csv" 1 12)" \
           'BEGIN { exit !(x - 34.576e-6 < 1e-12 && 34.576e-6 - x < 1e-12) }' \
    && grep -q '"kv_transfer": "dcn", "kv_transfers": 1, "kv_transfer_bytes_mean": 2457600, ' "$t/svdd/summary.json" \
    && ok || bad "serve disaggregation: the KV transfer over the DCN is not 34.576 us"
# ... why disaggregate: long prompts (1500 tokens, each one step of the 2048-token budget) at
# 300/s with 128 output tokens. Co-located (two replicas), a decode shares its step with a
# prefill whenever one arrives (about 1 step in 9 per engine): p99 ITL is such a step;
# disaggregated, the decode engine never runs a prefill: its p99 ITL is lower
sv_long="serve.requests={count: 40, arrival: {rate: 300/s}, input_len: 1500, output_len: 128}"
sv_eng="--set serve.engine.step_overhead=0.2ms --set serve.engine.max_num_batched_tokens=2048 --set serve.engine.max_num_seqs=64"
p99itl() { sed -n 's/.*"itl_s": {.*"p99": \([0-9.e+-]*\)}.*/\1/p' "$1/summary.json"; }
"$bin" run tests/data/serve/tiny_disagg.yaml -o "$t/svdi" -q --set "$sv_long" $sv_eng \
    && "$bin" run tests/data/serve/tiny_dp.yaml -o "$t/svci" -q --set "$sv_long" $sv_eng \
    && awk -v d="$(p99itl "$t/svdi")" -v c="$(p99itl "$t/svci")" 'BEGIN { exit !(d > 0 && d < c) }' \
    && ok || bad "serve disaggregation: p99 ITL not below the co-located engines' on long prompts"
# ... and an op that starts while a memo is measured: the measurement is not kept (with it
# kept, 8 replays of a disturbed 10 us shorter norm); nothing replays, the run is the one
# without memos
"$bin" run tests/data/memo_start.yaml -o "$t/ms1" -q --trace none \
    && "$bin" run tests/data/memo_start.yaml -o "$t/ms0" -q --trace none --no-kernel-memo \
    && ! grep -q kernel_memo "$t/ms1/summary.json" && cmp -s "$t/ms1/summary.json" "$t/ms0/summary.json" \
    && ok || bad "kernel memo: a measurement during which an op started was kept"
# ... and a kernel beside a copy of its chip is neither measured nor replayed there: the first
# norm runs for real, the second is measured, the third replays it
"$bin" run tests/data/memo_beside.yaml -o "$t/mb1" -q --trace none \
    && "$bin" run tests/data/memo_beside.yaml -o "$t/mb0" -q --trace none --no-kernel-memo \
    && grep -q '"kernel_memo": {"replays": 1, "measured": 1}' "$t/mb1/summary.json" \
    && grep -v kernel_memo "$t/mb1/summary.json" | cmp -s - "$t/mb0/summary.json" \
    && ok || bad "kernel memo: a norm measured beside a copy"
# ... and a kernel while a copy runs on another chip only (into this chip's HBM): no memo is
# used there (a replay of the quiet norm measured on chip 1 would give chip 0's slower norms
# its time); nothing replays, the run is the one without memos
"$bin" run tests/data/memo_elsewhere.yaml -o "$t/me1" -q --trace none \
    && "$bin" run tests/data/memo_elsewhere.yaml -o "$t/me0" -q --trace none --no-kernel-memo \
    && grep -q '"kernel_memo": {"replays": 0, "measured": 1}' "$t/me1/summary.json" \
    && grep -v kernel_memo "$t/me1/summary.json" | cmp -s - "$t/me0/summary.json" \
    && ok || bad "kernel memo: a norm replayed while a copy into its HBM runs on another chip"
# the fuzz seeds of the surfaces no shipped file combines (tools/fuzz.sh) stay valid scenarios
for f in tests/fuzz/seeds/*.yaml; do
    "$bin" check "$f" >/dev/null 2>"$t/seed.err" && ok || bad "fuzz seed $f: $(tail -n 1 "$t/seed.err")"
done
# model steps: an int8 model's MFU is against the int8 peak, and says so (74.9 %; 149.8 % of
# the bf16 peak), its tokens 8 sequences x 2048; the shipped Llama-3-8B decode's KV cache per chip, 2 x 32 layers x 1 KV head
# (8 over tensor 8) x 128 x 2 B x 64 sequences x 2049 tokens = 2148532224 B, as written
"$bin" run tests/data/model_int8.yaml -o "$t/i8" --trace none >"$t/i8.out" 2>&1 \
    && grep -q '"tokens": 16384, .*"mfu": 0\.[0-9]*, "mfu_peak_dtype": "int8"' "$t/i8/summary.json" \
    && grep -q '^model prefill step: .* MFU [0-9.]*% of the int8 peak' "$t/i8.out" \
    && ok || bad "int8 model: MFU not against the int8 peak: $(grep MFU "$t/i8.out")"
"$bin" run configs/models/llama3-8b-decode-v6e-8.yaml -o "$t/d8" -q --trace none \
    && grep -q '"kv_cache": 2148532224, ' "$t/d8/summary.json" \
    && grep -q '"mfu_peak_dtype": "bf16"' "$t/d8/summary.json" \
    && ok || bad "8B decode: KV cache per chip $(grep -o '"kv_cache": [0-9]*' "$t/d8/summary.json")"
# cost, energy and time to train (issues 30.2, 29.6): tests/data/train_tiny.yaml, 8 v5e chips at
# the 3-year list price $0.54 a chip-hour, TDP 200 W, idle 60 W. By hand, from the step time T,
# the evaluation step E and the utilization u the run reports:
#   $/step = 8 x 0.54 x T / 3600; $/Mtok = $/step / (16 x 512 / 1e6); J/step = 8 x (60 + 140 u) x T
#   time to train = 60 s + 1000 T + 5 evaluations x ceil(20 / 16) = 2 forward steps x E
#                   + 4 checkpoints x 1e9 B / 2e9 B/s; $ to train = 8 x 0.54 x that / 3600
# and the forward-only step E between a fifth and two thirds of T (a training step is about
# three forwards: forward, backward's two matmuls per forward one, and its collectives)
jnum() { sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1" | head -n 1; }
"$bin" run tests/data/train_tiny.yaml -o "$t/tr" --trace none >"$t/tr.out" 2>&1 \
    && s="$t/tr/summary.json" \
    && awk -v T="$(jnum "$s" total_time_s)" -v E="$(jnum "$s" eval_step_s)" \
           -v u="$(jnum "$s" utilization)" -v ps="$(jnum "$s" usd_per_step)" \
           -v pm="$(jnum "$s" usd_per_million_tokens)" -v j="$(jnum "$s" joules_per_step)" \
           -v tt="$(jnum "$s" time_to_train_s)" -v ut="$(jnum "$s" usd_to_train)" '
        function near(a, b) { return a > 0 && (a - b) / b < 1e-6 && (b - a) / b < 1e-6 }
        BEGIN { want = 60 + 1000 * T + 5 * 2 * E + 4 * 0.5
                exit !(near(ps, 8 * 0.54 * T / 3600) && near(pm, ps / (16 * 512 / 1e6)) &&
                       near(j, 8 * (60 + 140 * u) * T) && near(tt, want) &&
                       near(ut, 8 * 0.54 * want / 3600) && E > T / 5 && E < 2 * T / 3) }' \
    && grep -q '^time to train: 1\.06 min (1000 steps of .*5 evaluations of 2 forward steps' "$t/tr.out" \
    && grep -q '^cost: \$.* per step at \$0\.54 per chip-hour (3y) x 8 chips' "$t/tr.out" \
    && grep -q '<table id="cost">.*' "$t/tr/report.html" && grep -q '>USD to train</td>' "$t/tr/report.html" \
    && ok || bad "cost and time to train: $(grep -A3 '"cost"' "$t/tr/summary.json")"
# goodput: without checkpoint keys takes train:'s: every 250 steps, 8 chips x 1 GB at 8 x 2 GB/s
# (C = 0.5 s); by hand from the step T: tau = 250 T, lambda = 8 / (1000 h), R = 600 s,
# goodput = tau / (tau + C) x (1 - lambda ((tau + C) / 2 + R))
"$bin" run tests/data/train_tiny.yaml -o "$t/gpt" -q --trace none \
        --set goodput.mtbf_per_chip_hours=1000 --set goodput.restart_time_s=600 \
    && awk -v T="$(jnum "$t/gpt/summary.json" step_time_s)" -v c="$(jnum "$t/gpt/summary.json" checkpoint_write_s)" \
           -v g="$(sed -n 's/.*"lost_per_failure_s": [^,]*, "goodput": \([0-9.e+-]*\).*/\1/p' "$t/gpt/summary.json")" '
        BEGIN { tau = 250 * T; l = 8 / 3.6e6; want = tau / (tau + 0.5) * (1 - l * ((tau + 0.5) / 2 + 600))
                exit !(c == 0.5 && g > 0 && (g - want) ^ 2 < 1e-16 * want ^ 2) }' \
    && ok || bad "goodput from train:'s checkpoints: $(grep -o '"goodput": {[^}]*}' "$t/gpt/summary.json")"
# a price given overrides the list price; v7 lists none: no cost block without one
"$bin" run tests/data/train_tiny.yaml -o "$t/tr2" --trace none -q \
        --set cost.commitment=on_demand --set cost.price_usd_per_chip_hour=3.6 \
    2>"$t/tr2.err"; [ $? = 2 ] && grep -q 'cost.commitment: expected either a commitment or a price' "$t/tr2.err" \
    && "$bin" run tests/data/model_int8.yaml -o "$t/tr3" --trace none -q --set cost.price_usd_per_chip_hour=3.6 \
    && awk -v T="$(jnum "$t/tr3/summary.json" total_time_s)" -v ps="$(jnum "$t/tr3/summary.json" usd_per_step)" \
        'BEGIN { exit !(ps > 0 && (ps - 8 * 3.6 * T / 3600) ^ 2 < 1e-18 * ps ^ 2) }' \
    && grep -q '"commitment": "given"' "$t/tr3/summary.json" \
    && ok || bad "cost.price_usd_per_chip_hour: $(cat "$t/tr2.err")"
# serving: the run's cost, every chip for its duration D at v6e's on-demand list price, by
# hand 4 chips x $2.70 x D / 3600, and per million output tokens (16 requests x 32 tokens)
"$bin" run configs/scenarios/serve_llama3_8b_v6e.yaml -o "$t/svcost" -q \
    && awk -v D="$(jnum "$t/svcost/summary.json" duration_s)" -v u="$(jnum "$t/svcost/summary.json" usd)" \
           -v m="$(jnum "$t/svcost/summary.json" usd_per_million_output_tokens)" \
        'BEGIN { w = 4 * 2.7 * D / 3600; exit !(u > 0 && (u - w) ^ 2 < 1e-16 * w ^ 2 &&
                 (m - w / (16 * 32 / 1e6)) ^ 2 < 1e-16 * m ^ 2) }' \
    && ok || bad "serving cost: $(grep '"cost"' "$t/svcost/summary.json")"
# a sweep whose base has train: ranks its points by time to train (issue 29.6): the same 8.192M
# tokens at batches 8, 16 and 64; the best point is the one with the least time_to_train_s in
# sweep.csv, not the one with the shortest step (batch 8)
"$bin" sweep tests/data/sweeps/train_batch.yaml -o "$t/swt" -j 2 >"$t/swt.out" 2>&1 \
    && grep -q '"rank_by": "time_to_train_s"' "$t/swt/sweep.json" \
    && awk -F, -v best="$(sed -n 's/.*"best_point": \([0-9]*\),.*/\1/p' "$t/swt/sweep.json")" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { tt = $(c["time_to_train_s"]); ts = $(c["time_s"])
          if (bt == "" || tt < bt) { bt = tt; b = $1 }
          if (bs == "" || ts < bs) { bs = ts; s = $1 } }
        END { exit !(b == best && b != s && s == 0) }' "$t/swt/sweep.csv" \
    && grep -q '^best: point 2, .* time to train .* (ranked by it)' "$t/swt.out" \
    && ok || bad "sweep ranked by time to train: $(cat "$t/swt.out")"
# "Your own kernel" (docs/user-guide.md): the shipped pallas_call scenarios. The fused matmul +
# bias + GeLU, grid (4, 4, 8): x and w fetched every step (2 x 128), b and o once per (i, j)
# (2 x 16) = 288 DMAs, and it beats the unfused matmul + two element-wise passes. The int8-weight
# matmul, grid (1, 4, 8): x 32 x 256 KiB + w 32 x 512 KiB (int8) + o 4 x 512 KiB + scale
# 4 x 32 KiB (a (1, 1024) f32 block pads to 8 sublanes) = 27394048 bytes in 72 DMAs, less time
# than the same matmul with bf16 weights
"$bin" run configs/scenarios/pallas_fused_matmul_gelu.yaml -o "$t/pf" -q --trace none \
    && grep -o '"dmas": [0-9]*' "$t/pf/summary.json" | head -n 1 | grep -qx '"dmas": 288' \
    && grep -o '"kind": "[a-z_]*", "start_s": [^,]*, "end_s": [^,]*, "time_s": [0-9.e+-]*' "$t/pf/summary.json" \
       | awk '{ if ($2 == "\"pallas_call\",") f += $NF; else u += $NF } END { exit !(f > 0 && u > f) }' \
    && ok || bad "fused pallas_call: $(grep -o '"dmas": [0-9]*' "$t/pf/summary.json" | head -n 1)"
"$bin" run configs/scenarios/pallas_int8_weight_matmul.yaml -o "$t/pi" -q --trace none \
    && grep -o '"dmas": [0-9]*\|"hbm_bytes": [0-9]*' "$t/pi/summary.json" | head -n 2 | tr '\n' ' ' \
       | grep -qx '"hbm_bytes": 27394048 "dmas": 72 ' \
    && ok || bad "int8-weight pallas_call: $(grep -o '"dmas": [0-9]*\|"hbm_bytes": [0-9]*' "$t/pi/summary.json" | head -n 2)"
# pipeline parallelism (configs/models/pipeline-small-v5e-8.yaml): 4 stages, 8 microbatches of
# 2 sequences, GPipe: a pass is 8 + 4 - 1 = 11 iterations of 16 / 4 = 4 layers, the bubble
# (4 - 1) / (8 + 4 - 1) = 0.272727; after each iteration a stage sends 2 x 1024 tokens x 1024
# x 2 B = 4194304 B to the next (a ring all-gather of 4194304 / 3 = 1398101 B a piece)
"$bin" run configs/models/pipeline-small-v5e-8.yaml -o "$t/pp" --trace none >"$t/pp.out" 2>&1 \
    && grep -q '"pipeline": {"stages": 4, "schedule": "gpipe", "num_pipeline_microbatches": 8, "num_pipeline_repeats": 1, "iterations": 11, "bubble": 0.272727}' "$t/pp/summary.json" \
    && grep -q '"name": "pipe_fwd", "count": 11' "$t/pp/summary.json" \
    && grep -q '^pipeline: 4 stages, 8 microbatches (gpipe, 1 repeats): 11 iterations a pass, bubble 27.3% of the step' "$t/pp.out" \
    && "$bin" expand configs/models/pipeline-small-v5e-8.yaml 2>/dev/null \
       | grep -q '{op: all_gather, name: stage_send, bytes: 1398101, groups: \[pipeline\]}' \
    && ok || bad "pipeline: $(grep '^pipeline' "$t/pp.out")"
# mixture of experts (configs/models/moe-small-v5e-8.yaml): 16 / (4 x 2) = 2 sequences, 2048
# tokens per device, 2 experts each: the dispatch buffer 2048 x top_k 2 x 1024 x 2 B x the
# busiest device's load min(1.3, capacity 1.25) = 10485760 B; one hot expert at 1.3 x the mean
# over a capacity of 1.25: (1.3 - 1.25) / 8 = 0.625 % of the routed tokens dropped
"$bin" run configs/models/moe-small-v5e-8.yaml -o "$t/moe" --trace none >"$t/moe.out" 2>&1 \
    && grep -q '"moe": {"sparse_matmul": true, "capacity_factor": 1.25, "expert_load_imbalance": 1.3, "dropped_share": 0.006250}' "$t/moe/summary.json" \
    && grep -q '^experts: grouped matmul (sparse_matmul), capacity factor 1.25, load imbalance 1.3: 0.63% of routed tokens dropped' "$t/moe.out" \
    && "$bin" expand configs/models/moe-small-v5e-8.yaml 2>/dev/null \
       | grep -q '{op: all_to_all, name: dispatch, bytes: 10485760, groups: \[expert\]}' \
    && ok || bad "moe: $(grep '^experts' "$t/moe.out")"
# faults: a ring all-gather with one link down takes the detour's time. v5e: one link direction
# 45 GB/s x ici.efficiency 0.95 = 42.75e9 B/s. A bidirectional all-gather of 8 MiB per chip over a
# ring of 8 takes 7 steps, each sending 4 MiB each way. With the link between chips 3 and 4 down
# (both ways), chip 3's +1 half goes the other way round (7 hops over the -1 links) and chip 4's
# -1 half over the +1 links: every link on a detour carries two halves a step, so each step
# takes at least 8 MiB / 42.75e9 instead of 4 MiB / 42.75e9, +98.11 us, +686.8 us in all. A
# link at half its bandwidth (factor 0.5) slows the same halves to 4 MiB / 21.375e9: the same
# +686.8 us, as its steps stay in step. The detours do not: a leg of chip 3's push shares each
# -1 link with that link's own half only while their steps overlap, and the chain of steps
# behind the two detoured chips falls out of step, so a step takes more than the two halves
# (exact fidelity: +1.449 ms); fast runs the passes step by step when a link is faulty
# (kernels/collective.c) and gives the same, above the +686.8 us bound.
fsum() { grep -o "\"$2\": [0-9.e+-]*" "$1" | head -n 1 | awk '{ print $2 }'; }
near() { awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b
    exit !(m > 0 && d <= tol * m) }'; }
"$bin" run tests/data/faults_ring.yaml --fidelity exact -o "$t/frx" -q --trace none
for bw in 0 0.5; do
    want=686.79e-6
    [ "$bw" = 0 ] && want=$(fsum "$t/frx/summary.json" total_time_delta_s)
    "$bin" run tests/data/faults_ring.yaml --set faults.0.bandwidth_factor=$bw -o "$t/fr$bw" -q \
        --trace none \
        && near "$(fsum "$t/fr$bw/summary.json" total_time_delta_s)" "$want" 0.01 \
        && awk -v d="$(fsum "$t/fr$bw/summary.json" total_time_delta_s)" 'BEGIN { exit !(d > 680e-6) }' \
        && grep -q '"moved": \[' "$t/fr$bw/summary.json" && grep -q '"name": "gather", "kind": "all_gather"' "$t/fr$bw/summary.json" \
        && "$t/jsoncheck" "$t/fr$bw/summary.json" \
        && ok || bad "faults: link factor $bw: the all-gather moved by $(fsum "$t/fr$bw/summary.json" total_time_delta_s), not $want"
done
# ... a 10 % slower chip (compute_factor 0.9) delays an FSDP step by its compute on the critical
# path: the reduce-scatter after the matmul waits for it. The 4096^3 matmul in 512^3 blocks is
# 512 grid steps; each step's MXU time is 2 x 512^3 / 197e12 + a 128-row fill/drain at 1.5 GHz
# = 1.4479 us (741.3 us in all), its VPU time 256 vreg stores (acc += dot) at 1 a cycle, plus
# 256 for the first (acc = 0) and the last (the cast) of each of the 64 output blocks' 8 steps:
# 64 x 10 x 256 cycles / 1.5 GHz = 109.2 us. Compute 850.6 us at 90 % takes 1/0.9 as long:
# +94.5 us, and the step is that much longer.
"$bin" run tests/data/faults_fsdp.yaml -o "$t/fs" -q --trace none \
    && near "$(fsum "$t/fs/summary.json" total_time_delta_s)" 94.51e-6 0.005 \
    && ok || bad "faults: the straggler delayed the step by $(fsum "$t/fs/summary.json" total_time_delta_s), not 94.5 us"
# ... folding on or off gives the same times with a fault present (a fault stops the fold)
"$bin" run tests/data/faults_fsdp.yaml -o "$t/fsa" -q --trace none --all-chips \
    && grep -q '"simulated_chips": 16' "$t/fs/summary.json" \
    && cmp -s "$t/fs/summary.json" "$t/fsa/summary.json" \
    && ok || bad "faults: folding on and off differ with a fault present"
# ... the same step without the fault folds (16 chips -> fewer) and takes the reference's time
sed '/^faults:/,/compute_factor/d' tests/data/faults_fsdp.yaml >"$t/nofault.yaml"
"$bin" run "$t/nofault.yaml" -o "$t/nf" -q --trace none --all-chips --no-kernel-memo \
    && [ "$(fsum "$t/nf/summary.json" total_time_s)" = "$(fsum "$t/fs/summary.json" reference_total_time_s)" ] \
    && ok || bad "faults: the reference is not the run without faults"
# ... a lost slice: the DCN all-reduce runs over the survivors. A ring all-reduce over n slices
# moves 2 (n - 1) / n x 64 MiB per chip over its share of its host's NICs, 25 GB/s / 8 chips =
# 3.125e9 B/s: 32.21 ms over 4 slices, 28.63 ms over 3; and two DCN steps fewer (10 us each):
# -3.599 ms. A dead chip of slice 3 takes its slice out the same way.
for f in '{slice_lost: 3}' '{chip: [1, 2], slice: 3, dead: true}'; do
    "$bin" run tests/data/faults_multislice.yaml --set "faults.0=$f" -o "$t/ml" -q --trace none \
        && near "$(fsum "$t/ml/summary.json" total_time_delta_s)" -3.599e-3 0.01 \
        && ok || bad "faults: $f: the DCN all-reduce moved by $(fsum "$t/ml/summary.json" total_time_delta_s), not -3.599 ms"
done
# ... a fault with a start time: a half-speed link from 1 ms (after the 0.72 ms all-gather)
# moves nothing; from 0.4 ms, only the bytes after it slow down: less than the whole +686.8 us
"$bin" run tests/data/faults_ring.yaml --set faults.0.bandwidth_factor=0.5 --set faults.0.at_s=1e-3 \
        -o "$t/fat" -q --trace none \
    && grep -q '"total_time_delta_s": 0.000000000e+00, "moved": \[\]' "$t/fat/summary.json" \
    && "$bin" run tests/data/faults_ring.yaml --set faults.0.bandwidth_factor=0.5 \
        --set faults.0.at_s=4e-4 -o "$t/fat" -q --trace none \
    && awk -v d="$(fsum "$t/fat/summary.json" total_time_delta_s)" 'BEGIN { exit !(d > 100e-6 && d < 686e-6) }' \
    && ok || bad "faults: a link slowed from at_s: moved by $(fsum "$t/fat/summary.json" total_time_delta_s)"
# ... a chip's HBM at half its bandwidth: a 64 MiB copy reads and writes 2 x 64 MiB, 163.9 us at
# 819 GB/s, 327.8 us at half: +163.9 us
"$bin" run tests/data/faults_hbm.yaml -o "$t/fh" -q --trace none \
    && near "$(fsum "$t/fh/summary.json" total_time_delta_s)" 163.88e-6 0.005 \
    && ok || bad "faults: a half-speed HBM moved the copy by $(fsum "$t/fh/summary.json" total_time_delta_s), not 163.9 us"
# issue 31.7: a model sweep's report.html has report.md's MFU, tokens/s and memory per chip: each
# point's tokens/s is its batch x 512 tokens over its step time in sweep.csv (4 digits)
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
         { printf "<tr><td>%s[^<]*</td><td>%s</td>.*<td>%.1f%%</td><td>%.4g</td><td>[0-9.]* MiB</td>\n",
                  $1, $2, 100 * $(c["mfu"]), $2 * 512 / $(c["time_s"]) }' "$t/swt/sweep.csv" > "$t/swt.re"
[ "$(wc -l < "$t/swt.re")" = 3 ] && grep -q '<th>MFU</th><th>tokens/s</th><th>memory/chip</th>' "$t/swt/report.html" \
    && [ "$(while read -r re; do grep -c "$re" "$t/swt/report.html"; done < "$t/swt.re" | tr -d '\n')" = 111 ] \
    && ok || bad "sweep report.html: no model metrics: $(grep '<tr><td>0' "$t/swt/report.html")"
# compare: a sweep with itself lists each point's model metrics, unchanged
"$bin" compare "$t/swt" "$t/swt" > "$t/swc.out" 2>&1 && grep -q '^model metrics, A -> B:' "$t/swc.out" \
    && [ "$(grep -c 'MFU [0-9.]*% -> [0-9.]*% (+0.0%), tokens/s .* (+0.0%), memory/chip' "$t/swc.out")" = 3 ] \
    && ok || bad "compare sweeps: model metrics: $(cat "$t/swc.out")"
# a decode step's MBU (configs/models/llama3-8b-decode-v6e-8.yaml, tensor 8 over v6e-8): per chip
# the bf16 weights, 8,030,261,248 params x 2 bytes / 8 = 2,007,565,312 bytes, and the KV cache, 32
# layers x K and V x 1 KV head (8 over tensor 8) x 128 x 2 bytes x 64 sequences x 2049 tokens
# (2048 cached + the new one) = 2,148,532,224; MBU = 4,156,097,536 / (step time x 1,638 GB/s)
"$bin" run configs/models/llama3-8b-decode-v6e-8.yaml -o "$t/mbu" --trace none > "$t/mbu.out" \
    && awk -v T="$(jnum "$t/mbu/summary.json" total_time_s)" -v u="$(jnum "$t/mbu/summary.json" mbu)" \
           -v b="$(jnum "$t/mbu/summary.json" mbu_bytes_per_chip)" \
        'BEGIN { w = (2007565312 + 32 * 2 * 128 * 2 * 64 * 2049) / (T * 1638e9)
                 exit !(b == 4156097536 && (u - w) ^ 2 < 1e-12 && u > 0.2 && u < 0.4) }' \
    && grep -q "^MBU $(awk -v u="$(jnum "$t/mbu/summary.json" mbu)" 'BEGIN { printf "%.1f", 100 * u }')%: 3.87 GiB read per chip" "$t/mbu.out" \
    && ok || bad "decode MBU: $(grep MBU "$t/mbu.out")"
# compare two model steps: step time, MFU, tokens/s, memory per chip and MBU, A -> B; at 32
# sequences the tokens per step halve
"$bin" run configs/models/llama3-8b-decode-v6e-8.yaml --set model.batch=32 -o "$t/mbu32" -q --trace none \
    && "$bin" compare "$t/mbu" "$t/mbu32" > "$t/mbuc.out" 2>&1 \
    && grep -q '^model (decode step -> decode step), mbu -> mbu32:' "$t/mbuc.out" \
    && grep -q "^  tokens/s  *$(awk -v a="$(jnum "$t/mbu/summary.json" tokens_per_s)" -v b="$(jnum "$t/mbu32/summary.json" tokens_per_s)" -v x="$(jnum "$t/mbu/summary.json" total_time_s)" -v y="$(jnum "$t/mbu32/summary.json" total_time_s)" \
        'BEGIN { if ((a - 64 / x) ^ 2 > 1e-6 * a ^ 2 || (b - 32 / y) ^ 2 > 1e-6 * b ^ 2) print "WRONG"; printf "%.4g -> %.4g", a, b }')" "$t/mbuc.out" \
    && grep -q '^  MBU  *[0-9.]*% -> [0-9.]*%' "$t/mbuc.out" && grep -q '^  memory/chip  *3.87 GiB -> ' "$t/mbuc.out" \
    && grep -q '^  MFU ' "$t/mbuc.out" && grep -q '^  step time ' "$t/mbuc.out" \
    && ok || bad "compare model steps: $(cat "$t/mbuc.out" | tail -8)"
# issue 31.6: a sweep records each point's wall time and peak memory, measured on the point's
# own process (wait4), appended to sweep.csv and sweep.json; every point ran, so every value is
# positive: the peak above 1 MiB (the binary and SimGrid mapped) and below 2 GiB, the points' wall
# times (-j 1: one after the other) adding up to at most the sweep's own wall time. With stderr a
# file, progress lines: at least the last one, 6/6 points done
TPUSIM_PROGRESS_INTERVAL=0.01 "$bin" sweep tests/data/sweeps/matmul_blocks.yaml -o "$t/swu" -j 1 \
    > "$t/swu.out" 2> "$t/swu.err" \
    && head -n 1 "$t/swu/sweep.csv" | grep -q ',status,reason,wall_s,peak_rss_bytes$' \
    && awk -F, -v total="$(sed -n 's/^sweep .* in \([0-9.]*\) s with -j 1$/\1/p' "$t/swu.out")" '
        NR > 1 { n++; w += $(NF - 1); if (!($(NF - 1) > 0 && $NF > 1048576 && $NF < 2147483648)) bad++ }
        END { exit !(n == 6 && !bad && total != "" && w <= total + 0.05) }' "$t/swu/sweep.csv" \
    && [ "$(grep -c '"wall_s": [0-9.]*, "peak_rss_bytes": [0-9]*}' "$t/swu/sweep.json")" = 6 ] \
    && grep -q '^progress: 6/6 points done (100%), 0 running, [0-9:]* elapsed, ETA 0:00$' "$t/swu.err" \
    && ok || bad "sweep wall_s/peak_rss_bytes/progress: $(cat "$t/swu/sweep.csv" "$t/swu.err")"
# Compiler flags as what-ifs (issue 30.5). With XLA's async collective fusion off, a
# collective blocks the TensorCore's stream: nothing overlaps, no collective time is hidden,
# and the step is at least chip 0's ops one after the other (their per-core times) and at most
# the sum of the ops' times (an op's time is its slowest chip's: on a line the chips end a
# reduce-scatter apart, and the next gather waits for the last); with the flags as they are,
# the gathers and scatters hide behind compute (the step is shorter than that sum).
# xla_tpu_overlap_compute_collective_tc: false means the same.
opsum() { python3 -c 'import json,sys; s = json.load(open(sys.argv[1]))
print(repr(sum(o["time_s"] for o in s["ops"])), repr(s["total_time_s"]), repr(s["time_by_category_s"]["collective_hidden"]), repr(sum(o["per_core"][0]["time_s"] for o in s["ops"])))' "$1"; }
"$bin" run tests/data/xla_flags_fsdp.yaml -o "$t/xf0" -q --trace none \
    && opsum "$t/xf0/summary.json" | awk '{ exit !($2 < $1 && $3 > 0) }' \
    && ok || bad "xla_flags: the default step hides nothing: $(opsum "$t/xf0/summary.json")"
for f in xla_tpu_enable_async_collective_fusion xla_tpu_overlap_compute_collective_tc; do
    "$bin" run tests/data/xla_flags_fsdp.yaml --set "xla_flags.$f=false" -o "$t/xf1" -q --trace none \
        && opsum "$t/xf1/summary.json" | awk '{ exit !($3 == 0 && $4 <= $2 * (1 + 1e-9) && $2 <= $1 * (1 + 1e-9)) }' \
        && ok || bad "xla_flags: $f false: step, sum of ops, hidden: $(opsum "$t/xf1/summary.json")"
done
# ... the reduce-scatter's flag alone: the gradients' scatter joins the stream (the expanded
# step writes no waits for it: it waits for the op before, the op after for it), the weight
# gathers stay async (the rest of a layer's after its first matmul's part only)
"$bin" expand tests/data/xla_flags_fsdp.yaml \
        --set xla_flags.xla_tpu_enable_async_collective_fusion_fuse_reduce_scatter=false >"$t/xfe" \
    && grep -q '{op: reduce_scatter, name: grad_rs, bytes: [0-9]*, groups: \[fsdp\]}$' "$t/xfe" \
    && grep -q 'name: wgather, .*after: \[wgather1\]}' "$t/xfe" \
    && ok || bad "xla_flags: the reduce-scatter's flag: $(grep 'grad_rs\|wgather' "$t/xfe")"
# ... xla_tpu_scoped_vmem_limit_kib is the chip's scoped VMEM limit: splash attention's 4096 x
# 4096 blocks need 18 MiB (refused under v5p's 16 MiB) and run under 32 MiB
sp='{op: splash_attention, q_heads: 16, q_seq_len: 8192, head_dim: 128, mask: {type: causal}, mode: fwd, block_sizes: {block_q: 4096, block_kv: 4096}}'
printf 'chip: v5p\nworkload:\n  - %s\n' "$sp" >"$t/xfs.yaml"
! "$bin" check "$t/xfs.yaml" 2>/dev/null \
    && "$bin" run "$t/xfs.yaml" --set xla_flags.xla_tpu_scoped_vmem_limit_kib=32768 -o "$t/xfs" -q --trace none \
    && ok || bad "xla_flags: the scoped VMEM limit did not let the 18 MiB blocks run"
# Error bars (issue 30.4): the tiny step's critical-path ops give a band below the model-step
# family's 9.3 %, which floors it: sigma = 0.0933 x the step, the band the step -/+ sigma, and
# the console's total line says so
"$bin" run tests/data/xla_flags_fsdp.yaml -o "$t/eb" --trace none >"$t/eb.out" \
    && python3 -c 'import json,sys; s = json.load(open(sys.argv[1])); u = s["uncertainty"]; T = s["total_time_s"]
ok = abs(u["sigma_s"] - 0.0933 * T) <= 1e-9 * T and u["floored"] and u["ops_sigma_s"] < u["sigma_s"]
ok = ok and abs(u["low_s"] - (T - u["sigma_s"])) <= 1e-9 * T and abs(u["high_s"] - (T + u["sigma_s"])) <= 1e-9 * T
ok = ok and all(o["uncertainty_family"] in ("pallas_kernel", "collective", "xla_op") for o in s["ops"])
sys.exit(not ok)' "$t/eb/summary.json" \
    && grep -q '^total [0-9.]* ms ± [0-9.]* us (9.3%, 68% band, the model-step floor' "$t/eb.out" \
    && ok || bad "error bars: $(grep '^total' "$t/eb.out")"
# issue 29.2: int8 training as MaxText's AQT (tests/data/model_aqt.yaml, v5e, 2048 tokens per
# chip, D 4096, F 14336): the dense matmuls -- forward QKV, out, up, down (4), the full
# remat's recomputed QKV, out, up (3), the dgrad and wgrad of the four (8) -- run in int8,
# 15, each after 2 quantizing fusions (30); the attention and the logits stay bf16. The
# weight of the MLP's up projection [4096, 2 x 14336] is quantized by reading 2 B and writing
# 1 B per element: 352321536 B at 819 GB/s = 430.2 us (HBM-bound; within 10 %). The up
# matmul [2048, 4096] x [4096, 28672] runs at the int8 peak (394 TOP/s against 197): at most
# 0.6 of its bf16 time. The MFU is against the int8 peak.
# (an op's time per instance from summary.json's ops: it need not be on the critical path)
aqt_time() { python3 -c 'import json,sys
o = [x for x in json.load(open(sys.argv[1]))["ops"] if x["name"] == sys.argv[2]]
print(o[0]["time_s"] / o[0]["instances"] if o else "")' "$1" "$2"; }
"$bin" expand tests/data/model_aqt.yaml >"$t/aqt.yaml" \
    && [ "$(grep -c 'op: matmul.*dtype: int8' "$t/aqt.yaml")" = 15 ] \
    && [ "$(grep -c 'op: fusion, name: [a-z_]*_q_[lr]hs.*dtype: int8.*vpu_ops: 7' "$t/aqt.yaml")" = 30 ] \
    && grep -q 'op: matmul, name: logits.*dtype: bf16' "$t/aqt.yaml" \
    && grep -q 'op: splash_attention, name: attn.*dtype: bf16' "$t/aqt.yaml" \
    && ok || bad "int8 (AQT) expansion: $(grep -c 'dtype: int8' "$t/aqt.yaml") int8 ops"
sed 's/, quantization: int8//' tests/data/model_aqt.yaml >"$t/aqt_bf16.yaml"
"$bin" run tests/data/model_aqt.yaml -o "$t/aqt" -q --trace none \
    && "$bin" run "$t/aqt_bf16.yaml" -o "$t/aqt16" -q --trace none \
    && grep -q '"mfu_peak_dtype": "int8"' "$t/aqt/summary.json" \
    && awk -v q="$(aqt_time "$t/aqt/summary.json" fwd.up_q_rhs)" \
           'BEGIN { exit !(q > 0.9 * 430.2e-6 && q < 1.1 * 430.2e-6) }' \
    && awk -v a="$(aqt_time "$t/aqt/summary.json" fwd.up)" -v b="$(aqt_time "$t/aqt16/summary.json" fwd.up)" \
           'BEGIN { exit !(a > 0 && a < 0.6 * b) }' \
    && ok || bad "int8 (AQT) step: quantize $(aqt_time "$t/aqt/summary.json" fwd.up_q_rhs) s, up int8 $(aqt_time "$t/aqt/summary.json" fwd.up) s, bf16 $(aqt_time "$t/aqt16/summary.json" fwd.up) s"
# issue 30.3: tpusim plan on 8 v5e chips (tests/data/plans/small.yaml states the hand count):
# the 2 data-8 candidates (16 B of state a parameter, unsharded: 17.15e9 B > 16622026752) are
# pruned and no other; the winner is the fastest ok point of the sweep's own table; every
# Pareto row is dominated by no ok row and every other ok row by some row
"$bin" plan tests/data/plans/small.yaml -o "$t/plan" -j 2 >"$t/plan.out" 2>"$t/plan.err"; rcp=$?
pl="$t/plan/plan.csv"
[ $rcp = 0 ] && [ "$(grep -c ',pruned_hbm,' "$pl")" = 2 ] \
    && [ "$(grep ',pruned_hbm,' "$pl" | grep -vc ',data 8,')" = 0 ] \
    && [ "$(grep -c ',ok,' "$pl")" = 6 ] && "$t/jsoncheck" "$t/plan/plan.json" && ok \
    || bad "plan pruning: exit $rcp, $(grep -c ',pruned_hbm,' "$pl" 2>/dev/null) pruned; $(head -c 300 "$t/plan.err")"
fast=$(awk '/"status": "ok"/ { ok = 1 } ok && match($0, /"time_s": [0-9.e+-]+/) {
    v = substr($0, RSTART + 10, RLENGTH - 10); ok = 0; if (m == "" || v + 0 < m + 0) m = v } END { print m }' "$t/plan/sweep/sweep.json")
win=$(awk -F, '$2 == 1 { print $11 }' "$pl")
awk -v a="$fast" -v b="$win" 'BEGIN { exit !(a != "" && a + 0 == b + 0) }' && ok \
    || bad "plan winner $win is not the fastest ok point $fast"
awk -F, 'NR > 1 && $3 == "ok" { n++; t[n] = $11 + 0; c[n] = $14 + 0; p[n] = $16 }
    END { for (i = 1; i <= n; i++) { dom = 0
            for (j = 1; j <= n; j++) if (j != i && t[j] <= t[i] && c[j] <= c[i] && (t[j] < t[i] || c[j] < c[i])) dom = 1
            if (dom == (p[i] == 1)) exit 1; np += p[i] }
          exit !(n == 6 && np >= 1) }' "$pl" && ok || bad "plan Pareto front"
grep -q '<svg id="pareto"' "$t/plan/report.html" && grep -q '<p id="why">the winner runs 2x4' "$t/plan/report.html" \
    && grep -q '^winner (by step_time): the winner runs 2x4' "$t/plan.out" && ok || bad "plan report"
# a second plan into the same directory is refused; --resume finishes it without running anything
"$bin" plan tests/data/plans/small.yaml -o "$t/plan" >/dev/null 2>"$t/plan2.err"; rc2=$?
"$bin" plan tests/data/plans/small.yaml -o "$t/plan" --resume 2>"$t/plan3.err" >/dev/null; rc3=$?
[ $rc2 = 2 ] && grep -q 'holds an earlier plan' "$t/plan2.err" && [ $rc3 = 0 ] \
    && grep -q 'resume: 6 of 6 points already done, 0 to run' "$t/plan3.err" && ok \
    || bad "plan rerun: exit $rc2 / $rc3"
# the plan's sweep in two shards, merged, then ranked by --resume (nothing run again): the same plan.csv
for i in 0 1; do "$bin" plan tests/data/plans/small.yaml -o "$t/plsh" --shard $i/2 -j 1 >/dev/null 2>&1; done
"$bin" sweep merge "$t/plsh/sweep" "$t/plsh/sweep-shard-0-of-2" "$t/plsh/sweep-shard-1-of-2" >/dev/null 2>&1
"$bin" plan tests/data/plans/small.yaml -o "$t/plsh" --resume >/dev/null 2>"$t/plsh.err" \
    && grep -q 'resume: 6 of 6 points already done, 0 to run' "$t/plsh.err" \
    && cmp -s "$t/plsh/plan.csv" "$t/plan/plan.csv" && ok || bad "plan through shards: $(tail -2 "$t/plsh.err")"
# bad plans: exit 2 with the reason, before enumerating; a space of more than 10^9 candidates
# (10 digits: 283 v5p slices and splits a 100000 USD budget pays for, 6 axes, 10 policies, 13 batches)
printf 'base: %s/tests/data/plans/small_base.yaml\nplan: {budget_usd_per_hour: 100000, slices: [1, 2, 4, 8, 16, 32, 64], axes: [data, fsdp, tensor, sequence, pipeline, expert], remat: [full, minimal, minimal_with_context, save_dot_with_context_except_mlp, save_dot_except_mlpwi, save_dot_except_mlp, save_qkv_proj, save_out_proj, qkv_proj_offloaded, minimal_offloaded], batch_per_chip: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096], max_points: 1000000}\n' "$(pwd)" >"$t/huge.yaml"
"$bin" plan "$t/huge.yaml" --generation v5p -o "$t/huge" >/dev/null 2>"$t/huge.err"; rch=$?
[ $rch = 2 ] && grep -q 'plan: expected a search space of at most plan.max_points = 1000000 candidates, got [0-9]\{10\} (' "$t/huge.err" \
    && [ ! -e "$t/huge" ] && ok || bad "plan huge space: exit $rch, $(cat "$t/huge.err")"
"$bin" plan tests/data/plans/small.yaml --budget-usd-per-hour 0.5 --dry-run -o "$t/cheap" >/dev/null 2>"$t/cheap.err"; rcb=$?
[ $rcb = 2 ] && grep -q '^--budget-usd-per-hour: expected at least the price of one v5e chip-hour (1.2 USD), got 0.5' "$t/cheap.err" && ok \
    || bad "plan budget below a chip: exit $rcb, $(cat "$t/cheap.err")"
printf 'base: %s/tests/data/plans/small_base.yaml\nplan:\n  budget_usd_per_hour: 0.25\n' "$(pwd)" >"$t/cheap.yaml"
"$bin" plan "$t/cheap.yaml" -o "$t/cheap2" >/dev/null 2>"$t/cheap2.err"; rcb2=$?
[ $rcb2 = 2 ] && grep -qF "$t/cheap.yaml:3:24: plan.budget_usd_per_hour: expected at least the price of one v5e chip-hour (1.2 USD), got 0.25" "$t/cheap2.err" && ok \
    || bad "plan budget below a chip in the spec: exit $rcb2, $(cat "$t/cheap2.err")"
"$bin" plan tests/data/plans/small.yaml --generation v9 --dry-run -o "$t/v9" >/dev/null 2>"$t/v9.err"; rcg=$?
[ $rcg = 2 ] && grep -q "^--generation: expected a chip preset (tpusim chips lists them), got 'v9'" "$t/v9.err" && ok \
    || bad "plan unknown generation: exit $rcg, $(cat "$t/v9.err")"
# a budget: every legal v5e slice of at most 4 chips' price, dry run: 1x1 (1 mesh) and 2x2
# (data x fsdp = 1x4, 2x2, 4x1) times 2 batches = 8 candidates; the state unsharded (1x1, and
# data 4 on 2x2) does not fit: 4 pruned
"$bin" plan tests/data/plans/small.yaml --budget-usd-per-hour 4.9 --dry-run -o "$t/bud" >"$t/bud.out" 2>&1
grep -q '^plan plan_small: 8 candidates on v5e: 0 illegal, 4 do not fit in HBM (pruned), 4 to simulate' "$t/bud.out" && ok || bad "plan budget: $(head -3 "$t/bud.out")"
# int8 weights and KV cache in serving (issue 28 item 6). A decode step of the tiny model
# (d_model 1024, 8 heads, 2 KV heads of 128, vocab 8192, 8 sequences) with quantization: int8
# reads each dense weight as int8: the qkv matmul's weights [1024, (8 + 2 x 2) x 128 = 1536]
# are 1024 x 1536 x 2 B = 3145728 B in bf16 and half of it in int8, so its HBM bytes fall by
# exactly 1572864 (x and the output unchanged); the logits' [1024, 8192] by 8388608; and the
# memory-bound logits matmul takes less time
printf 'chip: v6e\ntopology: {shape: [1, 1]}\nmesh: {tensor: 1}\nmodel: {arch: llama, layers: 1, d_model: 1024, heads: 8, kv_heads: 2, head_dim: 128, ffn: 2048, vocab: 8192, mode: decode, batch: 8, kv_len: 128, attention_kernel: rpa_v2}\n' >"$t/i8d.yaml"
i8mm() { # hbm_bytes time_s of the op named $2 in run $1
    python3 -c 'import json, sys
o = [o for o in json.load(open(sys.argv[1]))["ops"] if o["name"] == sys.argv[2]][0]
print(o["hbm_bytes"], o["time_s"])' "$1/summary.json" "$2"
}
"$bin" run "$t/i8d.yaml" -o "$t/i8a" -q --trace none \
    && "$bin" run "$t/i8d.yaml" -o "$t/i8b" -q --trace none --set model.quantization=int8 \
    && echo "$(i8mm "$t/i8a" layer.qkv) $(i8mm "$t/i8b" layer.qkv) $(i8mm "$t/i8a" logits) $(i8mm "$t/i8b" logits)" \
       | awk '{ exit !($1 - $3 == 1572864 && $5 - $7 == 8388608 && $8 < $6) }' \
    && ok || bad "int8 weights in a decode step: qkv $(i8mm "$t/i8a" layer.qkv) -> $(i8mm "$t/i8b" layer.qkv), logits $(i8mm "$t/i8a" logits) -> $(i8mm "$t/i8b" logits)"
# ... serving: the tiny model's KV cache (2 layers x 2 KV heads x 128 x (K, V)) is 2048 B a token
# in bf16, 1024 B in int8, so kv_cache_dtype: int8 holds twice the pages of 16 tokens in the same
# HBM (2p or 2p + 1 after the floor); quantization: int8 frees half the weights' bytes for
# pages: 34608128 params (2 x 8192 x 1024 embedding and head, 2 layers of 2621440 attention,
# 6291456 MLP and 2048 norm weights, 1024 final norm) x 1 B / 32768 B a bf16 page = 1056.2 pages
i8pages() { grep -o '"kv_cache": {"pages": [0-9]*' "$1/summary.json" | grep -o '[0-9]*$'; }
"$bin" run tests/data/serve/tiny.yaml -o "$t/i8s0" -q --trace none \
    && "$bin" run tests/data/serve/tiny.yaml -o "$t/i8s1" -q --trace none \
           --set serve.engine.kv_cache_dtype=int8 \
    && "$bin" run tests/data/serve/tiny.yaml -o "$t/i8s2" -q --trace none \
           --set serve.model.quantization=int8 \
    && echo "$(i8pages "$t/i8s0") $(i8pages "$t/i8s1") $(i8pages "$t/i8s2")" \
       | awk '{ d = $3 - $1; exit !(($2 == 2 * $1 || $2 == 2 * $1 + 1) && (d == 1056 || d == 1057)) }' \
    && ok || bad "int8 KV cache / weights: KV pages $(i8pages "$t/i8s0") -> $(i8pages "$t/i8s1") (int8 KV), $(i8pages "$t/i8s2") (int8 weights)"
# xla_tpu_enable_data_parallel_all_reduce_opt (issue 29.8): false sums the data-parallel
# gradients once after the backward (XLA's while-loop all-reduce code motion), exposed. Hand
# figure: llama L = 2, D = 1024, 8 heads x 128, F = 4096, V = 32000, f32 weights: a layer
# 4 D^2 + 3 D F + 2 D = 16,779,264 parameters, the rest 2 V D + D = 65,537,024 (untied head,
# final norm): 99,095,552 / fsdp 16 = 6,193,472 a chip, summed in bf16 (the model's dtype, as
# XLA sums the gradients, issue 27.9): G = 12,386,944 B. Over 2 slices the
# pair swaps halves twice (reduce-scatter, all-gather) through the chip's NIC share
# N = 25e9 / 8: T = G / N + 2 L = 3.963822 + 0.020 = 3.983822 ms (ideal ICI, no launch or DMA
# costs, free reductions); every chip sends G: 32 G = 396,382,208 B over the DCN, as the per-layer sums
# (true, the default) send in all.
printf 'chip: v5e\ntopology: {shape: [4, 4], slices: 2}\nmesh: {data: 2, fsdp: 16}\nmodel: {arch: llama, layers: 2, d_model: 1024, heads: 8, kv_heads: 8, head_dim: 128, ffn: 4096, vocab: 32000, batch: 64, seq_len: 512, mode: train}\n' >"$t/dpar.yaml"
dpsets="--set chip.ici.efficiency=1 --set chip.ici.hop_latency=0us --set chip.ici.step_latency=0us --set chip.ici.collective_latency=0us --set chip.tensorcore.dma_latency=0us --set chip.hbm.bandwidth=1000TBps --set chip.tensorcore.clock=100GHz --set chip.tensorcore.launch_overhead=0us --set chip.tensorcore.step_overhead=0us"
dpchk() { python3 -c 'import json,sys
s = json.load(open(sys.argv[1])); o = {x["name"]: x for x in s["ops"]}
r = o["grad_ar_rest"]; dcn = sum(x.get("dcn_bytes", 0) for x in s["ops"])
print(int("bwd.grad_ar" in o), repr(r["time_s"]), repr(o["adamw"]["start_s"] - r["end_s"]), repr(dcn), repr(s["total_time_s"]))' "$1/summary.json"; }
"$bin" run "$t/dpar.yaml" $dpsets -o "$t/dpar1" -q --trace none \
    && "$bin" run "$t/dpar.yaml" $dpsets --set xla_flags.xla_tpu_enable_data_parallel_all_reduce_opt=false \
        -o "$t/dpar0" -q --trace none \
    && dpchk "$t/dpar0" | awk '{ exit !($1 == 0 && $2 > 3.983822e-3 * 0.998 && $2 < 3.983822e-3 * 1.002 && $3 >= 0 && $4 == 396382208) }' \
    && dpchk "$t/dpar1" | awk -v t0="$(dpchk "$t/dpar0" | awk '{ print $5 }')" '{ exit !($1 == 1 && $4 == 396382208 && $5 < t0) }' \
    && ok || bad "xla_tpu_enable_data_parallel_all_reduce_opt: false $(dpchk "$t/dpar0"), true $(dpchk "$t/dpar1")"
# all-to-alls as stand-ins (engine/spmd.h): on a wrapped v5p 4x4x4 beside an all-gather over
# axis 0 (1 hop: a fold of 2 chips whose transfers keep their direction) the all-to-all takes its lone run's time; with a matmul
# started beside it (overlap: true), which the stand-in would not share the HBM with, the folded
# run (in a child) sees it and every chip is simulated: the summary is the --all-chips one
printf 'chip: {base: v5p}\ntopology: {shape: [4, 4, 4]}\nworkload:\n  - {op: all_gather, name: ag, bytes: 4MiB, axes: [0]}\n  - {op: all_to_all, name: a2a, bytes: 8MiB, axes: [0, 1]}\n  - {op: matmul, name: mm, m: 1024, k: 1024, n: 1024}\n' >"$t/sti.yaml"
sed 's/name: mm,/name: mm, overlap: true,/' "$t/sti.yaml" >"$t/sto.yaml"
"$bin" run "$t/sti.yaml" -o "$t/sti" -q --trace none 2>"$t/sti.err" \
    && grep -q '"simulated_chips": 2,' "$t/sti/summary.json" && ! grep -q "stand-in" "$t/sti.err" \
    && "$bin" run "$t/sto.yaml" -o "$t/sto" -q --trace none 2>"$t/sto.err" \
    && "$bin" run "$t/sto.yaml" -o "$t/sta" -q --trace none --all-chips \
    && grep -q '"simulated_chips": 64,' "$t/sto/summary.json" && ! grep -q "stand-in" "$t/sto.err" \
    && cmp -s "$t/sto/summary.json" "$t/sta/summary.json" \
    && ok || bad "stand-ins: $(grep -h simulated_chips "$t/sti/summary.json" "$t/sto/summary.json"; cat "$t/sti.err" "$t/sto.err")"
# a model step's embedding all-to-alls over fsdp 256 (workload/model.c embed_a2a) run as
# stand-ins: nothing beside them (the forward's first gather waits for the rows), so v5e 16x16
# still folds (to 2x2 with the direction-keeping fold) and the summary is --all-chips' but for the fold and the memo counts
printf 'chip: v5e\ntopology: {shape: [16, 16]}\nmesh: {fsdp: 256}\nmodel: {arch: llama, layers: 2, d_model: 1024, heads: 8, kv_heads: 8, head_dim: 128, ffn: 4096, vocab: 32000, batch: 256, seq_len: 512, mode: train}\n' >"$t/ema.yaml"
"$bin" run "$t/ema.yaml" -o "$t/ema" -q --trace none 2>"$t/ema.err" \
    && "$bin" run "$t/ema.yaml" -o "$t/emaa" -q --trace none --all-chips \
    && grep -q '"simulated_chips": 4,' "$t/ema/summary.json" && ! grep -q "stand-in" "$t/ema.err" \
    && grep -q '"name": "g_embed_a2a"' "$t/ema/summary.json" \
    && grep -v 'simulated_chips\|kernel_memo' "$t/ema/summary.json" >"$t/ema.s" \
    && grep -v 'simulated_chips\|kernel_memo' "$t/emaa/summary.json" >"$t/emaa.s" \
    && cmp -s "$t/ema.s" "$t/emaa.s" \
    && ok || bad "embedding all-to-alls as stand-ins: $(grep -h simulated_chips "$t/ema/summary.json"; cat "$t/ema.err")"
# a collective over a v7 chip's two devices too (chip_devices: 2, as a serving step's tensor
# parallelism over devices emits): an all-gather of 64 MiB a chip over axis 0 of a 2x2x1 adds,
# after the chips' part, the devices' swap of their halves over the die-to-die link, priced
# as an on-chip DMA through the chip's HBM: a ring step's 0.15 us + the DMA latency 0.1 us +
# both halves read and written, 2 x 64 MiB / (7.4e12 x 0.88 B/s) = 20.6108 us: 20.8608 us more
printf 'chip: v7\ntopology: {shape: [2, 2, 1]}\nworkload:\n  - {op: all_gather, bytes: 64MiB, axes: [0]}\n' >"$t/cd1.yaml"
sed 's/axes: \[0\]}/axes: [0], chip_devices: 2}/' "$t/cd1.yaml" >"$t/cd2.yaml"
cdt() { grep -o '"total_time_s": [^,]*' "$1/summary.json" | awk '{ print $2 }'; }
"$bin" run "$t/cd1.yaml" -o "$t/cd1" -q --trace none && "$bin" run "$t/cd2.yaml" -o "$t/cd2" -q --trace none \
    && awk -v a="$(cdt "$t/cd1")" -v b="$(cdt "$t/cd2")" 'BEGIN { d = (b - a) * 1e6; exit !(d > 20.8608 - 0.001 && d < 20.8608 + 0.001) }' \
    && ok || bad "chip_devices: all_gather $(cdt "$t/cd1") s without, $(cdt "$t/cd2") s with (want +20.8608 us)"
# serving on v7 with tensor parallelism over a chip's two devices (serve.mesh tensor counts
# devices): one chip, tensor: 2, serves its requests (it was refused: each device an engine)
printf 'chip: v7\ntopology: {shape: [1, 1, 1]}\nserve:\n  model: {preset: qwen3-8b}\n  mesh: {tensor: 2}\n  requests: {count: 4, concurrency: 2, input_len: 128, output_len: 8}\n' >"$t/sv7.yaml"
"$bin" run "$t/sv7.yaml" -o "$t/sv7" -q --trace none && grep -q '"completed": 4' "$t/sv7/summary.json" \
    && ok || bad "v7 serving over a chip's devices"
# reductions on the TensorCore (issue 29): a v5e ring of 4 reduce-scatters 16 MiB beside an
# 8192^3 matmul (about 95 ms, it outlasts the 0.25 ms collective); at hbm.efficiency 1
# (H = 819e9 B/s) each chip's VPU reduces 3/4 of 16 MiB, reading two chunks and writing one:
# 0.75 x 16777216 x 3 / 819e9 = 46.0906 us of TensorCore time the matmul loses, unless
# xla_tpu_enable_sparse_core_collective_offload_reduce_scatter moves them to the SparseCore
printf 'chip: v5e\ntopology: {shape: [4], wraparound: true}\nworkload:\n  - {op: reduce_scatter, name: rs, bytes: 16MiB, axes: [0], after: []}\n  - {op: matmul, name: mm, m: 8192, k: 8192, n: 8192, after: []}\n' >"$t/tcr.yaml"
tcrt() { python3 -c 'import json,sys; print(repr({o["name"]: o for o in json.load(open(sys.argv[1]))["ops"]}["mm"]["time_s"]))' "$1/summary.json"; }
"$bin" run "$t/tcr.yaml" -o "$t/tcr0" -q --trace none --set chip.hbm.efficiency=1 \
    && "$bin" run "$t/tcr.yaml" -o "$t/tcr1" -q --trace none --set chip.hbm.efficiency=1 \
        --set xla_flags.xla_tpu_enable_sparse_core_collective_offload_reduce_scatter=true \
    && awk -v a="$(tcrt "$t/tcr0")" -v b="$(tcrt "$t/tcr1")" 'BEGIN { d = (a - b) * 1e6; exit !(d > 46.0906 - 0.05 && d < 46.0906 + 0.05) }' \
    && ok || bad "reductions on the TensorCore: matmul $(tcrt "$t/tcr0") s, offloaded $(tcrt "$t/tcr1") s (want +46.0906 us)"
rm -rf "$t"
echo "e2e: $((n - fail)) passed, $fail failed"
[ "$fail" = 0 ]
