#!/bin/sh
# tests/run_hlo_groups.sh TPUSIM -- collectives over groups of chips that are
# no mesh axes (replica_groups: in a workload; HLO replica groups that no mesh
# fits) and program.device_order, against hand figures.
bin=$1
dir=tests/data/hlo
fail=0; n=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
ok() { n=$((n + 1)); }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL hlo groups: $1"; }
# field OUT OP KEY: KEY of op OP in OUT/summary.json (total_time_s when OP is -)
field() {
    python3 -c 'import json,sys
s = json.load(open(sys.argv[1] + "/summary.json"))
if sys.argv[2] == "-": print(repr(s["total_time_s"])); sys.exit()
if sys.argv[2] == "program": print(s["program"][sys.argv[3]]); sys.exit()
for o in s["ops"]:
    if o["name"] == sys.argv[2]: print(repr(o[sys.argv[3]]) if sys.argv[3] in o else "none"); sys.exit()
print("none")' "$@"
}
run() { f=$1; o=$2; shift 2; "$bin" run "$f" -o "$t/$o" -q "$@" >/dev/null 2>"$t/$o.err" || { cat "$t/$o.err"; return 1; }; }
near() { python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-9 * abs(b))' "$1" "$2"; }

# An all-gather of 4 MiB shards on a v5e 4x4 torus (both axes wrapped) over the
# diagonals {0,5,10,15}, {1,6,11,12}, {2,7,8,13}, {3,4,9,14}: no mesh axes, so
# each group is a ring through its chips in that order, every hop 2 links
# (+x then +y, the last one over both wrap links); the 16 transfers of a step
# use 16 distinct +x and 16 distinct +y links, so nothing shares a link. The
# default algorithm is bidirectional: 3 steps, each moving 2 MiB each way:
#   collective_latency 5 us
#   + the own shard copied into the output: 2 x 4 MiB / 819 GB/s + 0.1 us DMA latency
#   + 3 x (step_latency 0.15 us + DMA issue 0.1 us + 2 hops x 0.2 us
#          + 2 MiB / (45 GB/s x 0.95))
#   = 164.461062 us; over a row (axis 0, every hop 1 link): 0.6 us less, 163.861062 us.
# Fast and exact agree (the routed ring's steps are not coalesced), and the
# scenario is not folded (the groups break the torus' symmetry).
hand_diag=$(python3 -c 'print(5e-6 + 8388608 / 819e9 + 0.1e-6 + 3 * (0.15e-6 + 0.1e-6 + 2 * 0.2e-6 + 2097152 / (45e9 * 0.95)))')
hand_row=$(python3 -c 'print(5e-6 + 8388608 / 819e9 + 0.1e-6 + 3 * (0.15e-6 + 0.1e-6 + 0.2e-6 + 2097152 / (45e9 * 0.95)))')
cat >"$t/diag.yaml" <<'EOF'
chip: v5e
topology: {shape: [4, 4], wraparound: [true, true]}
workload:
  - {op: all_gather, name: diag, bytes: 4MiB,
     replica_groups: [[0, 5, 10, 15], [1, 6, 11, 12], [2, 7, 8, 13], [3, 4, 9, 14]]}
  - {op: all_gather, name: row, bytes: 4MiB, axes: [0], after: [diag]}
EOF
if run "$t/diag.yaml" diag && run "$t/diag.yaml" diag_exact --fidelity exact; then
    near "$(field "$t/diag" diag time_s)" "$hand_diag" && ok || bad "diagonal ring: $(field "$t/diag" diag time_s) s, hand $hand_diag s"
    near "$(field "$t/diag" row time_s)" "$hand_row" && ok || bad "row ring: $(field "$t/diag" row time_s) s, hand $hand_row s"
    near "$(field "$t/diag_exact" diag time_s)" "$hand_diag" && ok || bad "diagonal ring, exact: $(field "$t/diag_exact" diag time_s) s, hand $hand_diag s"
    # each chip receives 3 shards of 4 MiB, 16 chips
    [ "$(field "$t/diag" diag ici_bytes)" = 201326592 ] && ok || bad "diagonal ring: ICI bytes $(field "$t/diag" diag ici_bytes), expected 201326592"
    [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["simulated_chips"])' "$t/diag/summary.json")" = 16 ] \
        && ok || bad "replica_groups: folded, not all 16 chips simulated"
else bad "replica_groups: the runs failed"; fi

# The same from HLO (diag.hlo.txt): the diagonals in explicit replica_groups,
# the rows as the iota [4,4]<=[16], which is a mesh axis and stays one
# (program.routed_collectives counts 1: the diagonal); the hand figures above.
# The module is scheduled (is_scheduled=true): the two run one after the
# other, as in the workload above (an unscheduled module's collectives run
# async, as XLA's latency-hiding scheduler would place them, and share links).
if run "$dir/diag.yaml" hdiag; then
    near "$(field "$t/hdiag" diag time_s)" "$hand_diag" && ok || bad "HLO diagonal: $(field "$t/hdiag" diag time_s) s, hand $hand_diag s"
    near "$(field "$t/hdiag" row time_s)" "$hand_row" && ok || bad "HLO row: $(field "$t/hdiag" row time_s) s, hand $hand_row s"
    [ "$(field "$t/hdiag" program routed_collectives)" = 1 ] && ok || bad "HLO: routed_collectives $(field "$t/hdiag" program routed_collectives), expected 1"
else bad "diag.yaml: the run failed"; fi

# {0,3},{1,2} on a 4-chip line (once refused): an all-reduce of f32[1024]
# (4096 B) over pairs sends 2·(2−1)/2 · 4096 B per chip, 4 chips: 16384.
if run "$dir/groups_pairs.yaml" pairs; then
    [ "$(field "$t/pairs" ar ici_bytes)" = 16384 ] && ok || bad "pairs: ICI bytes $(field "$t/pairs" ar ici_bytes), expected 16384"
else bad "groups_pairs.yaml: the run failed"; fi

# program.device_order as a list: device d runs on chip list[d]. Putting the
# diagonal groups of diag.hlo.txt on the rows (group g, member i on chip
# 4g + i: devices 0, 5, 10, 15 on chips 0-3, 1, 6, 11, 12 on 4-7, ...) makes
# them a mesh axis (x) and the device rows {0,1,2,3} ... chips {0,4,8,12},
# ...: the columns, a mesh axis (y) too; both are rings of 1-link hops, each
# the row figure above, 163.861062 us, and nothing is routed.
printf 'chip: v5e\ntopology: {shape: [4, 4], wraparound: [true, true]}\nprogram: {hlo: %s/diag.hlo.txt,\n  device_order: [0, 4, 8, 12, 13, 1, 5, 9, 10, 14, 2, 6, 7, 11, 15, 3]}\n' "$(pwd)/$dir" >"$t/order.yaml"
if run "$t/order.yaml" order; then
    near "$(field "$t/order" diag time_s)" "$hand_row" && ok || bad "device_order: diagonal on rows $(field "$t/order" diag time_s) s, hand $hand_row s"
    near "$(field "$t/order" row time_s)" "$hand_row" && ok || bad "device_order: rows on columns $(field "$t/order" row time_s) s, hand $hand_row s"
    [ "$(field "$t/order" program routed_collectives)" = 0 ] && ok || bad "device_order: routed_collectives $(field "$t/order" program routed_collectives), expected 0"
else bad "device_order list: the run failed"; fi

# device_order: {create_device_mesh: [4, 2]} on a v5e of 8 chips is jax's tray
# ring (0, 1, 2, 3, 7, 6, 5, 4) (any mesh shape of 8): the same program as that
# list. The MLP's fsdp gathers (devices {0,2,4,6}) then run on chips {0,2,7,5},
# (0,0), (0,1), (1,3), (1,2) of the 2x4: no mesh axis, 2 routed collectives;
# its tensor all-reduce (devices {0,1}, ... on chips {0,1}, {2,3}, {7,6},
# {5,4}: x pairs) stays a mesh axis. device_order: iota is the default: the
# same step as mlp.yaml.
for o in "{create_device_mesh: [4, 2]}" "[0, 1, 2, 3, 7, 6, 5, 4]" iota; do
    printf 'chip: v5e\ntopology: {shape: [2, 4]}\nprogram: {hlo: %s/mlp.hlo.txt, device_order: %s}\n' "$(pwd)/$dir" "$o" >"$t/mlp_order.yaml"
    run "$t/mlp_order.yaml" "mlp_$(echo "$o" | tr -dc 'a-z0-9')" || bad "device_order $o: the run failed"
done
if run "$dir/mlp.yaml" mlp && [ -f "$t/mlp_createdevicemesh42/summary.json" ] && [ -f "$t/mlp_01237654/summary.json" ] && [ -f "$t/mlp_iota/summary.json" ]; then
    [ "$(field "$t/mlp_createdevicemesh42" -)" = "$(field "$t/mlp_01237654" -)" ] && ok || bad "create_device_mesh [4, 2]: $(field "$t/mlp_createdevicemesh42" -) s, the tray ring list $(field "$t/mlp_01237654" -) s"
    [ "$(field "$t/mlp_createdevicemesh42" program routed_collectives)" = 2 ] && ok || bad "create_device_mesh [4, 2]: routed_collectives $(field "$t/mlp_createdevicemesh42" program routed_collectives), expected 2"
    [ "$(field "$t/mlp_iota" -)" = "$(field "$t/mlp" -)" ] && [ "$(field "$t/mlp" program routed_collectives)" = 0 ] && ok || bad "device_order: iota is not the default"
fi

# collective-permute (permute.hlo.txt): devices d -> d+4 mod 8 on a v5e 2x4 (no
# wraparound) is a remote_copy by [0, 2] from every chip; y = 0 -> 2 and 1 -> 3
# both cross the +y link between y = 1 and 2 (and the way back both cross its -y
# link), so each transfer gets half a link: 5 us + DMA issue 0.1 us + 2 hops x
# 0.2 us + 2 x 4096 B / (45 GB/s x 0.95) = 5.691626 us; 8 chips x 4096 B.
# (The pairs were never read before: the op was dropped.)
if run "$dir/permute.yaml" permute; then
    near "$(field "$t/permute" cp time_s)" "$(python3 -c 'print(5e-6 + 0.1e-6 + 2 * 0.2e-6 + 2 * 4096 / (45e9 * 0.95))')" \
        && ok || bad "collective-permute: $(field "$t/permute" cp time_s) s"
    [ "$(field "$t/permute" cp ici_bytes)" = 32768 ] && ok || bad "collective-permute: ICI bytes $(field "$t/permute" cp ici_bytes), expected 32768"
else bad "permute.yaml: the run failed"; fi

# Multislice: 16 devices on 2 slices of a v5e 2x4, device d on chip d % 8 of slice
# d / 8. multislice.hlo.txt's all-reduce over {d, d+8} ([8,2]<=[2,8]T(1,0)) is
# a mesh axis over the DCN, the all-reduce over every device one over the DCN
# and both slice axes, the all-gather over x pairs one within each slice: the
# same ops as all_reduce axes: [dcn], axes: [dcn, 0, 1] and all_gather axes: [0]
# by hand (1 MiB, bf16 as the lowering gives a reduction), the same times.
cat >"$t/ms_hand.yaml" <<'EOF'
chip: v5e
topology: {shape: [2, 4], slices: 2}
workload:
  - {op: all_reduce, name: dcn, bytes: 1MiB, axes: [dcn]}
  - {op: all_reduce, name: all, bytes: 1MiB, axes: [dcn, 0, 1], after: [dcn]}
  - {op: all_gather, name: pairs, bytes: 1MiB, axes: [0], after: [all]}
EOF
if run "$dir/multislice.yaml" ms && run "$t/ms_hand.yaml" ms_hand; then
    for op in dcn all pairs; do
        near "$(field "$t/ms" $op time_s)" "$(field "$t/ms_hand" $op time_s)" && ok || bad "multislice $op: $(field "$t/ms" $op time_s) s, by hand $(field "$t/ms_hand" $op time_s) s"
    done
    # the all-reduce over {d, d+8}: 2·(2−1)/2 · 1 MiB per chip over the DCN, 16 chips
    [ "$(field "$t/ms" dcn dcn_bytes)" = 16777216 ] && ok || bad "multislice: DCN bytes $(field "$t/ms" dcn dcn_bytes), expected 16777216"
else bad "multislice: the runs failed"; fi
# Groups that are no mesh axes, the same in both slices ({0,3}, {1,2}, {4,7},
# {5,6} and each + 8): routed rings within each slice, as replica_groups over
# one slice by hand: the same time.
printf 'chip: v5e\ntopology: {shape: [2, 4]}\nworkload:\n  - {op: all_reduce, name: ar, bytes: 4KiB, replica_groups: [[0, 3], [1, 2], [4, 7], [5, 6]]}\n' >"$t/msp_hand.yaml"
if run "$dir/multislice_pairs.yaml" msp && run "$t/msp_hand.yaml" msp_hand; then
    near "$(field "$t/msp" ar time_s)" "$(field "$t/msp_hand" ar time_s)" && ok || bad "multislice pairs: $(field "$t/msp" ar time_s) s, one slice by hand $(field "$t/msp_hand" ar time_s) s"
else bad "multislice pairs: the runs failed"; fi

echo "hlo groups: $((n - fail)) of $n checks passed"
[ $fail -eq 0 ]
