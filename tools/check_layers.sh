#!/bin/sh
# tools/check_layers.sh -- dependencies point inward: only sim/ includes
# SimGrid, only sim/cfg*.c includes libyaml. Fails on a forbidden include.
bad=$(grep -ln '<simgrid/' models/*.[ch] kernels/*.[ch] topology/*.[ch] traces/*.[ch] 2>/dev/null)
yaml=$(grep -ln '<yaml.h>' $(ls sim/*.[ch] models/*.[ch] kernels/*.[ch] topology/*.[ch] traces/*.[ch] | grep -v '^sim/cfg'))
if [ -n "$bad$yaml" ]; then
    echo "layer violation: $bad $yaml"
    exit 1
fi
echo "layers: ok"
