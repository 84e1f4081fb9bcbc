"""tools/hlo_models.py -- more examples for tools/hlo_dump.py, in plain JAX,
each on an FSDP x tensor mesh (axes "fsdp", "tensor"):

- moe: a Mixtral-style mixture-of-experts layer (top-2 gating over E experts,
  SwiGLU experts), the experts over the tensor axis (expert parallelism): each
  device routes its tokens, packs each expert's at most C of them
  (GShard-style dispatch by one-hot einsums), sends them to the expert's
  device with an all_to_all, runs its experts and sends the results back
  with a second all_to_all, then combines them with the gate weights;
- mla: a DeepSeek-V2-style multi-head latent attention block: queries and
  keys/values through low-rank down projections (RMS-normed latents), the
  decoupled RoPE part shared by all heads, causal softmax attention, the
  output projection; batch over fsdp, heads over tensor;
- unet: a small UNet block (NHWC): two 3x3 convolutions with GroupNorm and
  SiLU and a residual, a stride-2 downsampling convolution, a
  nearest-neighbour upsampling and a skip concatenation merged by a 1x1
  convolution; batch over fsdp, channels over tensor.

Sizes are small so that the dumps stay small; the functions take their
sizes from their arguments. jax is a tool dependency only.
"""

MOE = dict(tokens=64, d=128, ffn=256, experts=4, top_k=2, capacity=32)


def moe_layer(x, wg, w1, w3, w2):
    """A Mixtral-style MoE layer: top-2 of 4 experts, SwiGLU, experts over tensor (all_to_all)."""
    import jax
    import jax.numpy as jnp
    e_local = w1.shape[0]             # this device's experts
    n = jax.lax.psum(1, "tensor")     # expert-parallel devices
    E, C, k = e_local * n, MOE["capacity"], MOE["top_k"]
    logits = (x @ wg).astype(jnp.float32)                      # [T, E]
    gate, idx = jax.lax.top_k(jax.nn.softmax(logits), k)      # [T, k]
    gate = gate / gate.sum(-1, keepdims=True)
    onehot = jax.nn.one_hot(idx, E, dtype=jnp.float32)        # [T, k, E]
    pos = jnp.cumsum(onehot.reshape(-1, E), axis=0).reshape(onehot.shape) * onehot - 1
    keep = (pos < C) & (onehot > 0)                            # capacity C per expert
    slot = jax.nn.one_hot(jnp.where(keep, pos, -1).astype(jnp.int32), C, dtype=x.dtype)
    dispatch = (onehot.astype(x.dtype)[..., None] * slot).sum(1)          # [T, E, C]
    combine = ((gate[..., None, None] * onehot[..., None]).astype(x.dtype) * slot).sum(1)
    packed = jnp.einsum("tec,td->ecd", dispatch, x)                       # [E, C, D]
    local = jax.lax.all_to_all(packed, "tensor", 0, 1, tiled=True)        # [E/n, n*C, D]
    h = jax.nn.silu(jnp.einsum("ecd,edf->ecf", local, w1)) * jnp.einsum("ecd,edf->ecf", local, w3)
    y = jnp.einsum("ecf,efd->ecd", h, w2)                                 # [E/n, n*C, D]
    back = jax.lax.all_to_all(y, "tensor", 1, 0, tiled=True)              # [E, C, D]
    return jnp.einsum("tec,ecd->td", combine, back)


MLA = dict(batch=8, seq=128, d=256, heads=8, q_lora=128, kv_lora=64, nope=32, rope=16, v=32)


def mla_block(x, wq_a, wq_b, wkv_a, wkv_b, wo):
    """A DeepSeek-style MLA block: low-rank q and kv latents, decoupled RoPE, causal attention."""
    import jax
    import jax.numpy as jnp
    B, S, _ = x.shape
    dn, dr, dv, kvl = MLA["nope"], MLA["rope"], MLA["v"], MLA["kv_lora"]
    H = wq_b.shape[1] // (dn + dr)

    def rms(t):
        t32 = t.astype(jnp.float32)
        return (t32 * jax.lax.rsqrt(jnp.mean(t32 * t32, -1, keepdims=True) + 1e-6)).astype(t.dtype)

    def rope(t):  # [..., S, r]: rotate halves by position
        half = t.shape[-1] // 2
        f = 1.0 / (10000 ** (jnp.arange(half, dtype=jnp.float32) / half))
        ang = jnp.arange(S, dtype=jnp.float32)[:, None] * f[None, :]
        c, s = jnp.cos(ang).astype(t.dtype), jnp.sin(ang).astype(t.dtype)
        a, b = t[..., :half], t[..., half:]
        return jnp.concatenate([a * c - b * s, a * s + b * c], -1)

    q = (rms(x @ wq_a) @ wq_b).reshape(B, S, H, dn + dr)
    q_nope, q_rope = q[..., :dn], rope(q[..., dn:].transpose(0, 2, 1, 3))
    kv_a = x @ wkv_a                                           # [B, S, kv_lora + rope]
    k_rope = rope(kv_a[..., kvl:])[:, None]                    # [B, 1, S, rope]: one for all heads
    kv = (rms(kv_a[..., :kvl]) @ wkv_b).reshape(B, S, H, dn + dv)
    k_nope, v = kv[..., :dn], kv[..., dn:]
    s = (jnp.einsum("bqhd,bkhd->bhqk", q_nope, k_nope) +
         jnp.einsum("bhqd,bxkd->bhqk", q_rope, k_rope)).astype(jnp.float32) / (dn + dr) ** 0.5
    s = jnp.where(jnp.tril(jnp.ones((S, S), bool)), s, -1e30)
    p = jax.nn.softmax(s).astype(x.dtype)
    o = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(B, S, H * dv)
    return x + o @ wo


UNET = dict(batch=4, hw=32, ch=64, groups=8)


def unet_block(x, w1, w2, wd, wu, wm):
    """A small UNet block (NHWC): conv-GroupNorm-SiLU x2 with a residual, down, up, skip concat."""
    import jax
    import jax.numpy as jnp
    dn = ("NHWC", "HWIO", "NHWC")

    def conv(t, w, stride=1):
        return jax.lax.conv_general_dilated(t, w, (stride, stride), "SAME",
                                            dimension_numbers=dn)

    def gn_silu(t):
        N, Hh, W, Cc = t.shape
        g = t.reshape(N, Hh, W, UNET["groups"], Cc // UNET["groups"]).astype(jnp.float32)
        m = g.mean((1, 2, 4), keepdims=True)
        v = ((g - m) ** 2).mean((1, 2, 4), keepdims=True)
        return jax.nn.silu(((g - m) * jax.lax.rsqrt(v + 1e-5)).reshape(t.shape)).astype(t.dtype)

    h = x + conv(gn_silu(conv(gn_silu(x), w1)), w2)             # residual block, 32x32
    d = conv(h, wd, 2)                                          # down to 16x16
    u = conv(jnp.repeat(jnp.repeat(d, 2, 1), 2, 2), wu)         # up to 32x32
    return conv(jnp.concatenate([h, u], -1), wm)                # skip concat, 1x1 merge


def more_examples():
    """The entries for hlo_dump.examples()."""
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P
    bf = jnp.bfloat16
    m, a, u = MOE, MLA, UNET
    return {
        "moe": dict(fn=moe_layer, mesh=(2, 4), slice=[2, 4], shard_map=True,
                    args=[((8 * m["tokens"], m["d"]), bf, P(("fsdp", "tensor"), None)),
                          ((m["d"], m["experts"]), bf, P(None, None)),
                          ((m["experts"], m["d"], m["ffn"]), bf, P("tensor", None, None)),
                          ((m["experts"], m["d"], m["ffn"]), bf, P("tensor", None, None)),
                          ((m["experts"], m["ffn"], m["d"]), bf, P("tensor", None, None))],
                    out=P(("fsdp", "tensor"), None)),
        "mla": dict(fn=mla_block, mesh=(2, 4), slice=[2, 4],
                    args=[((a["batch"], a["seq"], a["d"]), bf, P("fsdp", None, None)),
                          ((a["d"], a["q_lora"]), bf, P("fsdp", None)),
                          ((a["q_lora"], a["heads"] * (a["nope"] + a["rope"])), bf,
                           P(None, "tensor")),
                          ((a["d"], a["kv_lora"] + a["rope"]), bf, P("fsdp", None)),
                          ((a["kv_lora"], a["heads"] * (a["nope"] + a["v"])), bf,
                           P(None, "tensor")),
                          ((a["heads"] * a["v"], a["d"]), bf, P("tensor", "fsdp"))],
                    out=P("fsdp", None, None)),
        "unet": dict(fn=unet_block, mesh=(2, 2), slice=[2, 2],
                     args=[((u["batch"], u["hw"], u["hw"], u["ch"]), bf, P("fsdp", None, None, None)),
                           ((3, 3, u["ch"], u["ch"]), bf, P(None, None, None, "tensor")),
                           ((3, 3, u["ch"], u["ch"]), bf, P(None, None, None, "tensor")),
                           ((3, 3, u["ch"], u["ch"]), bf, P(None, None, None, "tensor")),
                           ((3, 3, u["ch"], u["ch"]), bf, P(None, None, None, "tensor")),
                           ((1, 1, 2 * u["ch"], u["ch"]), bf, P(None, None, None, "tensor"))],
                     out=P("fsdp", None, None, None)),
    }
