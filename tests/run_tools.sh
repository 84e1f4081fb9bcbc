#!/bin/sh
# tests/run_tools.sh BUILD_DIR -- the layer and globals checks can fail: each
# is run on a copy of the tree with a violation planted, and must name it.
b=$1
fail=0; n=0
ok() { n=$((n + 1)); }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL: $*"; }
t=$(mktemp -d)
cp -r base topology models kernels traces workload sim "$t/"
sh tools/check_layers.sh "$t" >/dev/null && ok || bad "clean tree reported as violating"
plant() { # file, line to add, expected message, what
    cp "$t/$1" "$t/$1.orig"
    printf '%s\n' "$2" >> "$t/$1"
    out=$(sh tools/check_layers.sh "$t")
    rc=$?
    mv "$t/$1.orig" "$t/$1"
    [ $rc -eq 1 ] && printf '%s' "$out" | grep -q "$3" && ok || bad "layer check missed $4: $out"
}
plant kernels/copy.c '#include "sim/cfg.h"' 'kernels/copy.c:.*kernels may not include "sim/cfg.h"' "kernels -> sim"
plant workload/schedule.c '#include "sim/cfg.h"' 'workload may not include "sim/cfg.h"' "workload -> sim"
plant traces/trace.c '#include "models/chip.h"' 'traces may not include "models/chip.h"' "traces -> models"
plant base/json.c '#include "topology/topo.h"' 'base may not include' "base -> topology"
plant sim/eng_dma.c '#include <simgrid/actor.h>' 'only sim/engine.h includes SimGrid' "SimGrid outside engine.h"
plant sim/cfg.c '#include <yaml.h>' 'only sim/cfg_yaml.c includes libyaml' "libyaml outside cfg_yaml.c"
plant traces/summary.c '#include "sim/cfg_int.h"' 'is internal to sim/' "an _int.h from another folder"
# globals: an object with a writable global fails, the build passes
sh tools/check_globals.sh "$b" >/dev/null && ok || bad "the build has writable globals"
g=$(mktemp -d)
mkdir -p "$g/sim"
printf 'int tpusim_counter;\nint tpusim_next(void) { return ++tpusim_counter; }\n' > "$g/x.c"
cc -c "$g/x.c" -o "$g/sim/x.o" && out=$(sh tools/check_globals.sh "$g")
[ $? -eq 1 ] && printf '%s' "$out" | grep -q 'sim/x.o: .bss tpusim_counter' && ok \
    || bad "globals check missed a writable global: $out"
rm -rf "$t" "$g"
# the allocator the Makefile links (ALLOC_LIBS) serves the program's allocations:
# mimalloc prints its statistics at exit when asked, glibc's malloc does not
case "${ALLOC_LIBS-}" in
*mimalloc*)
    out=$(MIMALLOC_SHOW_STATS=1 "$b/tpusim" chips 2>&1 >/dev/null)
    printf '%s' "$out" | grep -q '^heap stats' && ok || bad "tpusim does not allocate with mimalloc" ;;
esac
echo "tools: $((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
