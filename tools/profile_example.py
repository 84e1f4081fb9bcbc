#!/usr/bin/env python3
"""Write a small JAX program's compiled HLO and a measured profile of it (CPU).

    python3 tools/profile_example.py OUTDIR [--devices N]

jit-compiles tanh(a @ b).sum() with a sharded over N forced CPU devices
(XLA_FLAGS=--xla_force_host_platform_device_count=N), writes OUTDIR/cpu.hlo.txt
(the compiled module, jax's compile().as_text()), OUTDIR/cpu.yaml (a scenario
running it on a v5e ring of N chips) and OUTDIR/cpu.trace.json: three
executions under jax.profiler.trace, the trace.json.gz it writes, gunzipped.
`tpusim compare --profile OUTDIR/cpu.trace.json RUN` then lines the measured
ops up with a simulated run (the CPU's times, not a TPU's: the fixture shows
the format and the matching). jax is a tool dependency only.
"""
import argparse
import glob
import gzip
import os
import shutil
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--devices", type=int, default=4)
    a = ap.parse_args()
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=%d" % a.devices)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()), ("x",))

    def f(a, b):
        return jnp.tanh(a @ b).sum()

    x = jax.device_put(jnp.ones((512, 512), jnp.float32), NamedSharding(mesh, P("x", None)))
    w = jax.device_put(jnp.ones((512, 512), jnp.float32), NamedSharding(mesh, P(None, None)))
    jf = jax.jit(f)
    jf(x, w).block_until_ready()
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "cpu.hlo.txt"), "w") as h:
        h.write(jf.lower(x, w).compile().as_text())
    with open(os.path.join(a.outdir, "cpu.yaml"), "w") as h:
        h.write("chip: v5e\ntopology: {shape: [%d]}\nprogram: {hlo: cpu.hlo.txt}\n" % a.devices)
    prof = os.path.join(a.outdir, "prof")
    with jax.profiler.trace(prof):
        for _ in range(3):
            jf(x, w).block_until_ready()
    found = glob.glob(os.path.join(prof, "plugins", "profile", "*", "*.trace.json.gz"))
    if not found:
        sys.exit("profile_example.py: jax.profiler wrote no trace.json.gz under %s" % prof)
    with gzip.open(found[0], "rb") as src, open(os.path.join(a.outdir, "cpu.trace.json"), "wb") as dst:
        shutil.copyfileobj(src, dst)
    shutil.rmtree(prof)


if __name__ == "__main__":
    main()
