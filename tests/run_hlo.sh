#!/bin/sh
# tests/run_hlo.sh TPUSIM [DIR] -- HLO programs (program: {hlo: ...}) end to end
# against hand figures and hand-written scenarios. DIR holds the fixtures
# (default tests/data/hlo; make hlo-test passes freshly dumped ones, and then
# only the checks of the examples tools/hlo_dump.py writes run).
bin=$1
dir=${2:-tests/data/hlo}
fail=0; n=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
ok() { n=$((n + 1)); }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL hlo: $1"; }
# field OUT OP KEY: KEY of op OP in OUT/summary.json (total_time_s when OP is -)
field() {
    python3 -c 'import json,sys
s = json.load(open(sys.argv[1] + "/summary.json"))
if sys.argv[2] == "-": print(repr(s["total_time_s"])); sys.exit()
for o in s["ops"]:
    if o["name"] == sys.argv[2]: print(repr(o[sys.argv[3]]) if sys.argv[3] in o else "none"); sys.exit()
print("none")' "$@"
}
run() { "$bin" run "$1" -o "$t/$2" -q >/dev/null 2>"$t/$2.err" || { cat "$t/$2.err"; return 1; }; }
hand() { # hand NAME TOPOLOGY OP...: a scenario of one op on v5e
    printf 'chip: v5e\ntopology: {shape: [%s]}\nworkload:\n  - %s\n' "$2" "$3" > "$t/$1.yaml"
    run "$t/$1.yaml" "$1"
}
same() { python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-9 * abs(b))' "$1" "$2"; }

# A single dot, f32[256,512] x f32[512,1024] on one chip (a CPU dump: the fusion
# holding the dot is ynn_fusion): an einsum of batch 1, m 256, k 512, n 1024;
# 2·256·512·1024 = 268435456 flops, and the same time as that einsum by hand.
if run "$dir/dot.yaml" dot && hand dot_hand 1 "{op: einsum, name: d, batch: 1, m: 256, k: 512, n: 1024, dtype: f32, block: auto}"; then
    [ "$(field "$t/dot" ynn_fusion flops)" = 268435456 ] && ok || bad "dot: flops $(field "$t/dot" ynn_fusion flops), expected 268435456"
    same "$(field "$t/dot" ynn_fusion time_s)" "$(field "$t/dot_hand" d time_s)" && ok \
        || bad "dot: $(field "$t/dot" ynn_fusion time_s) s, the hand einsum $(field "$t/dot_hand" d time_s) s"
else bad "dot: the runs failed"; fi

# psum over 4 devices of a f32[1024,256] shard (1 MiB): a ring all-reduce
# sends 2·(4−1)/4 · 1 MiB per chip, 4 chips: 6291456 ICI bytes; the same time
# as all_reduce {bytes: 1048576} over the ring by hand.
if run "$dir/allreduce.yaml" ar && hand ar_hand 4 "{op: all_reduce, name: r, bytes: 1048576, axes: [0]}"; then
    [ "$(field "$t/ar" psum:7 ici_bytes)" = 6291456 ] && ok || bad "all-reduce: ICI bytes $(field "$t/ar" psum:7 ici_bytes), expected 6291456"
    same "$(field "$t/ar" psum:7 time_s)" "$(field "$t/ar_hand" r time_s)" && ok || bad "all-reduce: not the hand all_reduce's time"
else bad "allreduce: the runs failed"; fi

# lax.fori_loop of 4 iterations of tanh(h @ w), h f32[128,256], w f32[256,256]:
# a loop of count 4, the dot 4 times (4 · 2·128·256·256 = 67108864 flops),
# 4 times the time of that einsum alone.
if run "$dir/loop.yaml" loop && hand loop_hand 1 "{op: einsum, name: d, batch: 1, m: 128, k: 256, n: 256, dtype: f32, block: auto}"; then
    [ "$(field "$t/loop" while:6.ynn_fusion instances)" = 4 ] && ok || bad "loop: $(field "$t/loop" while:6.ynn_fusion instances) instances, expected 4"
    [ "$(field "$t/loop" while:6.ynn_fusion flops)" = 67108864 ] && ok || bad "loop: flops, expected 67108864"
    one=$(field "$t/loop_hand" d time_s)
    same "$(field "$t/loop" while:6.ynn_fusion time_s)" "$(python3 -c "print(4 * $one)")" && ok || bad "loop: not 4 x the body's dot"
else bad "loop: the runs failed"; fi

# loop.hlo.txt without its backend_config (loop_cond.hlo.txt): the trip
# count from the condition: the counter (element 0) starts at copy(constant
# 0), the body's wrapped_add adds constant 1, the condition's
# wrapped_compare is LT constant 4: 4 iterations, the same step as loop.yaml.
if [ -f "$dir/loop_cond.yaml" ]; then
    if run "$dir/loop_cond.yaml" loop_cond && [ -f "$t/loop/summary.json" ]; then
        [ "$(field "$t/loop_cond" while:6.ynn_fusion instances)" = 4 ] && ok || bad "loop_cond: $(field "$t/loop_cond" while:6.ynn_fusion instances) instances, expected 4"
        same "$(field "$t/loop_cond" -)" "$(field "$t/loop" -)" && ok || bad "loop_cond: not loop.yaml's step"
    else bad "loop_cond: the run failed"; fi
fi

# Convolutions as im2col matmuls (conv.hlo.txt, hand-written): x
# f32[8,32,32,64] (b01f) with a 3x3 kernel of 64 to 128 features: m = 8·32·32
# = 8192, k = 3·3·64 = 576, n = 128: 2·8192·576·128 = 1207959552 flops, the
# time of that einsum by hand; the depthwise one (feature_group_count=64,
# kernel f32[3,3,1,64]): k = 9, n = 64: 2·8192·9·64 = 9437184 flops.
if [ -f "$dir/conv.yaml" ]; then
    if run "$dir/conv.yaml" conv && hand conv_hand 1 "{op: einsum, name: c, batch: 1, m: 8192, k: 576, n: 128, dtype: f32, block: auto}"; then
        [ "$(field "$t/conv" conv flops)" = 1207959552 ] && ok || bad "conv: flops $(field "$t/conv" conv flops), expected 1207959552"
        same "$(field "$t/conv" conv time_s)" "$(field "$t/conv_hand" c time_s)" && ok || bad "conv: not the hand einsum's time"
        [ "$(field "$t/conv" depthwise flops)" = 9437184 ] && ok || bad "depthwise conv: flops $(field "$t/conv" depthwise flops), expected 9437184"
    else bad "conv: the runs failed"; fi
fi

# A Pallas TPU kernel (pallas.hlo.txt: tpu_custom_call, cost_estimate flops
# 2^31, bytes_accessed 6 MiB, transcendentals 2^20) as a pallas_call
# streaming 6 blocks of 1 MiB: 2147483648 flops; HBM bytes 6291456 + its
# 8x128 f32 output (4096) = 6295552; MXU busy 2^31 / 197e12 s = 10.901 us;
# the time at least the roofline max(10.901 us, 6291456 B / 819 GB/s =
# 7.682 us); no warning (it has an estimate).
if [ -f "$dir/pallas.yaml" ]; then
    if run "$dir/pallas.yaml" pallas; then
        same "$(field "$t/pallas" mm flops)" 2147483648 && ok || bad "pallas: flops $(field "$t/pallas" mm flops), expected 2147483648"
        [ "$(field "$t/pallas" mm hbm_bytes)" = 6295552 ] && ok || bad "pallas: HBM bytes $(field "$t/pallas" mm hbm_bytes), expected 6295552"
        python3 -c "import sys; t = float(sys.argv[1]); sys.exit(not (t >= 2**31 / 197e12 and t >= 6291456 / 819e9))" "$(field "$t/pallas" mm time_s)" \
            && ok || bad "pallas: $(field "$t/pallas" mm time_s) s, below the roofline"
        ! grep -q warning "$t/pallas.err" && ok || bad "pallas: warned"
    else bad "pallas: the run failed"; fi
fi

# The MLP on 8 devices (mesh fsdp 4 x tensor 2) on a 2x4 slice: w1's and w2's
# gathers over fsdp (groups [2,4]<=[4,2]T(1,0): every 2nd device), each chip
# receiving 3 shards of f32[32,128] = 3 · 16384 B, 8 chips: 393216; the
# all-reduce over tensor (groups of 2 neighbours) of f32[16,128] = 8192 B:
# 2·(1/2)·8192 per chip, 8 chips: 65536.
if run "$dir/mlp.yaml" mlp; then
    [ "$(field "$t/mlp" all-gather ici_bytes)" = 393216 ] && ok || bad "mlp: all-gather ICI bytes $(field "$t/mlp" all-gather ici_bytes), expected 393216"
    [ "$(field "$t/mlp" all-reduce:1 ici_bytes)" = 65536 ] && ok || bad "mlp: all-reduce ICI bytes, expected 65536"
else bad "mlp: the run failed"; fi

# Peak memory per device. dot: the parameters f32[256,512] and
# f32[512,1024] (524288 + 2097152 B) and the result f32[256,1024] (1048576):
# 3670016 B. loop: parameters 131072 + 262144 = 393216; live at the while:
# copy.7 (131072) and copy.8 (4) carried, and the body's peak at its tanh:
# ynn_fusion's 131072 + wrapped_add's 4 + tanh's 131072 = 262148;
# temporaries 393224, peak 786440 at while.6.
if [ -f "$t/dot/summary.json" ] && [ -f "$t/loop/summary.json" ]; then
    mem() { python3 -c 'import json,sys; p = json.load(open(sys.argv[1] + "/summary.json"))["program"]
print(p["peak_memory_bytes"], p["parameter_bytes"], p["peak_temporary_bytes"], p["peak_at"])' "$1"; }
    [ "$(mem "$t/dot")" = "3670016 2621440 1048576 ynn_fusion" ] && ok || bad "dot memory: $(mem "$t/dot"), expected 3670016 2621440 1048576 ynn_fusion"
    [ "$(mem "$t/loop")" = "786440 393216 393224 while.6" ] && ok || bad "loop memory: $(mem "$t/loop"), expected 786440 393216 393224 while.6"
fi

# The MLP's program: block. Its entry (mlp.hlo.txt) holds 3 parameters, 9
# fusions, 2 all-gathers and 1 all-reduce: 15 instructions, 3 collectives,
# module jit_mlp; lowered to 2 einsums (the two ynn_fusions hold the dots),
# 2 all_gathers, 1 all_reduce and 7 fusions (the other fusions: converts,
# each 1 VPU op per element, workload/hlo_work.c). Ops carry the
# metadata's op_name: all-gather's is "jit(mlp)/dot_general", the fusion
# wrapped_convert has none; in the trace, 6 tagged ops on 8 chips: 48 spans.
if [ -f "$t/mlp/summary.json" ]; then
    prog() { python3 -c 'import json,sys; p = json.load(open(sys.argv[1] + "/summary.json"))["program"]
for k in sys.argv[2].split("."): p = p[k]
print(p)' "$t/mlp" "$1"; }
    [ "$(prog module)/$(prog instructions)/$(prog collectives)/$(prog fusions)" = jit_mlp/15/3/9 ] \
        && ok || bad "mlp program: $(prog module)/$(prog instructions)/$(prog collectives)/$(prog fusions), expected jit_mlp/15/3/9"
    [ "$(prog lowered.einsum)/$(prog lowered.all_gather)/$(prog lowered.all_reduce)/$(prog lowered.fusion)" = 2/2/1/7 ] \
        && ok || bad "mlp program: lowered $(prog lowered), expected 2 einsums, 2 all_gathers, 1 all_reduce, 7 fusions"
    [ "$(prog source)" = "$dir/mlp.hlo.txt" ] && ok || bad "mlp program: source $(prog source)"
    [ "$(field "$t/mlp" all-gather op_name)" = "'jit(mlp)/dot_general'" ] && [ "$(field "$t/mlp" wrapped_convert op_name)" = none ] \
        && ok || bad "mlp: op_name $(field "$t/mlp" all-gather op_name), expected jit(mlp)/dot_general"
    [ "$(grep -o '"op_name": "jit(mlp)/dot_general"' "$t/mlp/trace.json" | wc -l)" -eq 48 ] && ok || bad "mlp: trace spans with op_name, expected 48"
fi

# The CLI shortcut: run --hlo FILE --chip v5e --topology 2x4 is mlp.yaml
# (the same chip, slice and program): the same step time; it needs
# --topology, and --topology alone is refused.
if [ -f "$t/mlp/summary.json" ] && "$bin" run --hlo "$dir/mlp.hlo.txt" --chip v5e --topology 2x4 -o "$t/mlp_cli" -q >/dev/null 2>&1; then
    same "$(field "$t/mlp_cli" -)" "$(field "$t/mlp" -)" && ok || bad "--hlo: $(field "$t/mlp_cli" -) s, mlp.yaml $(field "$t/mlp" -) s"
else bad "--hlo: the run failed"; fi
"$bin" check --hlo "$dir/mlp.hlo.txt" >/dev/null 2>"$t/cli.err"; rc=$?
[ $rc -eq 2 ] && grep -q 'needs --topology' "$t/cli.err" && ok || bad "--hlo without --topology: exit $rc"
"$bin" check "$dir/mlp.yaml" --topology 2x4 >/dev/null 2>"$t/cli.err"; rc=$?
[ $rc -eq 2 ] && grep -q 'go with --hlo' "$t/cli.err" && ok || bad "--topology without --hlo: exit $rc"
"$bin" check --hlo "$dir/mlp.hlo.txt" --topology 4x4 >/dev/null 2>"$t/cli.err"; rc=$?
[ $rc -eq 2 ] && grep -q "mlp.hlo.txt (--hlo):4:10: program.hlo: expected a program for the slice's 16 chips, got 8 devices" "$t/cli.err" \
    && ok || bad "--hlo on 16 chips: exit $rc, $(cat "$t/cli.err")"
"$bin" check --hlo "$dir/mlp.hlo.txt" --topology 2x0 >/dev/null 2>"$t/cli.err"; rc=$?
[ $rc -eq 2 ] && grep -q 'topology takes 1 to 3 sizes' "$t/cli.err" && ok || bad "--topology 2x0: exit $rc"

# Pallas kernels recognised by their kernel_name (pallas_named.hlo.txt, by
# hand): "_flash_attention_kernel" over q, k, v bf16[2,8,1024,128] runs as
# tpusim's flash_attention forward (batch 2, heads 8, 1024 x 1024, head_dim
# 128, not causal): 4·2·8·1024²·128 = 8589934592 flops, the time of that op
# written by hand; "matmul_kernel" over bf16[1024,2048] x bf16[2048,512] as
# matmul m 1024, k 2048, n 512: 2·1024·2048·512 = 2147483648 flops, the hand
# matmul's time (not the cost estimates' pricing).
if [ -f "$dir/pallas_named.yaml" ]; then
    if run "$dir/pallas_named.yaml" pn \
        && hand pn_fa 1 "{op: flash_attention, name: f, batch: 2, heads: 8, q_seq_len: 1024, kv_seq_len: 1024, head_dim: 128, dtype: bf16, causal: false, mode: fwd}" \
        && hand pn_mm 1 "{op: matmul, name: m, m: 1024, k: 2048, n: 512, dtype: bf16, block: auto}"; then
        [ "$(field "$t/pn" fa flops)" = 8589934592 ] && same "$(field "$t/pn" fa time_s)" "$(field "$t/pn_fa" f time_s)" \
            && ok || bad "pallas flash: $(field "$t/pn" fa flops) flops, $(field "$t/pn" fa time_s) s; by hand $(field "$t/pn_fa" f time_s) s"
        [ "$(field "$t/pn" mm flops)" = 2147483648 ] && same "$(field "$t/pn" mm time_s)" "$(field "$t/pn_mm" m time_s)" \
            && ok || bad "pallas matmul: $(field "$t/pn" mm flops) flops, $(field "$t/pn" mm time_s) s; by hand $(field "$t/pn_mm" m time_s) s"
    else bad "pallas_named: the runs failed"; fi
fi

# tools/hlo_dump.py's Llama example (dumped by make hlo-test only): the same
# training step with its 2 layers in a lax.scan (llama) and unrolled
# (llama_unrolled) on 8 devices, fsdp 4 x tensor 2: the scan is a while per
# pass (forward, backward: 2 loops of 2 trips), the unrolled program has none;
# XLA partitions both alike: the same matmul flops.
if [ -f "$dir/llama.yaml" ] && [ -f "$dir/llama_unrolled.yaml" ]; then
    if run "$dir/llama.yaml" llama && run "$dir/llama_unrolled.yaml" llama_u; then
        loops() { python3 -c 'import json,sys; p = json.load(open(sys.argv[1] + "/summary.json"))["program"]
print(p["while_loops"], p["lowered"].get("loop", 0))' "$1"; }
        mm() { python3 -c 'import json,sys; s = json.load(open(sys.argv[1] + "/summary.json"))
print(sum(o["flops"] for o in s["ops"] if o["kind"] == "einsum"))' "$1"; }
        [ "$(loops "$t/llama")" = "2 2" ] && [ "$(loops "$t/llama_u")" = "0 0" ] && ok \
            || bad "llama: loops $(loops "$t/llama") / $(loops "$t/llama_u"), expected 2 2 / 0 0"
        [ "$(mm "$t/llama")" = "$(mm "$t/llama_u")" ] && ok || bad "llama: matmul flops $(mm "$t/llama") scanned, $(mm "$t/llama_u") unrolled"
    else bad "llama: the runs failed"; fi
fi

[ -f "$dir/async.yaml" ] || { echo "hlo: $((n - fail)) of $n checks passed"; [ $fail -eq 0 ]; exit; }

# all-reduce-start ... dot ... all-reduce-done: the dot runs beside the
# all-reduce (the step takes the longer, the all-reduce); synchronous, the
# step is the two one after the other.
if run "$dir/async.yaml" async && run "$dir/sync.yaml" sync; then
    same "$(field "$t/async" -)" "$(field "$t/async" all-reduce-start time_s)" && ok || bad "async: the step is not the all-reduce's time"
    same "$(field "$t/sync" -)" "$(python3 -c "print($(field "$t/sync" all-reduce time_s) + $(field "$t/sync" dot:1 time_s))")" \
        && ok || bad "sync: the step is not the all-reduce then the dot"
else bad "async/sync: the runs failed"; fi
# ... the async program with xla_enable_async_all_reduce: false (issue 30.5): the all-reduce
# blocks the stream, the dot waits for it: the step is the two one after the other, the
# synchronous program's time; an all-gather flag leaves the all-reduce beside the dot.
if "$bin" run "$dir/async.yaml" -o "$t/asoff" -q --set xla_flags.xla_enable_async_all_reduce=false \
        >/dev/null 2>&1 \
    && "$bin" run "$dir/async.yaml" -o "$t/agoff" -q \
        --set xla_flags.xla_tpu_enable_async_collective_fusion_fuse_all_gather=false >/dev/null 2>&1; then
    same "$(field "$t/asoff" -)" "$(python3 -c "print($(field "$t/asoff" all-reduce-start time_s) + $(field "$t/asoff" dot:1 time_s))")" \
        && same "$(field "$t/asoff" -)" "$(field "$t/sync" -)" \
        && ok || bad "xla_flags: the all-reduce made synchronous: $(field "$t/asoff" -) s, not the sync program's $(field "$t/sync" -) s"
    same "$(field "$t/agoff" -)" "$(field "$t/async" -)" && ok || bad "xla_flags: an all-gather flag moved the all-reduce"
else bad "xla_flags: the runs failed"; fi

# async-start/async-done around a reduce-scatter (as TPU dumps write it) of
# f32[262144] (1 MiB) over 4 devices: (4−1)/4 · 1 MiB per chip, 4 chips:
# 3145728 ICI bytes, starting with the dot beside it; an async-start of a
# negate of bf16[1024,1024]: inlined, 2 MiB read and 2 MiB written per chip,
# 4 chips: 16777216 HBM bytes.
if run "$dir/async_rs.yaml" rs; then
    [ "$(field "$t/rs" reduce-scatter-start ici_bytes)" = 3145728 ] && ok || bad "async reduce-scatter: ICI bytes, expected 3145728"
    [ "$(field "$t/rs" reduce-scatter-start start_s)" = 0.0 ] && [ "$(field "$t/rs" dot:1 start_s)" = 0.0 ] \
        && ok || bad "async reduce-scatter: not beside the dot"
    [ "$(field "$t/rs" negate:1 hbm_bytes)" = 16777216 ] && ok || bad "async negate: HBM bytes, expected 16777216"
else bad "async_rs: the run failed"; fi

# A custom call priced by its bytes (f32[1024,256] read and written: 2 MiB)
# with a warning; a call inlined; a conditional's heavier branch (two exps).
if run "$dir/misc.yaml" misc; then
    [ "$(field "$t/misc" custom-call:1 hbm_bytes)" = 2097152 ] && ok || bad "custom-call: HBM bytes, expected 2097152"
    grep -q 'misc.hlo.txt:25:4: custom-call custom-call.1 ("my_kernel") is priced by its bytes only' "$t/misc.err" && ok || bad "custom-call: no warning"
    grep -q 'runs branch heavy, the most expensive of 2' "$t/misc.err" && ok || bad "conditional: no warning"
    [ "$(field "$t/misc" exp:2 instances)" = 1 ] && [ "$(field "$t/misc" neg:1 instances)" = none ] \
        && [ "$(field "$t/misc" tanh:1 instances)" = 1 ] && ok || bad "call/conditional: not inlined as expected"
else bad "misc: the run failed"; fi

# Replica groups in XLA's mesh-axes form (jax 0.10 prints them so):
# mesh[2,2,2] {'axis_2'} groups devices that differ in the last axis only,
# {0,1},{2,3},{4,5},{6,7} = [4,2]<=[8]; {'axis_0'} those that differ in the
# first, {0,4},{1,5},{2,6},{3,7} = [4,2]<=[2,4]T(1,0). The same program with
# the groups written in the iota form by hand runs the same collectives
# (ICI bytes and times); each all-reduce moves 2·(2−1)/2 · 512 B per chip.
if [ -f "$dir/mesh.yaml" ]; then
    sed -e "s/replica_groups=mesh\['axis_0'=2,'axis_1'=2,'axis_2'=2\] {'axis_2'}/replica_groups=[4,2]<=[8]/" \
        -e "s/replica_groups=mesh\['axis_0'=2,'axis_1'=2,'axis_2'=2\] {'axis_0'}/replica_groups=[4,2]<=[2,4]T(1,0)/" \
        "$dir/mesh.hlo.txt" > "$t/mesh_iota.hlo.txt"
    printf 'chip: v5p\ntopology: {shape: [2, 2, 2]}\nprogram: {hlo: mesh_iota.hlo.txt}\n' > "$t/mesh_iota.yaml"
    if ! grep -q "replica_groups=mesh" "$t/mesh_iota.hlo.txt" && run "$dir/mesh.yaml" mesh && run "$t/mesh_iota.yaml" mesh_iota; then
        for op in all-reduce all-reduce:1; do
            [ "$(field "$t/mesh" $op ici_bytes)" = "$(field "$t/mesh_iota" $op ici_bytes)" ] \
                && [ "$(field "$t/mesh" $op ici_bytes)" != none ] \
                && same "$(field "$t/mesh" $op time_s)" "$(field "$t/mesh_iota" $op time_s)" \
                && ok || bad "mesh groups: $op differs from the iota form's"
        done
        [ "$(field "$t/mesh" all-reduce ici_bytes)" = 4096 ] && ok || bad "mesh groups: ICI bytes $(field "$t/mesh" all-reduce ici_bytes), expected 8 chips x 512 B"
    else bad "mesh: the runs failed"; fi
fi

# The MoE, MLA and UNet examples (tools/hlo_models.py), their matmul and
# convolution FLOPs summed over the chips against hand figures:
# moe (8 devices, 64 tokens each, d 128, 4 experts of ffn 256, one per tensor
# device, capacity 32): the gate 2·64·128·4, dispatch and combine 2·2·64·128·128,
# the expert's three matmuls over 4·32 tokens 3·2·128·128·256 = 29425664 per
# device, 235405312 in all; its two all_to_alls (out and back) move the same
# [4, 32, 128] buffer; top_k is a custom call priced by its bytes, warned.
# mla (8 devices, batch 4 of 8 per fsdp row, seq 128, d 256, 2 of 8 heads per
# tensor device): q 2·512·256·128 + 2·512·128·96, kv 2·512·256·80 + 2·512·64·128,
# scores 2·4·2·128·128·(32+16), values 2·4·2·128·128·32, out 2·512·64·256 =
# 113246208 per device, 905969664 in all.
# unet (4 devices, batch 2, 32x32, 64 channels, outputs over tensor 2): three
# 3x3 convolutions 2·2·32·32·64·32·9 each, the stride-2 one 2·2·16·16·64·32·9,
# the 1x1 merge 2·2·32·32·128·32: 262144000 per device, 1048576000 in all.
flops() { python3 -c 'import json,sys
print(sum(o["flops"] for o in json.load(open(sys.argv[1] + "/summary.json"))["ops"] if o["kind"] == "einsum"))' "$1"; }
for ex in moe:235405312 mla:905969664 unet:1048576000; do
    name=${ex%%:*}; want=${ex#*:}
    [ -f "$dir/$name.yaml" ] || continue
    if run "$dir/$name.yaml" "$name"; then
        [ "$(flops "$t/$name")" = "$want" ] && ok || bad "$name: matmul FLOPs $(flops "$t/$name"), expected $want"
    else bad "$name: the run failed"; fi
done
if [ -f "$t/moe/summary.json" ]; then
    a=$(field "$t/moe" all-to-all ici_bytes); b=$(field "$t/moe" all-to-all:1 ici_bytes)
    [ "$a" = "$b" ] && [ "$a" != none ] && [ "$a" != 0 ] && ok || bad "moe: all-to-alls $a and $b bytes"
    grep -q 'custom-call ("TopK") is priced by its bytes only' "$t/moe.err" && ok || bad "moe: no TopK warning"
fi

# tpusim compare --profile (issue 27.7). A real jax.profiler trace of the
# program in tests/data/profile/cpu.hlo.txt (tools/profile_example.py: three
# executions on 4 CPU devices): each op's measured time per execution is the
# sum of its events' durations on device_ordinal 0 over 3, computed here from
# the trace itself; its simulated time is the run's.
pd=tests/data/profile
if [ -d "$pd" ] && run "$pd/cpu.yaml" prof; then
    "$bin" compare --profile "$pd/cpu.trace.json" "$t/prof" --csv "$t/prof.csv" > "$t/prof.txt" 2>&1 \
        && grep -q '3 executions' "$t/prof.txt" && ok || bad "profile: not 3 executions: $(head -1 "$t/prof.txt")"
    python3 - "$pd/cpu.trace.json" "$t/prof.csv" "$t/prof/summary.json" <<'PY' && ok || bad "profile: per-op figures"
import csv, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
want = {}
for e in ev:
    a = e.get("args", {})
    if e.get("ph") == "X" and "hlo_op" in a and a.get("device_ordinal") == "0":
        want[a["hlo_op"]] = want.get(a["hlo_op"], 0) + e["dur"] * 1e-6 / 3
sim = {o["name"]: o["time_s"] for o in json.load(open(sys.argv[3]))["ops"]}
rows = {r["op"]: r for r in csv.DictReader(open(sys.argv[2]))}
assert set(rows) == set(want) | set(sim), (rows.keys(), want.keys(), sim.keys())
for op, m in want.items():
    assert abs(float(rows[op]["measured_s"]) - m) <= 1e-6 * m, (op, rows[op], m)
    assert rows[op]["measured_count"] == "3", rows[op]
for op, x in sim.items():
    assert abs(float(rows[op]["simulated_s"]) - x) <= 1e-8 * x, (op, rows[op], x)
PY
    # The XProf layout, by hand (tpu.trace.json): /device:TPU:0's "XLA Ops"
    # inside its two jit_f spans (100 and 120 us): all-reduce 50 + 70 -> 60 us
    # per execution, ynn_fusion 10 + 30 -> 20 (its event in jit_other, TPU:1's
    # and the host's left out), copy.1 (written %copy.1 once) 4 + 6 -> 5, not
    # simulated; the step 110 us. --device 1: one execution, ynn_fusion 80;
    # --steps 4: ynn_fusion 40 / 4 = 10.
    "$bin" compare "$pd/tpu.trace.json" "$t/prof" > "$t/tpu.txt" 2>&1 \
        && grep -q '/device:TPU:0, module cpu.hlo\|/device:TPU:0, module jit_f, 2 executions, 6 op events' "$t/tpu.txt" \
        && grep -Eq '^all-reduce +collective +60\.000 ' "$t/tpu.txt" && grep -Eq '^ynn_fusion +matmul +20\.000 ' "$t/tpu.txt" \
        && grep -Eq '^copy\.1 +\(not sim\.\) +5\.000 +- +-$' "$t/tpu.txt" \
        && grep -Eq '^step \(module span / simulated step\) +110\.000 ' "$t/tpu.txt" \
        && ok || bad "profile (XProf layout): $(cat "$t/tpu.txt")"
    "$bin" compare --profile "$pd/tpu.trace.json" "$t/prof" --device 1 > "$t/tpu1.txt" 2>&1 \
        && grep -q '/device:TPU:1, module jit_f, 1 execution,' "$t/tpu1.txt" && grep -Eq '^ynn_fusion +matmul +80\.000 ' "$t/tpu1.txt" \
        && ok || bad "profile --device 1: $(cat "$t/tpu1.txt")"
    "$bin" compare --profile "$pd/tpu.trace.json" "$t/prof" --steps 4 > "$t/tpu4.txt" 2>&1 \
        && grep -Eq '^ynn_fusion +matmul +10\.000 ' "$t/tpu4.txt" && ok || bad "profile --steps 4: $(cat "$t/tpu4.txt")"
    # Bad input: exit 2 and the reason.
    gzip -c "$pd/tpu.trace.json" > "$t/tpu.json.gz"
    "$bin" compare --profile "$t/tpu.json.gz" "$t/prof" > /dev/null 2> "$t/e1"; rc=$?
    [ $rc -eq 2 ] && grep -q 'got a gzip file: gunzip it first' "$t/e1" && ok || bad "profile gzip: exit $rc, $(cat "$t/e1")"
    "$bin" compare --profile "$t/prof/summary.json" "$t/prof" > /dev/null 2> "$t/e2"; rc=$?
    [ $rc -eq 2 ] && grep -q 'expected a Chrome trace' "$t/e2" && ok || bad "profile of a summary: exit $rc, $(cat "$t/e2")"
    "$bin" compare "$pd/tpu.trace.json" "$t/prof" --module nope > /dev/null 2> "$t/e3"; rc=$?
    [ $rc -eq 2 ] && grep -q 'in module nope (.*got none' "$t/e3" && ok || bad "profile --module nope: exit $rc, $(cat "$t/e3")"
    "$bin" compare --profile "$pd/tpu.trace.json" "$t/prof" --steps 0 > /dev/null 2> "$t/e4"; rc=$?
    [ $rc -eq 2 ] && grep -q 'steps takes a whole number' "$t/e4" && ok || bad "profile --steps 0: exit $rc"
    "$bin" compare "$t/prof" "$t/prof" --device 1 > /dev/null 2> "$t/e5"; rc=$?
    [ $rc -eq 2 ] && grep -q 'go with --profile' "$t/e5" && ok || bad "--device without --profile: exit $rc"
    printf '{"traceEvents":[{"ph":"X","pid":1,"tid":1,"name":"a","dur":1,"args":{"hlo_op":"x"}},{"ph":"X"' > "$t/trunc.json"
    "$bin" compare --profile "$t/trunc.json" "$t/prof" --module any > /dev/null 2> "$t/e6"; rc=$?
    [ $rc -eq 2 ] && grep -q 'trunc.json:1:85: traceEvents: expected a complete JSON event' "$t/e6" && ok || bad "profile truncated: exit $rc, $(cat "$t/e6")"
else [ -d "$pd" ] && bad "profile: the run failed"; fi

echo "hlo: $((n - fail)) of $n checks passed"
[ $fail -eq 0 ]
