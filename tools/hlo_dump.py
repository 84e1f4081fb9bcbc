#!/usr/bin/env python3
"""tools/hlo_dump.py -- a JAX program as HLO text after SPMD partitioning, and
a scenario that simulates it (docs/reference.md, "HLO programs").

    python3 tools/hlo_dump.py EXAMPLE OUTDIR [--devices N] [--chip v5e] [--shape 2,4]

EXAMPLE is one of the built-in examples below. It lowers and compiles the
example on N forced CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=N)
with a jax.sharding.Mesh, writes jax.jit(f).lower(...).compile().as_text()
to OUTDIR/EXAMPLE.hlo.txt and a scenario OUTDIR/EXAMPLE.yaml naming it. jax is
a tool dependency only (make hlo-test installs it in a venv); the simulator
never needs it. The CPU backend computes bf16 dots in f32: its dots read f32.
"""
import argparse
import os
import sys


def examples():
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    def mlp(x, w1, w2):
        """A 2-layer MLP, FSDP x tensor: x [batch, d] over fsdp, w1 [d, f] and w2 [f, d]."""
        h = jax.nn.relu(x @ w1)
        return h @ w2

    def dot(x, w):
        """One dot, nothing sharded: the single matmul the e2e test checks by hand."""
        return x @ w

    def loop(x, w):
        """Four layers in a lax.fori_loop: a while with a known trip count of 4."""
        return jax.lax.fori_loop(0, 4, lambda i, h: jnp.tanh(h @ w), x)

    def allreduce(x):
        """A sum over the fsdp axis: one all-reduce of the local [rows, d] shard."""
        return jax.lax.psum(x, "fsdp")

    from hlo_models import more_examples  # MoE, MLA, UNet (tools/hlo_models.py)
    bf = jnp.bfloat16
    return {**more_examples(), **{
        "mlp": dict(fn=mlp, mesh=(4, 2), slice=[2, 4], args=[((64, 128), bf, P("fsdp", None)),
                                              ((128, 256), bf, P("fsdp", "tensor")),
                                              ((256, 128), bf, P("tensor", "fsdp"))],
                    out=P("fsdp", None)),
        "dot": dict(fn=dot, mesh=(1, 1), args=[((256, 512), jnp.float32, P()),
                                              ((512, 1024), jnp.float32, P())], out=P()),
        "loop": dict(fn=loop, mesh=(1, 1), args=[((128, 256), jnp.float32, P()),
                                                ((256, 256), jnp.float32, P())], out=P()),
        "allreduce": dict(fn=allreduce, mesh=(4, 1), shard_map=True,
                          args=[((4096, 256), jnp.float32, P("fsdp", None))],
                          out=P(None, None)),
        # tools/hlo_llama.py's training step at small dims (2 layers, d 256), 8 sequences
        # of 128 tokens, fsdp 4 x tensor 2: layers in a lax.scan, and unrolled
        "llama": dict(build=lambda mesh: llama_build(mesh, True), mesh=(4, 2), slice=[2, 4]),
        "llama_unrolled": dict(build=lambda mesh: llama_build(mesh, False), mesh=(4, 2),
                               slice=[2, 4]),
    }}


def llama_build(mesh, scan):
    """The Llama example: its step, abstract arguments and output shardings."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from hlo_llama import llama_args, llama_dims
    return llama_args(llama_dims("small"), 8, 128, mesh, scan)


def dump(name, outdir, chip, shape):
    import jax
    import numpy as np
    from jax.sharding import Mesh
    ex = examples()[name]
    n = ex["mesh"][0] * ex["mesh"][1]
    mesh = Mesh(np.array(jax.devices()[:n]).reshape(ex["mesh"]), ("fsdp", "tensor"))
    if "build" in ex:
        fn, args, outs = ex["build"](mesh)
        text = jax.jit(fn, out_shardings=outs).lower(*args).compile().as_text()
    else:
        text = lower_example(ex, mesh)
    write(name, ex, text, outdir, chip, shape, n)


def lower_example(ex, mesh):
    import jax
    from jax.sharding import NamedSharding
    args = [jax.ShapeDtypeStruct(s, dt, sharding=NamedSharding(mesh, spec))
            for s, dt, spec in ex["args"]]
    fn = ex["fn"]
    if ex.get("shard_map"):
        from jax import shard_map
        fn = shard_map(fn, mesh=mesh, in_specs=tuple(a[2] for a in ex["args"]),
                       out_specs=ex["out"], check_vma=False)
    return jax.jit(fn, out_shardings=NamedSharding(mesh, ex["out"])).lower(*args).compile().as_text()


def write(name, ex, text, outdir, chip, shape, n):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/"
    text = text.replace(root, "")  # the source paths jax records, relative to the repository
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, name + ".hlo.txt"), "w") as f:
        f.write(text)
    shape = shape or ex.get("slice") or [n]
    with open(os.path.join(outdir, name + ".yaml"), "w") as f:
        doc = ex["fn"].__doc__ if "fn" in ex else "tools/hlo_llama.py's training step, small dims"
        f.write("# %s (tools/hlo_dump.py): %s\n" % (name, (doc or "").strip()))
        f.write("chip: %s\ntopology: {shape: [%s]}\nprogram: {hlo: %s.hlo.txt}\n"
                % (chip, ", ".join(str(s) for s in shape), name))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("example", help="mlp, dot, loop, allreduce, llama, llama_unrolled, or all")
    ap.add_argument("outdir")
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--chip", default="v5e")
    ap.add_argument("--shape", default="", help="the slice, like 2,4 (default: a ring)")
    a = ap.parse_args()
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=%d" % a.devices)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    names = list(examples()) if a.example == "all" else [a.example]
    for nm in names:
        if nm not in examples():
            sys.exit("hlo_dump.py: unknown example '%s' (%s)" % (nm, ", ".join(examples())))
        shape = [int(s) for s in a.shape.split(",")] if a.shape and a.example != "all" else None
        dump(nm, a.outdir, a.chip, shape)


if __name__ == "__main__":
    main()
