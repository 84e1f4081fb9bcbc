#!/bin/sh
# tools/check_layers.sh -- dependencies point inward: only sim/ includes
# SimGrid, only sim/cfg*.c includes libyaml, and traces/ (the outputs layer)
# includes no project header outside base/ and traces/. Fails on a forbidden include.
bad=$(grep -ln '<simgrid/' models/*.[ch] kernels/*.[ch] topology/*.[ch] traces/*.[ch] 2>/dev/null)
yaml=$(grep -ln '<yaml.h>' $(ls sim/*.[ch] models/*.[ch] kernels/*.[ch] topology/*.[ch] traces/*.[ch] | grep -v '^sim/cfg'))
traces=$(grep -Hn '^#include "' traces/*.[ch] | grep -v '#include "\(base\|traces\)/')
if [ -n "$bad$yaml$traces" ]; then
    echo "layer violation: $bad $yaml $traces"
    exit 1
fi
echo "layers: ok"
