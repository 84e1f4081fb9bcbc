#!/usr/bin/env python3
"""tools/hlo_big.py OUT [BYTES] -- a big HLO module for tools/bench.sh (the
reader's speed, issue 27: 50 MB parsed in at most 5 s): fused computations
of 40 elementwise instructions each, with metadata as jax writes it, until
BYTES (default 50 MiB), and an entry running the first 2000 of them."""
import sys
target = int(sys.argv[2]) if len(sys.argv) > 2 else 50 << 20
out = open(sys.argv[1], "w")
out.write("HloModule big, is_scheduled=true\n\n")
size, n = 0, 0
body = []
while size < target:
    lines = ["%%fused_%d (p.%d: f32[1024,256], q.%d: f32[1024,256]) -> f32[1024,256] {" % (n, n, n),
             "  %%p.%d = f32[1024,256]{1,0} parameter(0)" % n, "  %%q.%d = f32[1024,256]{1,0} parameter(1)" % n]
    prev = "p.%d" % n
    for i in range(40):
        op = ("add", "multiply", "subtract", "maximum")[i % 4]
        lines.append("  %%v%d.%d = f32[1024,256]{1,0} %s(f32[1024,256]{1,0} %%%s, f32[1024,256]{1,0} %%q.%d), "
                     "metadata={op_name=\"jit(step)/layer_%d/%s\" source_file=\"model.py\" source_line=%d}"
                     % (i, n, op, prev, n, n, op, i))
        prev = "v%d.%d" % (i, n)
    lines[-1] = lines[-1].replace("  %", "  ROOT %", 1)
    lines.append("}\n")
    t = "\n".join(lines) + "\n"
    out.write(t)
    size += len(t)
    n += 1
out.write("ENTRY %main (x: f32[1024,256]) -> f32[1024,256] {\n  %x = f32[1024,256]{1,0} parameter(0)\n")
prev = "x"
for i in range(min(n, 2000)):
    out.write("  %%f%d = f32[1024,256]{1,0} fusion(%%%s, %%x), kind=kLoop, calls=%%fused_%d\n" % (i, prev, i))
    prev = "f%d" % i
out.write("  ROOT %%r = f32[1024,256]{1,0} copy(%%%s)\n}\n" % prev)
