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
echo "tools: $((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
