#!/bin/sh
# tests/run_tools.sh BUILD_DIR -- the layer and globals checks can fail: each
# is run on a copy of the tree with a violation planted, and must name it.
b=$1
fail=0; n=0
ok() { n=$((n + 1)); }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL: $*"; }
t=$(mktemp -d)
cp -r base topology models kernels outputs workload config engine study serving cli "$t/"
sh tools/check_layers.sh "$t" >/dev/null && ok || bad "clean tree reported as violating"
plant() { # file (a new one is made and removed), line to add, expected message, what
    mkdir -p "$(dirname "$t/$1")"
    if [ -e "$t/$1" ]; then cp "$t/$1" "$t/$1.orig"; else : > "$t/$1.orig"; fi
    printf '%s\n' "$2" >> "$t/$1"
    out=$(sh tools/check_layers.sh "$t")
    rc=$?
    mv "$t/$1.orig" "$t/$1"
    [ -s "$t/$1" ] || rm -f "$t/$1"
    [ $rc -eq 1 ] && printf '%s' "$out" | grep -q "$3" && ok || bad "layer check missed $4: $out"
}
# one violation per layer: each folder including the folder just above it
# (or, for outputs/, one it may not use), then the special rules
plant base/json.c '#include "topology/topo.h"' 'base may not include' "base -> topology"
plant topology/topo.c '#include "models/chip.h"' 'topology may not include "models/chip.h"' "topology -> models"
plant models/hbm.c '#include "kernels/kernel.h"' 'models may not include "kernels/kernel.h"' "models -> kernels"
plant kernels/copy.c '#include "workload/graph.h"' 'kernels may not include "workload/graph.h"' "kernels -> workload"
plant outputs/trace.c '#include "models/chip.h"' 'outputs may not include "models/chip.h"' "outputs -> models"
plant workload/graph.c '#include "config/cfg.h"' 'workload may not include "config/cfg.h"' "workload -> config"
plant config/cfg.c '#include "engine/spmd.h"' 'config may not include "engine/spmd.h"' "config -> engine"
plant engine/validate.c '#include "study/autotune.h"' 'engine may not include "study/autotune.h"' "engine -> study"
plant study/sweep.c '#include "cli/cli.h"' 'study may not include "cli/cli.h"' "study -> cli"
plant study/sweep.c '#include "serving/serve.h"' 'study may not include "serving/serve.h"' "study -> serving"
plant serving/serve.c '#include "cli/cli.h"' 'serving may not include "cli/cli.h"' "serving -> cli"
plant engine/sub.c '#include "cli/cli.h"' 'engine may not include "cli/cli.h"' "a new file in a folder"
plant study/sub/x.c '#include "cli/cli.h"' 'study may not include "cli/cli.h"' "a subfolder"
plant engine/eng_dma.c '#include <simgrid/actor.h>' 'only engine/engine.h includes SimGrid' "SimGrid outside engine.h"
plant config/cfg.c '#include <yaml.h>' 'only config/cfg_yaml.c includes libyaml' "libyaml outside cfg_yaml.c"
plant outputs/summary.c '#include "config/cfg_int.h"' 'is internal to config/' "an _int.h from another folder"
plant config/cfg_tree.c '#include "config/cfg_walk.h"' 'config/cfg_tree and config/cfg_walk include each other' "two modules that include each other"
# globals: an object with a writable global fails, the build passes
sh tools/check_globals.sh "$b" >/dev/null && ok || bad "the build has writable globals"
g=$(mktemp -d)
mkdir -p "$g/engine"
printf 'int tpusim_counter;\nint tpusim_next(void) { return ++tpusim_counter; }\n' > "$g/x.c"
cc -c "$g/x.c" -o "$g/engine/x.o" && out=$(sh tools/check_globals.sh "$g")
[ $? -eq 1 ] && printf '%s' "$out" | grep -q "engine/x.o: .bss tpusim_counter" && ok \
    || bad "globals check missed a writable global: $out"
rm -rf "$t" "$g"
# the allocator the Makefile links (ALLOC_LIBS) serves the program's allocations:
# mimalloc prints its statistics at exit when asked, glibc's malloc does not
case "${ALLOC_LIBS-}" in
*mimalloc*)
    out=$(MIMALLOC_SHOW_STATS=1 "$b/tpusim" chips 2>&1 >/dev/null)
    printf '%s' "$out" | grep -q '^heap stats' && ok || bad "tpusim does not allocate with mimalloc" ;;
esac
# the fidelity table's collective points: every one becomes a scenario; a v7 point of two
# groups at once (C45: 64 MiB a device, one TensorCore of each of the 4 chips per group) runs
# as one gather of both groups' bytes a chip over axes 0 and 1, not spanning a chip's devices
python3 - <<'PY' && ok || bad "fidelity.py: the collective points' scenarios"
import importlib.util, json
spec = importlib.util.spec_from_file_location("fidelity", "tools/fidelity.py")
fid = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fid)
pts = {p["id"]: p for p in json.load(open("tests/fidelity/points.json"))}
for p in pts.values():
    assert fid.point_scenario(p) is not None, p["id"]
op = fid.point_scenario(pts["C45"])["workload"][0]
assert op == {"op": "all_gather", "axes": [0, 1], "bytes": 2 * 64 * 2**20, "chip_devices": 1}, op
assert abs(pts["C45"]["measured_s"] / (3 * 2 * 64 * 2**20 * 1e-9 / 178.7714158) - 1) < 1e-5
op = fid.point_scenario(pts["C34"])["workload"][0]
assert op == {"op": "all_reduce", "axes": [0, 1], "bytes": 256 * 2**20}, op
PY
# the MLPerf rows' extra column: MT08 runs the splash blocks its note states and MaxText's
# gpt3-175b.yml one-hot embedding; MT02 the embedding only (tools/fidelity_mlperf.py)
python3 - <<'PY' && ok || bad "fidelity_mlperf.py: the rows' extra model keys"
import csv, sys
sys.path.insert(0, "tools")
import fidelity_mlperf as fm
rows = {r["id"]: r for r in csv.DictReader(open("tests/fidelity/mlperf-training.csv"))}
m = fm.scenario(rows["MT08"], True)["model"]
assert (m["sa_block_q"], m["sa_block_q_dkv"], m["sa_block_q_dq"]) == (1024, 2048, 2048), m
assert m["use_iota_embed"] is True and m["quantization"] == "int8", m
m = fm.scenario(rows["MT02"], True)["model"]
assert m["use_iota_embed"] is True and "sa_block_q" not in m, m
PY
# the model-step table's serving row (extra: methodology=serve, row 85: vLLM TPU's recipe) runs
# as the benchmark it was: a serve: scenario with the recipe's engine and closed loop, its TPOT
# read from the serving summary; every other row stays a model: step; serve.* keys without
# methodology=serve are refused; the bands tool reads the serving row's line
python3 - <<'PY' && ok || bad "fidelity_models.py: the serving row's scenario"
import importlib.util, re
def load(name):
    spec = importlib.util.spec_from_file_location(name, f"tools/{name}.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m
fm, fb = load("fidelity_models"), load("fidelity_bands")
rows = {r["id"]: r for r in fm.load_rows("tests/fidelity")}
sc = fm.row_scenario(rows["85"])
assert "model" not in sc and "mesh" not in sc, sc
sv = sc["serve"]
assert sv["engine"] == {"max_num_seqs": 256, "max_num_batched_tokens": 512,
                        "max_model_len": 2048, "page_size": 128, "async_scheduling": True,
                        "kv_cache": {"hbm_fraction": 0.98}, "attention_kernel": "rpa_v3"}, sv
assert sv["requests"] == {"count": 3000, "concurrency": 64, "input_len": 1000,
                          "output_len": 1000}, sv
assert sv["mesh"] == {"tensor": 8} and sv["model"]["layers"] == 80, sv
assert not {"mode", "batch", "kv_len", "attention_kernel", "methodology"} & set(sv["model"])
for i, r in rows.items():
    if i != "85":
        assert "model" in fm.row_scenario(r) and "serve" not in fm.row_scenario(r), i
s = {"total_time_s": 1306.0, "serving": {"tpot_s": {"mean": 0.0276, "p50": 0.0277}}}
assert fm.predicted_s(rows["85"], s) == 0.0276
assert fm.predicted_s(rows["97"], {"total_time_s": 8.3}) == 8.3
bad = dict(rows["97"], extra="serve.requests.concurrency=64")
try:
    fm.row_scenario(bad)
    raise SystemExit("serve.* keys without methodology=serve were taken")
except ValueError as e:
    assert "methodology=step" in str(e), e
line = ("85   v6e  2x4       tensor=8               L80 D8192 serve c64 1000/1000    0.02535"
        "    0.02759   +8.8%  serve: 3000 requests, mean batch 64 seqs / 127 tokens, 47216 steps")
m = fb.MODEL.match(line)
assert m and m.groups() == ("85", "+8.8"), m
PY
echo "tools: $((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
