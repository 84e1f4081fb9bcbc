#!/usr/bin/env python3
"""tools/hlo_agree.py -- tpusim's model: path against the real compiler: the
same Llama training step written in plain JAX (tools/hlo_llama.py), lowered
and SPMD-partitioned by XLA on forced CPU devices, simulated as an HLO
program, beside the model: scenario of the same dims, batch, mesh, remat and
attention; prints the agreement table and the step time by category --
matmul, attention, elementwise, exposed collectives (docs/reference.md,
"Agreement with model:").

    python3 tools/hlo_agree.py TPUSIM OUTDIR [--preset llama3-8b] [--seq 2048]
        [--batch 2048] [--shape 16,16] [--fsdp 256] [--tensor 1] [--chip v5e]
        [--dump-only]

Run it with a python that has jax (make hlo-agree uses make hlo-test's venv).
The HLO is the module right after SPMD partitioning and XLA's
target-independent passes, before the CPU backend's own (all-reduce
promotion, bf16 normalization, fusion): the program as partitioned for any
backend, in its own dtypes. tpusim fuses and creates reduce-scatters as TPU's
pipeline would (workload/hlo_fuse.c). No TPU is needed.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def dump(a, outdir):
    """The step's HLO after SPMD partitioning into outdir/llama.hlo.txt."""
    dd = tempfile.mkdtemp(prefix="hlo_agree_")
    n = a.fsdp * a.tensor
    os.environ["XLA_FLAGS"] = ("--xla_force_host_platform_device_count=%d --xla_dump_to=%s "
                               "--xla_dump_hlo_as_text --xla_dump_hlo_pass_re=all-reduce-promotion"
                               % (n, dd))
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jax
    import numpy as np
    from jax.sharding import Mesh
    from hlo_llama import llama_args, llama_dims
    mesh = Mesh(np.array(jax.devices()[:n]).reshape(a.fsdp, a.tensor), ("fsdp", "tensor"))
    dims = llama_dims(a.preset)
    step, args, outs = llama_args(dims, a.batch, a.seq, mesh, scan=True)
    t = time.time()
    jax.jit(step, out_shardings=outs, donate_argnums=(0, 1)).lower(*args).compile()
    files = glob.glob(os.path.join(dd, "*before_all-reduce-promotion.txt"))
    if not files:
        sys.exit("hlo_agree.py: XLA wrote no module before all-reduce-promotion in %s" % dd)
    path = os.path.join(outdir, "llama.hlo.txt")
    with open(files[0]) as f, open(path, "w") as g:
        g.write(f.read())
    shutil.rmtree(dd)
    return path, time.time() - t, dims


def scenarios(a, outdir, dims):
    shape = ", ".join(a.shape.split(","))
    mesh = "{fsdp: %d%s}" % (a.fsdp, ", tensor: %d" % a.tensor if a.tensor > 1 else "")
    with open(os.path.join(outdir, "model.yaml"), "w") as f:
        f.write("# tools/hlo_agree.py: the model: side\nname: agree-model\nchip: %s\n"
                "topology: {shape: [%s]}\nmesh: %s\nmodel:\n  preset: %s\n  seq_len: %d\n"
                "  batch: %d\n  remat: full\n  attention: dot_product\n"
                % (a.chip, shape, mesh, a.preset, a.seq, a.batch))
    # the HLO side: HBM raised so that a program above the chip's HBM still
    # runs (its peak is reported beside the model's)
    with open(os.path.join(outdir, "hlo.yaml"), "w") as f:
        f.write("# tools/hlo_agree.py: the HLO side\nname: agree-hlo\n"
                "chip: {base: %s, hbm: {capacity: 1099511627776}}\ntopology: {shape: [%s]}\n"
                "program: {hlo: llama.hlo.txt}\n" % (a.chip, shape))


def run(tpusim, yaml, out):
    t = time.time()
    r = subprocess.run([tpusim, "run", yaml, "-o", out, "-q", "--trace", "none",
                        "--max-steps", "4000000000"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("hlo_agree.py: %s failed:\n%s" % (yaml, r.stderr))
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f), time.time() - t


COLL = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "remote_copy")
MATMUL = ("matmul", "einsum")


def figures(s, chips):
    """Per chip: step, matmul flops, ICI bytes by collective kind, time by category."""
    f = {"step_s": s["total_time_s"], "matmul_flops": 0.0, "coll": {k: 0.0 for k in COLL}}
    for o in s["ops"]:
        if o["kind"] in MATMUL:
            f["matmul_flops"] += o.get("flops", 0) / chips
        if o["kind"] in COLL:
            f["coll"][o["kind"]] += o.get("ici_bytes", 0) / chips
    f["coll_total"] = sum(f["coll"].values())
    f["cat"] = s["time_by_category_s"]
    if "program" in s:
        f["peak"] = s["program"]["peak_memory_bytes"]
    else:
        f["peak"] = s["model"]["memory_bytes"]["total"]
    return f


def hlo_shapes(path):
    """{instruction name: (dims, [operand names])} of an HLO text module."""
    inst = re.compile(r"^\s*(?:ROOT\s+)?%([\w.\-]+)\s*=\s*\w+\[([\d,]*)\][^ ]*\s+[\w\-]+\(([^)]*)\)")
    out = {}
    with open(path) as f:
        for line in f:
            m = inst.match(line)
            if m:
                dims = [int(d) for d in m.group(2).split(",") if d]
                ops = re.findall(r"%([\w.\-]+)", m.group(3))
                out[m.group(1)] = (dims, ops)
    return out


def attention_hlo(op, shapes, seq):
    """Whether an HLO op computes attention: an einsum over the scores
    (bqkgd,bskd->bkgqs and back) or an op reading or writing [.., S, S]."""
    if "bkgqs" in op.get("op_name", ""):
        return True
    name = op["name"].split(".")[-1].replace(":", ".")
    dims, ops = shapes.get(name, ([], []))
    cands = [dims] + [shapes.get(o, ([], []))[0] for o in ops]
    return any(len(d) >= 2 and d[-1] == seq and d[-2] == seq for d in cands)


def breakdown(s, attention):
    """The step's time by category: matmul (not attention), attention
    (its einsums and softmax), elementwise (every other compute op: norms,
    RoPE, residuals, converts, the loss, the optimizer, copies), exposed
    collectives, and what is left (idle)."""
    b = {"matmul": 0.0, "attention": 0.0, "elementwise": 0.0}
    for o in s["ops"]:
        if o.get("category") not in ("matmul", "fusion", "attention", "compute_other"):
            continue
        if attention(o):
            b["attention"] += o["time_s"]
        elif o["kind"] in MATMUL:
            b["matmul"] += o["time_s"]
        else:
            b["elementwise"] += o["time_s"]
    b["collectives (exposed)"] = s["time_by_category_s"].get("collective_exposed", 0.0)
    b["other"] = s["total_time_s"] - sum(b.values())
    return b


def breakdown_table(m, h):
    out = ["| step time by category (s) | model: | HLO program | HLO − model |",
           "|---|---:|---:|---:|"]
    for k in m:
        out.append("| %s | %.3f | %.3f | %+.3f |" % (k, m[k], h[k], h[k] - m[k]))
    out.append("| step | %.3f | %.3f | %+.3f |" % (sum(m.values()), sum(h.values()),
                                                    sum(h.values()) - sum(m.values())))
    return "\n".join(out)


def pct(h, m):
    return "%+.1f %%" % (100.0 * (h - m) / m) if m else ("0" if h == 0 else "new")


def table(m, h):
    rows = [("step time (s)", m["step_s"], h["step_s"], "%.3f"),
            ("matmul flops per chip", m["matmul_flops"], h["matmul_flops"], "%.4g"),
            ("ICI bytes per chip, all collectives", m["coll_total"], h["coll_total"], "%.4g")]
    rows += [("  %s" % k, m["coll"][k], h["coll"][k], "%.4g") for k in COLL
             if m["coll"][k] or h["coll"][k]]
    rows += [("time: %s (s)" % k, m["cat"].get(k, 0), h["cat"].get(k, 0), "%.3f")
             for k in ("matmul", "attention", "fusion", "collective_exposed", "collective_hidden")]
    rows += [("peak memory per chip (GB)", m["peak"] / 1e9, h["peak"] / 1e9, "%.2f")]
    out = ["| figure | model: | HLO program | HLO vs model |", "|---|---:|---:|---:|"]
    for name, a, b, fmt in rows:
        out.append("| %s | %s | %s | %s |" % (name, fmt % a, fmt % b, pct(b, a)))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tpusim")
    ap.add_argument("outdir")
    ap.add_argument("--preset", default="llama3-8b")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--shape", default="16,16")
    ap.add_argument("--fsdp", type=int, default=256)
    ap.add_argument("--tensor", type=int, default=1)
    ap.add_argument("--chip", default="v5e")
    ap.add_argument("--dump-only", action="store_true",
                    help="write llama.hlo.txt, hlo.yaml and model.yaml, run nothing")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    hlo, dump_s, dims = dump(a, a.outdir)
    scenarios(a, a.outdir, dims)
    if a.dump_only:
        return
    chips = a.fsdp * a.tensor
    ms, mt = run(a.tpusim, os.path.join(a.outdir, "model.yaml"), os.path.join(a.outdir, "model"))
    hs, ht = run(a.tpusim, os.path.join(a.outdir, "hlo.yaml"), os.path.join(a.outdir, "hlo"))
    print("%s, seq %d, batch %d, %s %s, fsdp %d x tensor %d, remat full, dot_product attention"
          % (a.preset, a.seq, a.batch, a.chip, a.shape.replace(",", "x"), a.fsdp, a.tensor))
    print("(dump %.0f s, %.1f MB; model: run %.1f s, HLO run %.1f s)\n"
          % (dump_s, os.path.getsize(hlo) / 1e6, mt, ht))
    print(table(figures(ms, chips), figures(hs, chips)))
    shapes = hlo_shapes(hlo)
    print()
    print(breakdown_table(breakdown(ms, lambda o: "attn" in o["name"]),
                          breakdown(hs, lambda o: attention_hlo(o, shapes, a.seq))))


if __name__ == "__main__":
    main()
