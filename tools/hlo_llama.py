"""tools/hlo_llama.py -- a Llama-style decoder's training step in plain JAX for
tools/hlo_dump.py (and tools/hlo_agree.py, which checks it against tpusim's
model: path).

The step is what MaxText runs for a dense Llama with remat: full and
attention: dot_product: the f32 parameters cast to bf16, the token embedding,
L layers of RMSNorm, Q/K/V projections, RoPE, grouped-query causal attention
(the scores materialized in bf16, MaxText's
float32_qk_product and float32_logits off, a softmax), the output projection, a
residual add, RMSNorm, the gated SiLU MLP and a residual add; the final norm,
the logits and the cross entropy in f32; the gradient with every layer
recomputed (jax.checkpoint, nothing saved); AdamW on the f32 parameters and
its two f32 moments. Layers run in a lax.scan over stacked weights ("scan")
or one after the other ("unrolled"). Parameters are sharded FSDP x tensor as
MaxText shards them: the embedding dimension over fsdp, heads and the MLP's
hidden dimension over tensor; the batch over fsdp.
"""


def llama_dims(preset):
    """The dims of a tpusim preset (configs/models/presets/), or a small test model."""
    if preset == "llama3-8b":  # meta-llama/Meta-Llama-3.1-8B config.json
        return dict(layers=32, d=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336,
                    vocab=128256)
    return dict(layers=2, d=256, heads=4, kv_heads=2, head_dim=64, ffn=512, vocab=1024)


def llama_step(dims, mesh, scan=True):
    """The training step f(params, opt, tokens, targets) -> (params, opt, loss) and
    the parameters' shapes and PartitionSpecs as {name: (shape, spec)}. The
    activations are constrained as MaxText's logical axis rules put them: the
    batch over fsdp, heads and the MLP's hidden dimension over tensor."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P

    def cons(x, *spec):
        return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P(*spec)))

    L, D, H, K = dims["layers"], dims["d"], dims["heads"], dims["kv_heads"]
    Dh, F, V = dims["head_dim"], dims["ffn"], dims["vocab"]
    bf = jnp.bfloat16
    shapes = {
        "embed": ((V, D), P("tensor", "fsdp")),
        "wq": ((L, D, H * Dh), P(None, "fsdp", "tensor")),
        "wk": ((L, D, K * Dh), P(None, "fsdp", "tensor")),
        "wv": ((L, D, K * Dh), P(None, "fsdp", "tensor")),
        "wo": ((L, H * Dh, D), P(None, "tensor", "fsdp")),
        "wg": ((L, D, F), P(None, "fsdp", "tensor")),
        "wu": ((L, D, F), P(None, "fsdp", "tensor")),
        "wd": ((L, F, D), P(None, "tensor", "fsdp")),
        "n1": ((L, D), P(None, None)),
        "n2": ((L, D), P(None, None)),
        "nf": ((D,), P(None)),
        "head": ((D, V), P("fsdp", "tensor")),
    }

    def rms(x, g):
        x32 = x.astype(jnp.float32)
        y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + 1e-5)
        return (y * g).astype(bf)

    def rope(x):  # x [B, S, n, Dh]
        S = x.shape[1]
        inv = 1.0 / (500000.0 ** (jnp.arange(0, Dh, 2, dtype=jnp.float32) / Dh))
        ang = jnp.arange(S, dtype=jnp.float32)[:, None] * inv[None, :]
        sin, cos = jnp.sin(ang)[None, :, None, :], jnp.cos(ang)[None, :, None, :]
        x1, x2 = jnp.split(x.astype(jnp.float32), 2, axis=-1)
        return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).astype(bf)

    def layer(x, w):
        B, S, _ = x.shape
        x = cons(x, "fsdp", None, None)
        h = rms(x, w["n1"])
        q = cons((h @ w["wq"].astype(bf)).reshape(B, S, H, Dh), "fsdp", None, "tensor", None)
        k = cons((h @ w["wk"].astype(bf)).reshape(B, S, K, Dh), "fsdp", None, "tensor", None)
        v = cons((h @ w["wv"].astype(bf)).reshape(B, S, K, Dh), "fsdp", None, "tensor", None)
        q = rope(q).reshape(B, S, K, H // K, Dh)
        k = rope(k)
        s = jnp.einsum("bqkgd,bskd->bkgqs", q, k) * (Dh ** -0.5)
        s = cons(s, "fsdp", "tensor", None, None, None)
        mask = jnp.tril(jnp.ones((S, S), bool))
        s = jnp.where(mask, s, jnp.asarray(-1e9, bf))  # MaxText's default: bf16 logits
        p = jax.nn.softmax(s, axis=-1)
        o = jnp.einsum("bkgqs,bskd->bqkgd", p, v).reshape(B, S, H * Dh)
        o = cons(o, "fsdp", None, "tensor")
        x = cons(x + o @ w["wo"].astype(bf), "fsdp", None, None)
        h = rms(x, w["n2"])
        a = jax.nn.silu(h @ w["wg"].astype(bf)) * (h @ w["wu"].astype(bf))
        a = cons(a, "fsdp", None, "tensor")
        return cons(x + a @ w["wd"].astype(bf), "fsdp", None, None)

    layer_remat = jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable)
    per_layer = ("wq", "wk", "wv", "wo", "wg", "wu", "wd", "n1", "n2")

    def loss_fn(p, tokens, targets):
        x = cons(jnp.take(p["embed"].astype(bf), tokens, axis=0), "fsdp", None, None)
        stacked = {n: p[n] for n in per_layer}
        if scan:
            x, _ = jax.lax.scan(lambda c, w: (layer_remat(c, w), None), x, stacked)
        else:
            for i in range(L):
                x = layer_remat(x, {n: stacked[n][i] for n in per_layer})
        x = rms(x, p["nf"])
        logits = cons((x @ p["head"].astype(bf)).astype(jnp.float32), "fsdp", None, "tensor")
        lse = jax.nn.logsumexp(logits, axis=-1)
        tgt = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
        return jnp.mean(lse - tgt)

    def step(params, opt, tokens, targets):
        loss, g = jax.value_and_grad(loss_fn)(params, tokens, targets)
        lr, b1, b2, eps, wd = 1e-4, 0.9, 0.95, 1e-8, 0.1
        t = opt["t"] + 1
        m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, opt["m"], g)
        v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, opt["v"], g)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        new = jax.tree.map(lambda p, m, v: p - lr * ((m / c1) / (jnp.sqrt(v / c2) + eps) + wd * p),
                           params, m, v)
        return new, {"m": m, "v": v, "t": t}, loss

    return step, shapes


def llama_args(dims, batch, seq, mesh, scan=True):
    """The step function and its abstract arguments (jax.ShapeDtypeStruct with
    their NamedShardings on 'mesh'), and the output shardings."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P

    step, shapes = llama_step(dims, mesh, scan)

    def sds(shape, dt, spec):
        return jax.ShapeDtypeStruct(shape, dt, sharding=NamedSharding(mesh, spec))

    params = {n: sds(s, jnp.float32, spec) for n, (s, spec) in shapes.items()}
    opt = {"m": dict(params), "v": dict(params), "t": sds((), jnp.float32, P())}
    tok = sds((batch, seq), jnp.int32, P("fsdp", None))
    pshard = {n: NamedSharding(mesh, spec) for n, (s, spec) in shapes.items()}
    out = (pshard, {"m": pshard, "v": pshard, "t": NamedSharding(mesh, P())},
           NamedSharding(mesh, P()))
    return step, [params, opt, tok, tok], out
