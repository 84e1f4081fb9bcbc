"""tools/jax_spmd_insert.py -- how XLA's SPMD partitioner lowers JetStream-PyTorch's
insert (a prompt's K and V written into one slot of a dense cache with
dynamic_update_slice at [slot, 0, pos, 0], slot and pos traced) on 8 devices,
for the two cache layouts its engine uses: sharded on the slot axis
(shard_on_batch) and sharded on the heads (tensor parallelism). Prints, for
each, what the module after spmd-partitioning does to a cache shard: "select
over the whole shard" (every device reads and writes its whole slice: the cost
serving/serve_price.c's jetstream_insert_s prices) or "in-place update".
Runs on jax's CPU backend with 8 host devices; the partitioner is the one TPU
compilation runs, but the TPU compiler of 2024 may differ (docs/reference.md,
"JetStream's engine"). Needs jax (not a dependency of tpusim)."""
import glob
import os
import sys
import tempfile

DUMP = tempfile.mkdtemp(prefix="jax_spmd_insert.")
os.environ["XLA_FLAGS"] = ("--xla_force_host_platform_device_count=8 --xla_dump_to=" + DUMP +
                           " --xla_dump_hlo_pass_re=spmd-partitioning")

import jax  # noqa: E402  (after XLA_FLAGS)
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

LAYOUTS = {  # name: (cache shape [slots, kv_heads, cache_len, head_dim], partition spec)
    "shard_on_batch (Gemma-2B, 512 slots)": ((512, 1, 2048, 256), P("x")),
    "tensor (Llama-2-7B, 96 slots)": ((96, 32, 2048, 128), P(None, "x")),
}
PROMPT = 256


def partitioned(shape, spec, tag):
    mesh = Mesh(jax.devices()[:8], ("x",))
    sh = NamedSharding(mesh, spec)

    def insert(cache, new, slot, pos):
        out = jax.lax.dynamic_update_slice(cache, new, [slot, 0, pos, 0])
        return jax.lax.with_sharding_constraint(out, sh)

    f = jax.jit(insert, donate_argnums=(0,), out_shardings=sh)
    args = (jax.ShapeDtypeStruct(shape, jnp.bfloat16, sharding=sh),
            jax.ShapeDtypeStruct((1, shape[1], PROMPT, shape[3]), jnp.bfloat16),
            jax.ShapeDtypeStruct((), jnp.int32), jax.ShapeDtypeStruct((), jnp.int32))
    f.lower(*args).compile()
    files = sorted(glob.glob(os.path.join(DUMP, "*after_spmd-partitioning*")))
    text = open(files[-1]).read()
    os.rename(files[-1], files[-1] + "." + tag)
    return text


def main():
    for i, (name, (shape, spec)) in enumerate(LAYOUTS.items()):
        text = partitioned(shape, spec, str(i))
        local = list(shape)
        axis = next(k for k, s in enumerate(spec) if s == "x")
        local[axis] //= 8
        ty = "bf16[%s]" % ",".join(map(str, local))
        sel = any(" select(" in l and l.strip().split(" = ")[1].startswith(ty)
                  for l in text.splitlines() if " = " in l)
        print(f"{name}: shard {ty}: "
              f"{'select over the whole shard' if sel else 'in-place update'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
