#!/bin/sh
# tools/fidelity.sh TPUSIM -- see tools/fidelity.py (needs python3).
command -v python3 >/dev/null || { echo "make fidelity needs python3"; exit 1; }
exec python3 "$(dirname "$0")/fidelity.py" "$@"
