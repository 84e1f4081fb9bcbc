#!/usr/bin/env python3
"""tools/fidelity_bands.py [FILE] -- the error-bar bands from make fidelity's output.

    make fidelity 2>&1 | python3 tools/fidelity_bands.py

Reads the per-row errors that tools/fidelity.py (points), tools/fidelity_xla.py
(XLA matmuls, gated rows only) and tools/fidelity_models.py (model steps)
print, groups them into the families of engine/uncertainty.c (pallas_kernel:
pallas_matmul and flash_attention_fwd points; collective: all_gather,
all_reduce, ppermute points; xla_op: the gated XLA matmuls and hbm_copy
points; model_step: the model rows) and prints per family the rows, the
median |error| and the 68th percentile of |error| (linear interpolation):
the band engine/uncertainty.c holds (docs/reference.md, "Error bars")."""
import re, statistics, sys

FAMILY = {"pallas_matmul": "pallas_kernel", "flash_attention_fwd": "pallas_kernel",
          "all_gather": "collective", "all_reduce": "collective", "ppermute": "collective",
          "reduce_scatter": "collective", "hbm_copy": "xla_op"}
POINT = re.compile(r"^(\w+)\s+(\w+)\s+\w+\s+[\d.]+ms\s+[\d.]+ms\s+([+-][\d.]+)%")
XLA = re.compile(r"^(X\w+)\s+\w+\s+\d+x\d+x\d+\s+[\d.]+us\s+[\d.]+us\s+([+-][\d.]+)%(.*)$")
# a model row ends with its error and MFU, or (methodology=serve) its error and "serve: ..."
MODEL = re.compile(r"^(\d+)\s+\w+\s+\S+\s.*?\s([+-][\d.]+)%\s+(?:[\d.]+%|serve: .*)$")


def quantile(v, q):
    v = sorted(v)
    i = (len(v) - 1) * q
    lo = int(i)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (i - lo) * (v[hi] - v[lo])


def main():
    text = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
    fam = {}
    for line in text.splitlines():
        m = POINT.match(line)
        if m and m.group(2) in FAMILY:
            fam.setdefault(FAMILY[m.group(2)], []).append((m.group(1), float(m.group(3))))
            continue
        m = XLA.match(line)
        if m and "reference row" not in m.group(3):
            fam.setdefault("xla_op", []).append((m.group(1), float(m.group(2))))
            continue
        m = MODEL.match(line)
        if m:
            fam.setdefault("model_step", []).append((m.group(1), float(m.group(2))))
    print(f"{'family':14} {'rows':>4} {'median |err|':>13} {'68th pct |err|':>15}  rows (error %)")
    for f in ("pallas_kernel", "collective", "xla_op", "model_step"):
        rows = fam.get(f, [])
        if not rows:
            print(f"{f:14} {0:4}  (no rows in the input)")
            continue
        a = [abs(e) for _, e in rows]
        print(f"{f:14} {len(rows):4} {statistics.median(a):12.2f}% {quantile(a, 0.68):14.2f}%  " +
              ", ".join(f"{i} {e:+.1f}" for i, e in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
