#!/usr/bin/env python3
"""tests/run_props.py TPUSIM JSONCHECK [-n N] [--seed S] [--keep DIR] -- property-based
tests (issue 32): random but valid scenarios, each run, and what must hold of every one.

A seeded generator draws scenarios: one to four ops of random kinds from the op table
(matmul, einsum, the norms, softmax, rope, elementwise, cross_entropy, transpose, copy,
embedding, optimizer, hbm_copy, host_copy and the collectives) with random legal sizes
and dtypes, on a random chip and a small topology (1 to 16 chips), or a model step
(llama, gpt, mixtral; train, prefill or decode; data, fsdp, tensor or pipeline axes)
with a random small configuration. For each:
  - the run ends with exit 0 (or 2 with a message when a guard or check refuses it:
    counted, never a crash or another status);
  - summary.json is valid JSON (JSONCHECK) and holds no NaN or Inf (written null);
  - the total time is positive;
  - a model step's MFU is at most 100 % of the peak it names;
  - no op is faster than its roofline bound: per chip and instance, its flops over the
    chip's highest peak (every TensorCore, any dtype) and its HBM bytes over the HBM's
    published bandwidth (from configs/chips/*.yaml); its peak_fraction at most 1;
  - small cases (at most 4,096 grid steps, no model step): the fast run's total time
    within 1 % of --fidelity exact's.
Case i draws from random.Random(SEED * 1000003 + i), so a failure is reproduced by
its number alone; its scenario is printed (and kept under --keep). N defaults to
PROPS_N or 24, the seed to PROPS_SEED or 1. Exit status 1 if any property fails."""
import argparse, json, math, os, random, re, shutil, subprocess, sys, tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TOL = 1e-6           # relative slack of the roofline bounds (times written to 10 digits)
EXACT_TOL = 0.01
EXACT_MAX_GRID = 4096

UNITS = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


def chip_facts(name):
    """(highest peak FLOP/s of a chip, HBM bytes/s) from its preset."""
    text = open(os.path.join(ROOT, "configs", "chips", name + ".yaml")).read()
    tcs = int(re.search(r"^\s+count:\s*(\d+)", text, re.M).group(1))
    peak_block = re.search(r"^\s+peak:\n((?:\s{4,}\w+:.*\n)+)", text, re.M).group(1)
    peaks = [float(v) * UNITS[u] for v, u in re.findall(r":\s*([\d.]+)\s*([kMGTP]?)f\b", peak_block)]
    bw = re.search(r"^hbm:(?:\n\s.*)*?\n\s+bandwidth:\s*([\d.]+)\s*([kMGTP]?)B[p/]s", text, re.M)
    return max(peaks) * tcs, float(bw.group(1)) * UNITS[bw.group(2)]


# ---- the generator ----

CHIPS = {  # chip: topologies it takes (small; 2D chips' axes below 16 do not wrap)
    "v5e": [[1], [2], [4], [2, 2], [2, 4], [4, 4]],
    "v6e": [[1], [2], [2, 2], [2, 4], [4, 4]],
    "v4": [[2, 2, 1], [2, 2, 2], [2, 2, 4]],
    "v5p": [[2, 2, 1], [2, 2, 2], [2, 2, 4]],
    "v7": [[2, 2, 1], [2, 2, 2]],
}
POW = [128, 256, 512, 1024, 2048]
BINARY = ("add", "sub", "mul", "div", "max", "min")
ELTWISE = ["add", "sub", "mul", "div", "max", "min", "neg", "abs", "relu", "square", "exp",
           "log", "tanh", "rsqrt", "sqrt", "sigmoid", "silu", "gelu"]


def shape2(g):
    return [g.choice([8, 64, 256, 1024, 4096]), g.choice(POW[:4])]


def op_of(g, kind, shape, name):
    nd = len(shape)
    axes = sorted(g.sample(range(nd), g.randint(1, nd)))
    if kind == "matmul":
        return {"op": kind, "name": name, "m": g.choice(POW), "k": g.choice(POW),
                "n": g.choice(POW), "dtype": g.choice(["bf16", "bf16", "f32", "int8"])}
    if kind == "einsum":
        return {"op": kind, "name": name, "batch": g.choice([1, 2, 4]), "m": g.choice(POW[:4]),
                "k": g.choice(POW[:4]), "n": g.choice(POW[:4])}
    if kind in ("rmsnorm", "layernorm", "softmax", "cross_entropy", "transpose", "copy"):
        return {"op": kind, "name": name, "shape": shape2(g)}
    if kind == "rope":
        return {"op": kind, "name": name, "shape": [g.choice([128, 512, 2048]),
                                                     g.choice([1, 4, 8]), 128]}
    if kind == "elementwise":
        fn = g.choice(ELTWISE)  # a binary fn folds over 2 or more inputs
        return {"op": kind, "name": name, "fn": fn, "shape": shape2(g),
                "inputs": g.randint(2 if fn in BINARY else 1, 3)}
    if kind == "embedding":
        return {"op": kind, "name": name, "rows": g.choice([128, 1024, 4096]),
                "vocab": g.choice([1000, 32000]), "d": g.choice([256, 1024])}
    if kind == "optimizer":
        return {"op": kind, "name": name, "algorithm": g.choice(["adamw", "sgd", "adafactor"]),
                "params": g.choice([1 << 16, 1 << 20, 3 << 20])}
    if kind == "hbm_copy":
        return {"op": kind, "name": name, "bytes": g.choice(["64KiB", "1MiB", "16MiB"])}
    if kind == "host_copy":
        return {"op": kind, "name": name, "bytes": g.choice(["64KiB", "4MiB"]),
                "direction": g.choice(["to_host", "to_device"])}
    if kind in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all"):
        return {"op": kind, "name": name, "bytes": g.choice(["64KiB", "1MiB", "8MiB"]),
                "axes": axes}
    if kind == "ppermute":
        return {"op": kind, "name": name, "bytes": g.choice(["64KiB", "1MiB", "8MiB"]),
                "axis": axes[0], "shift": 1}
    raise ValueError(kind)


KINDS = ["matmul", "einsum", "rmsnorm", "layernorm", "softmax", "rope", "elementwise",
         "cross_entropy", "transpose", "copy", "embedding", "optimizer", "hbm_copy",
         "host_copy", "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "ppermute"]


def ops_scenario(g, i):
    chip = g.choice(sorted(CHIPS))
    shape = g.choice(CHIPS[chip])
    ops, names = [], []
    for j in range(g.randint(1, 4)):
        kind = g.choice(KINDS)
        if kind in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "ppermute") \
                and all(s == 1 for s in shape):
            kind = "rmsnorm"
        if kind == "matmul" and chip == "v7":  # (its MXU takes no int8)
            op = op_of(g, kind, shape, "o%d" % j)
            op["dtype"] = "bf16" if op["dtype"] == "int8" else op["dtype"]
        elif kind == "ppermute":  # an axis longer than 1
            op = op_of(g, kind, shape, "o%d" % j)
            op["axis"] = g.choice([a for a, s in enumerate(shape) if s > 1])
        else:
            op = op_of(g, kind, shape, "o%d" % j)
        if kind in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all"):
            op["axes"] = [a for a in op["axes"] if shape[a] > 1] or \
                [next(a for a, s in enumerate(shape) if s > 1)]
        # each op after a random subset of the earlier ones (none: they overlap)
        op["after"] = sorted(g.sample(names, g.randint(0, len(names))))
        names.append(op["name"])
        ops.append(op)
    return {"name": "prop%d" % i, "chip": chip, "topology": {"shape": shape}, "workload": ops}


def model_scenario(g, i):
    chip = g.choice(["v5e", "v6e", "v5p"])
    shape = g.choice([t for t in CHIPS[chip] if 2 <= math.prod(t) <= 8])
    chips = math.prod(shape)
    arch = g.choice(["llama", "llama", "gpt", "mixtral"])
    mode = g.choice(["train", "train", "prefill", "decode"])
    heads = g.choice([4, 8])
    m = {"arch": arch, "mode": mode, "layers": g.choice([2, 4]), "head_dim": 128,
         "heads": heads, "d_model": heads * 128, "ffn": g.choice([1024, 2048]),
         "vocab": g.choice([8192, 32000]), "seq_len": g.choice([256, 512, 1024])}
    if arch != "gpt":
        m["kv_heads"] = g.choice([h for h in (1, 2, 4, 8) if heads % h == 0])
    axes = ["data", "fsdp", "tensor"]
    if mode == "train" and arch != "mixtral":
        axes.append("pipeline")
    if mode == "decode":
        axes = ["data", "tensor"]
        m["seq_len"] = 1
        m["kv_len"] = g.choice([256, 1024])
    if arch == "mixtral":
        m.update({"experts": g.choice([4, 8]), "top_k": 2,
                  "capacity_factor": g.choice([-1, 1.0, 1.25]),
                  "expert_load_imbalance": g.choice([1.0, 1.3])})
        if mode != "decode":
            axes.append("expert")
    # split the chips over two axes of powers of two
    a, b = g.sample(axes, 2) if len(axes) > 1 else (axes[0], axes[0])
    ka = g.choice([k for k in (1, 2, 4, 8) if chips % k == 0])
    mesh = {a: ka} if chips // ka == 1 else {a: ka, b: chips // ka} if a != b else {a: chips}
    mesh = {k: v for k, v in mesh.items() if v > 1} or {"data": chips}
    if mesh.get("tensor", 1) > m.get("kv_heads", heads) or mesh.get("tensor", 1) > heads:
        mesh["data"] = mesh.get("data", 1) * mesh.pop("tensor")
    if mesh.get("expert", 1) > m.get("experts", 1):
        mesh["data"] = mesh.get("data", 1) * mesh.pop("expert")
    p = mesh.get("pipeline", 1)
    if p > 1:
        m["layers"] = p * g.choice([1, 2])
    per = math.prod(v for k, v in mesh.items() if k in ("data", "fsdp", "expert", "pipeline"))
    m["batch"] = per * g.choice([1, 2, 4]) * (p if p > 1 else 1)
    return {"name": "prop%d" % i, "chip": chip, "topology": {"shape": shape}, "mesh": mesh,
            "model": m}


def scenario(seed, i):
    g = random.Random(seed * 1000003 + i)
    return model_scenario(g, i) if g.random() < 0.3 else ops_scenario(g, i)


# ---- the properties ----

def no_nan(x):
    def bad(tok):
        raise ValueError("a %s in the JSON" % tok)
    return json.loads(x, parse_constant=bad)


# null by design (docs/reference.md): the default blocks' time when it was not timed, a
# block the kernel leaves unset
NULL_BY_DESIGN = ("auto_default_time_s", "auto_blocks")
# ... and the memory-bandwidth utilisation of a step that is not a decode (model.mbu)
NULL_UNLESS_DECODE = ("mbu", "mbu_bytes_per_chip")


def nulls(x, path=""):
    """The path of the first null in 'x', or ''."""
    if x is None:
        return path or "."
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
    decode = isinstance(x, dict) and x.get("mode") == "decode"
    for k, v in items:
        if k in NULL_BY_DESIGN or (k in NULL_UNLESS_DECODE and not decode and v is None):
            continue
        p = nulls(v, "%s.%s" % (path, k))
        if p:
            return p
    return ""


def run(tpusim, yaml_path, out, *extra):
    return subprocess.run([tpusim, "run", yaml_path, "-o", out, "-q", "--trace", "none",
                           *extra], capture_output=True, text=True, timeout=300)


def check(args, sc, work, facts):
    """The failures of one scenario (a list of strings), or 'refused: ...'."""
    yaml_path = os.path.join(work, sc["name"] + ".yaml")
    with open(yaml_path, "w") as f:
        json.dump(sc, f)  # JSON is YAML
    out = os.path.join(work, sc["name"])
    p = run(args.tpusim, yaml_path, out)
    if p.returncode == 2 and p.stderr.strip():
        return "refused: " + p.stderr.strip().splitlines()[0]
    if p.returncode != 0:
        return ["exit %d: %s" % (p.returncode, p.stderr.strip()[-400:])]
    fails = []
    path = os.path.join(out, "summary.json")
    if subprocess.run([args.jsoncheck, path], capture_output=True).returncode != 0:
        fails.append("summary.json is not valid JSON")
    text = open(path).read()
    try:
        s = no_nan(text)
    except ValueError as e:
        return fails + [str(e)]
    # (null is the writer's NaN or Inf; some keys are null by design: no trace path, no
    # price per token without tokens) -- none in the ops, the model, the time split
    for part in ("ops", "model", "time_by_category_s", "critical_path", "total_time_s"):
        if part in s and nulls(s[part]):
            fails.append("a null (NaN or Inf) in summary.json %s: %s" % (part, nulls(s[part])))
    total = s.get("total_time_s")
    if not (isinstance(total, (int, float)) and total > 0 and math.isfinite(total)):
        fails.append("total_time_s %r" % total)
    model = s.get("model")
    if model and model.get("mfu") is not None and model["mfu"] > 1 + TOL:
        fails.append("MFU %.4f above 100 %% of the %s peak" % (model["mfu"],
                                                              model.get("mfu_peak_dtype")))
    peak, hbm_bw = facts[sc["chip"]]
    chips = math.prod(s["topology"])
    grid = 0
    for o in s.get("ops", []):
        n = max(o.get("instances", 1), 1) * chips
        t = o["time_s"]
        grid += o.get("grid_steps", 0)
        for what, bound in (("flops", o["flops"] / n / peak),
                            ("HBM bytes", o["hbm_bytes"] / n / hbm_bw)):
            if t * (1 + TOL) < bound:
                fails.append("%s: %.6g s, faster than its %s bound %.6g s" % (o["name"], t, what,
                                                                              bound))
        if o.get("peak_fraction", 0) > 1 + TOL:
            fails.append("%s: peak_fraction %g" % (o["name"], o["peak_fraction"]))
    args.stats["ops"] += len(s.get("ops", []))
    if "model" not in sc and grid <= EXACT_MAX_GRID:
        pe = run(args.tpusim, yaml_path, out + ".exact", "--fidelity", "exact")
        if pe.returncode != 0:
            fails.append("exact: exit %d: %s" % (pe.returncode, pe.stderr.strip()[-300:]))
        else:
            te = no_nan(open(os.path.join(out + ".exact", "summary.json")).read())["total_time_s"]
            args.stats["exact"] += 1
            if abs(total / te - 1) > EXACT_TOL:
                fails.append("fast %.6g s against exact %.6g s (%+.2f %%)" %
                             (total, te, 100 * (total / te - 1)))
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(out + ".exact", ignore_errors=True)
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tpusim")
    ap.add_argument("jsoncheck")
    ap.add_argument("-n", type=int, default=int(os.environ.get("PROPS_N", "24")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("PROPS_SEED", "1")))
    ap.add_argument("--first", type=int, default=0, help="the first case number")
    ap.add_argument("--keep", help="copy each failing scenario here")
    args = ap.parse_args()
    args.stats = {"ops": 0, "exact": 0}
    facts = {c: chip_facts(c) for c in CHIPS}
    work = tempfile.mkdtemp(prefix="tpusim-props-")
    ran = refused = failed = models = 0
    reasons = {}
    try:
        for i in range(args.first, args.first + args.n):
            sc = scenario(args.seed, i)
            r = check(args, sc, work, facts)
            if isinstance(r, str):
                refused += 1
                key = re.sub(r"\d[\d.,]*", "N", r.split(": ", 2)[-1])[:90]
                reasons[key] = reasons.get(key, 0) + 1
                continue
            ran += 1
            models += "model" in sc
            if r:
                failed += 1
                print("FAIL case %d (seed %d): %s\n  %s" % (i, args.seed, "; ".join(r),
                                                            json.dumps(sc)))
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    with open(os.path.join(args.keep, "case%d.yaml" % i), "w") as f:
                        json.dump(sc, f)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("props: %d scenarios (%d model steps) ran, %d ops checked, %d compared with exact, "
          "%d refused, %d failed" % (ran, models, args.stats["ops"], args.stats["exact"], refused,
                                     failed))
    for k, v in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print("  refused %d: %s" % (v, k))
    return 1 if failed or ran < (args.n + 1) // 2 else 0


if __name__ == "__main__":
    sys.exit(main())
