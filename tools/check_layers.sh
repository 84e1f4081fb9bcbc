#!/bin/sh
# tools/check_layers.sh [ROOT] -- the layer rules, as an allow-matrix over
# every #include of the C sources under ROOT (default: the repository), one
# row per folder, bottom up; a folder's subfolders follow its row.
#   base     -> (libc only)
#   topology -> base
#   models   -> base, topology
#   kernels  -> base, topology, models
#   outputs  -> base
#   workload -> base, topology, models, kernels
#   config   -> base, topology, models, kernels, workload
#   engine   -> base, topology, models, kernels, outputs, workload, config
#   study    -> ... engine
#   serving  -> ... engine, study
#   cli      -> everything
# Only engine/engine.h includes <simgrid/...> or <xbt/...>; only
# config/cfg_yaml.c includes <yaml.h>; a header named *_int.h is included
# from its own folder only; no two modules (x.c and x.h) include each
# other. Prints each
# violation as "file:line: why" and exits 1, else prints "layers: ok".
root=${1:-.}
cd "$root" || exit 2
LAYERS="base topology models kernels outputs workload config engine study serving cli"
allowed() { # folder -> folders its files may include (besides itself)
    case $1 in
    base) echo "" ;;
    topology) echo "base" ;;
    models) echo "base topology" ;;
    kernels) echo "base topology models" ;;
    outputs) echo "base" ;;
    workload) echo "base topology models kernels" ;;
    config) echo "base topology models kernels workload" ;;
    engine) echo "base topology models kernels outputs workload config" ;;
    study) echo "base topology models kernels outputs workload config engine" ;;
    serving) echo "base topology models kernels outputs workload config engine study" ;;
    cli) echo "base topology models kernels outputs workload config engine study serving" ;;
    esac
}
bad=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
for dir in $LAYERS; do
    [ -d "$dir" ] || continue
    ok="$dir $(allowed $dir)"
    for f in $(find "$dir" -name '*.[ch]' | sort); do
        out=$(awk -v f="$f" -v dir="$dir" -v ok=" $ok " -v edges="$edges" '
            /^[ \t]*#[ \t]*include/ {
                line = $0
                if (match(line, /"[^"]+"/)) {
                    inc = substr(line, RSTART + 1, RLENGTH - 2)
                    n = split(inc, part, "/")
                    top = n > 1 ? part[1] : dir
                    print f " " inc >> edges
                    if (index(ok, " " top " ") == 0)
                        printf "%s:%d: %s may not include \"%s\" (%s -> %s)\n", f, NR, dir, inc, dir, top
                    if (inc ~ /_int\.h$/ && top != dir)
                        printf "%s:%d: \"%s\" is internal to %s/\n", f, NR, inc, top
                } else if (line ~ /<(simgrid|xbt)\//) {
                    if (f != "engine/engine.h")
                        printf "%s:%d: only engine/engine.h includes SimGrid\n", f, NR
                } else if (line ~ /<yaml\.h>/) {
                    if (f != "config/cfg_yaml.c")
                        printf "%s:%d: only config/cfg_yaml.c includes libyaml\n", f, NR
                }
            }' "$f")
        if [ -n "$out" ]; then
            echo "$out"
            bad=1
        fi
    done
done
# two modules that include each other (a module: x.c and x.h; a folder's internal
# *_int.h headers, shared by several of its files, are plumbing and not modules)
cycles=$(awk 'function mod(f) { sub(/\.[ch]$/, "", f); return f }
              $1 ~ /_int\.h$/ || $2 ~ /_int\.h$/ { next }
              { a = mod($1); b = mod($2); if (a != b) e[a " " b] = 1 }
              END { for (k in e) { split(k, p, " ");
                    if ((p[2] " " p[1]) in e && p[1] < p[2])
                        printf "%s and %s include each other\n", p[1], p[2] } }' "$edges")
if [ -n "$cycles" ]; then
    echo "$cycles"
    bad=1
fi
if [ $bad -ne 0 ]; then
    echo "layers: violated"
    exit 1
fi
echo "layers: ok"
