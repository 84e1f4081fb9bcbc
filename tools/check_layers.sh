#!/bin/sh
# tools/check_layers.sh [ROOT] -- the layer rules, as an allow-matrix over
# every #include of the C sources under ROOT (default: the repository).
#   base     -> (libc only)
#   topology -> base
#   models   -> base, topology
#   kernels  -> base, topology, models
#   traces   -> base
#   workload -> base, topology, models, kernels
#   sim      -> everything
# Only sim/engine.h includes <simgrid/...> or <xbt/...>; only sim/cfg_yaml.c
# includes <yaml.h>; a header named *_int.h is included from its own folder
# only. Prints each violation as "file:line: why" and exits 1, else prints
# "layers: ok".
root=${1:-.}
cd "$root" || exit 2
allowed() { # folder -> folders its files may include
    case $1 in
    base) echo "base" ;;
    topology) echo "base topology" ;;
    models) echo "base topology models" ;;
    kernels) echo "base topology models kernels" ;;
    traces) echo "base traces" ;;
    workload) echo "base topology models kernels workload" ;;
    sim) echo "base topology models kernels traces workload sim" ;;
    esac
}
bad=0
for dir in base topology models kernels traces workload sim; do
    [ -d "$dir" ] || continue
    ok=$(allowed $dir)
    for f in "$dir"/*.[ch]; do
        [ -e "$f" ] || continue
        out=$(awk -v f="$f" -v dir="$dir" -v ok=" $ok " '
            /^[ \t]*#[ \t]*include/ {
                line = $0
                if (match(line, /"[^"]+"/)) {
                    inc = substr(line, RSTART + 1, RLENGTH - 2)
                    n = split(inc, part, "/")
                    top = n > 1 ? part[1] : dir
                    if (index(ok, " " top " ") == 0)
                        printf "%s:%d: %s may not include \"%s\" (%s -> %s)\n", f, NR, dir, inc, dir, top
                    if (inc ~ /_int\.h$/ && top != dir)
                        printf "%s:%d: \"%s\" is internal to %s/\n", f, NR, inc, top
                } else if (line ~ /<(simgrid|xbt)\//) {
                    if (f != "sim/engine.h")
                        printf "%s:%d: only sim/engine.h includes SimGrid\n", f, NR
                } else if (line ~ /<yaml\.h>/) {
                    if (f != "sim/cfg_yaml.c")
                        printf "%s:%d: only sim/cfg_yaml.c includes libyaml\n", f, NR
                }
            }' "$f")
        if [ -n "$out" ]; then
            echo "$out"
            bad=1
        fi
    done
done
if [ $bad -ne 0 ]; then
    echo "layers: violated"
    exit 1
fi
echo "layers: ok"
