"""tools/fidelity_models.py -- the model-level rows of make fidelity.

Each row of tests/fidelity/model-steps.csv becomes a model: + mesh: scenario
(the configuration that ran, see tests/fidelity/README.md); the simulated
step time (summary.json total_time_s) is compared with the row's step_s.
A row whose extra says methodology=serve is a serving benchmark and runs as
one: a serve: scenario of the row's model and chips with the engine and the
requests its extra states (serve.engine.KEY=V, serve.requests.KEY=V, the
scenario's own keys), compared by its metric (time_per_output_token: the
serving summary's tpot_s mean, as vLLM's benchmark averages TPOT over requests).
Run by `make fidelity` (MODEL_ROWS=ID,ID picks rows, MODEL_TIMEOUT=S caps
each run; a row over the cap is listed as not run); runnable alone:
    tools/fidelity_models.py TPUSIM [--data DIR] [-j N] [--only ID,ID] [--timeout S]"""
import argparse, csv, json, os, statistics, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

DIMS = ("layers", "d_model", "heads", "kv_heads", "head_dim", "ffn", "vocab", "batch", "seq_len",
        "kv_len")
KEYS = ("arch", "mode", "remat", "attention", "weight_dtype", "mu_dtype")


# A serving row (extra: methodology=serve): the summary figure each metric is, as
# (serving key, statistic), and the model keys a serve: scenario leaves to its engine:
# the step's shape (the engine forms each step's batch) and what serve.engine chooses.
SERVE_METRICS = {"time_per_output_token": ("tpot_s", "mean")}
SERVE_STEP_KEYS = ("mode", "batch", "seq_len", "kv_len", "page_size")
SERVE_ENGINE_KEYS = ("attention_kernel", "kv_cache_dtype")


def value(v):
    """A value of the extra column: true/false, a number, or the string."""
    return {"true": True, "false": False}.get(v, v if not v.replace(".", "").isdigit()
                                              else float(v) if "." in v else int(v))


def put(tree, path, v):
    """tree[a][b]...[z] = v for the dotted path a.b...z."""
    *parents, last = path.split(".")
    for k in parents:
        tree = tree.setdefault(k, {})
    tree[last] = v


def row_scenario(r):
    """The scenario of one row (a dict written as JSON, which is YAML)."""
    model = {k: int(r[k]) for k in DIMS if r[k]}
    model.update({k: r[k] for k in KEYS if r[k]})
    if model.get("remat", "").startswith("custom:"):  # custom:name=where;name=where
        model["remat"] = dict(kv.split("=") for kv in model["remat"][7:].split(";"))
    scen = {}  # the extra's dotted keys (serve.engine.max_num_seqs=256): the scenario's own
    for kv in (r.get("extra") or "").split(";"):  # more model keys: key=value;key=value
        if kv:
            k, v = kv.split("=")
            if "." in k:
                put(scen, k, value(v))
            else:
                model[k] = value(v)
    method = model.pop("methodology", "step")
    if method not in ("step", "serve") or (scen and method != "serve"):
        raise ValueError(f"row {r['id']}: methodology={method} with "
                         f"{sorted(scen) or 'no scenario keys'} (step, or serve with serve.* keys)")
    mesh = {}
    for part in r["mesh"].split():
        axis, size = part.split("=")
        mesh[axis] = int(size)
    topo = {"shape": [int(x) for x in r["shape"].split("x")]}
    if int(r["slices"]) > 1:
        topo["slices"] = int(r["slices"])
    base = {"name": "model-" + r["id"], "chip": r["chip"], "topology": topo}
    if method == "step":
        return {**base, "mesh": mesh, "model": model}
    if r["metric"] not in SERVE_METRICS:
        raise ValueError(f"row {r['id']}: methodology=serve reports "
                         f"{' or '.join(SERVE_METRICS)}, not {r['metric']}")
    serve = scen.setdefault("serve", {})
    engine = serve.setdefault("engine", {})
    for k in SERVE_STEP_KEYS:
        model.pop(k, None)
    for k in SERVE_ENGINE_KEYS:
        if k in model:
            engine.setdefault(k, model.pop(k))
    serve.update(model=model, mesh=mesh)
    return {**base, **scen}


def predicted_s(r, s):
    """The row's figure in the summary 's': a serving row's metric, else the step time."""
    if "serving" not in s:
        return s["total_time_s"]
    key, stat = SERVE_METRICS[r["metric"]]
    return s["serving"][key][stat]


TIMEOUT_S = 900
# The table runs every row: the wall cap above bounds it, so the step guard
# (default 5e7 steps of work) is raised: row 41 (v5p 8x8x8, 512B) estimates
# 7.15e7 steps, about 2 min (148 s of CPU here), and was refused.
MAX_STEPS = "200000000"


def run(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", f"over the {TIMEOUT_S} s cap")


def simulate(tpusim, scen, tmp):
    f = os.path.join(tmp, scen["name"] + ".yaml")
    with open(f, "w") as fh:
        json.dump(scen, fh)
    out = os.path.join(tmp, scen["name"])
    r = run([tpusim, "run", f, "-o", out, "--quiet", "--trace", "none", "--max-steps", MAX_STEPS])
    if r.returncode not in (0, 124) and "--trace" in r.stderr:  # a build without levels
        r = run([tpusim, "run", f, "-o", out, "--quiet", "--max-steps", MAX_STEPS])
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        return None, (lines[-1] if lines else "failed")[:90]
    with open(os.path.join(out, "summary.json")) as fh:
        s = json.load(fh)
    return s, None


def describe(r):
    """The model column: layers, width, and the step's mode and batch or the serving loop."""
    desc = f"L{r['layers']} D{r['d_model']} "
    try:
        q = row_scenario(r).get("serve", {}).get("requests")
    except ValueError:
        q = None
    if q is None:
        return desc + f"{r['mode']} b{r['batch']}"
    return desc + f"serve c{q.get('concurrency', '?')} {q.get('input_len', '?')}/" \
                  f"{q.get('output_len', '?')}"


def report(tpusim, rows, tmp, jobs):
    """Prints one line per row and a summary line; returns the |errors|."""
    def one(r):
        try:
            scen = row_scenario(r)
        except ValueError as e:
            return None, str(e)
        return simulate(tpusim, scen, tmp)
    with ThreadPoolExecutor(jobs) as ex:
        res = list(ex.map(one, rows))
    print(f"\n{'id':4} {'chip':4} {'slice':9} {'mesh':22} {'model':26} {'measured':>10} "
          f"{'predicted':>10} {'error':>7}  MFU")
    errs = []
    for r, (s, why) in zip(rows, res):
        desc = describe(r)
        head = f"{r['id']:4} {r['chip']:4} {r['shape']:9} {r['mesh']:22} {desc:26} " \
               f"{float(r['step_s']):10.4g}"
        if s is None:
            print(f"{head} {'-':>10} {'-':>7}  not run: {why}")
            continue
        t = predicted_s(r, s)
        e = (t - float(r["step_s"])) / float(r["step_s"])
        errs.append(abs(e))
        if "serving" in s:  # no MFU: a serving run's steps differ
            v = s["serving"]
            print(f"{head} {t:10.4g} {100 * e:+6.1f}%  serve: {v['completed']} requests, "
                  f"mean batch {v['mean_batch']['sequences']:.0f} seqs / "
                  f"{v['mean_batch']['tokens']:.0f} tokens, {v['steps']} steps")
            continue
        mfu = s.get("model", {}).get("mfu", float("nan"))
        print(f"{head} {t:10.4g} {100 * e:+6.1f}%  {100 * mfu:.1f}%")
    if errs:
        print(f"model steps: {len(errs)} of {len(rows)} rows run, median |error| "
              f"{100 * statistics.median(errs):.1f}%, worst {100 * max(errs):.1f}%")
    else:
        print(f"model steps: none of {len(rows)} rows run")
    return errs


def load_rows(data, only=None):
    with open(os.path.join(data, "model-steps.csv")) as fh:
        rows = list(csv.DictReader(fh))
    return [r for r in rows if not only or r["id"] in only]


def main():
    global TIMEOUT_S
    ap = argparse.ArgumentParser()
    ap.add_argument("tpusim")
    ap.add_argument("--data", default="tests/fidelity")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S)
    a = ap.parse_args()
    TIMEOUT_S = a.timeout
    rows = load_rows(a.data, set(a.only.split(",")) if a.only else None)
    with tempfile.TemporaryDirectory() as tmp:
        report(a.tpusim, rows, tmp, a.j)


if __name__ == "__main__":
    sys.exit(main())
