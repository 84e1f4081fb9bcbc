#!/usr/bin/env python3
"""tools/fast_exact.py TPUSIM [--max-steps N] [--timeout S] [-j N] -- fidelity fast against
exact on everything the project ships: every scenario (configs/scenarios/),
model step (configs/models/), every feasible point of every sweep
(configs/sweeps/) and the collective examples (the collective points of
tests/fidelity/points.json and the all-reduce and no-wraparound gathers of
issue 16). Each is run in both fidelities and the total times compared; the
check passes when every pair agrees within 1 %. A scenario whose run the
resource guard refuses at --max-steps (default 1.2e8 steps of work, the
work of 2e7 exact grid steps at 6 each: an exact run of more takes minutes) is listed as skipped with the guard's reason, not
compared; so is one whose run takes longer than --timeout seconds (default
300). --only TEXT compares only the cases whose name contains TEXT. Exit
status 1 when a pair differs by more than 1 %."""
import argparse, csv, glob, json, os, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

TOL = 0.01
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")


def collective_examples():
    """(name, scenario) of the collective examples."""
    out = []
    sys.path.insert(0, HERE)
    import importlib.util
    spec = importlib.util.spec_from_file_location("fidelity", os.path.join(HERE, "fidelity.py"))
    fid = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fid)
    with open(os.path.join(ROOT, "tests", "fidelity", "points.json")) as fh:
        for p in json.load(fh):
            if p["kind"] in ("all_gather", "all_reduce", "reduce_scatter", "ppermute"):
                out.append((p["id"], fid.point_scenario(p)))
    ar = lambda chip, shape, axes: {"chip": chip, "topology": {"shape": shape},
                                   "workload": [{"op": "all_reduce", "axes": axes,
                                                 "bytes": "1GiB"}]}
    out += [("ar-v5p-4x4x4", ar("v5p", [4, 4, 4], [0, 1, 2])),
            ("ar-v5p-8x8x8", ar("v5p", [8, 8, 8], [0, 1, 2])),
            ("ar-v5e-16x16", ar("v5e", [16, 16], [0, 1])),
            ("ag-v5e-8x4-line", {"chip": "v5e", "topology": {"shape": [8, 4]},
                                 "workload": [{"op": "all_gather", "axes": [1],
                                               "bytes": 8388608}]}),
            ("ag-v5e-2x4-all", {"chip": "v5e", "topology": {"shape": [2, 4]},
                                "workload": [{"op": "all_gather", "axes": [0, 1],
                                              "bytes": "128MiB"}]})]
    return out


TIMEOUT = [300]


def run(tpusim, path, fidelity, out, max_steps):
    try:
        r = subprocess.run([tpusim, "run", path, "-o", out, "-q", "--fidelity", fidelity,
                            "--max-steps", str(max_steps)], capture_output=True, text=True,
                           timeout=TIMEOUT[0])
    except subprocess.TimeoutExpired:
        return None, f"skipped: the {fidelity} run takes longer than {TIMEOUT[0]} s"
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["failed"])[-1]
    with open(os.path.join(out, "summary.json")) as fh:
        return json.load(fh)["total_time_s"], None


def sweep(tpusim, spec, fidelity, out, jobs, max_steps):
    """{point: (time or None, reason)}, or None when the sweep takes longer
    than TIMEOUT x its points."""
    try:
        subprocess.run([tpusim, "sweep", spec, "-o", out, "-j", str(jobs), "--force",
                        "--set", f"options.fidelity={fidelity}", "--set",
                        f"options.max_steps={max_steps}"], capture_output=True, text=True,
                       timeout=TIMEOUT[0] * 4)
    except subprocess.TimeoutExpired:
        return None
    res = {}
    path = os.path.join(out, "sweep.csv")
    if os.path.exists(path):
        with open(path) as fh:
            for row in csv.DictReader(fh):
                res[row["point"]] = (float(row["time_s"]) if row["status"] == "ok" else None,
                                     row.get("reason", ""))
    return res


def show(row):
    name, f, e, note = row
    if f is None or e is None:
        print(f"{name[:52]:52} {'-':>12} {'-':>12} {'':>7}  {note[:90]}", flush=True)
        return
    d = (f - e) / e
    flag = "  OUTSIDE 1%" if abs(d) > TOL else ""
    print(f"{name[:52]:52} {f*1e3:10.4f}ms {e*1e3:10.4f}ms {100*d:+6.2f}%{flag}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tpusim")
    ap.add_argument("--max-steps", type=int, default=120000000)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default="", help="compare only the cases whose name contains this")
    a = ap.parse_args()
    TIMEOUT[0] = a.timeout
    rows = []  # (name, fast, exact, note)
    with tempfile.TemporaryDirectory() as tmp:
        items = [(os.path.relpath(f, ROOT), f) for f in
                 sorted(glob.glob(os.path.join(ROOT, "configs", "scenarios", "*.yaml"))) +
                 sorted(glob.glob(os.path.join(ROOT, "configs", "models", "*.yaml")))]
        for name, scen in collective_examples():
            f = os.path.join(tmp, name + ".yaml")
            with open(f, "w") as fh:
                json.dump(scen, fh)  # JSON is YAML
            items.append((name, f))
        items = [it for it in items if a.only in it[0]]

        def pair(it):
            name, f = it
            tag = name.replace("/", "_")
            fa, ea = run(a.tpusim, f, "fast", os.path.join(tmp, tag + ".fast"), a.max_steps)
            if fa is None:
                return name, None, None, ea
            ex, eb = run(a.tpusim, f, "exact", os.path.join(tmp, tag + ".exact"), a.max_steps)
            if ex is None:  # not compared: say why
                return name, None, None, eb
            return name, fa, ex, eb

        print(f"{'scenario':52} {'fast':>12} {'exact':>12} {'diff':>7}", flush=True)
        with ThreadPoolExecutor(a.j) as ex:
            for row in ex.map(pair, items):
                rows.append(row)
                show(row)
        for spec in sorted(glob.glob(os.path.join(ROOT, "configs", "sweeps", "*.yaml"))):
            base = os.path.splitext(os.path.basename(spec))[0]
            if a.only not in base:
                continue
            fa = sweep(a.tpusim, spec, "fast", os.path.join(tmp, base + ".fast"), a.j, a.max_steps)
            ex = sweep(a.tpusim, spec, "exact", os.path.join(tmp, base + ".exact"), a.j,
                       a.max_steps) if fa is not None else None
            if fa is None or ex is None:
                rows.append((base, None, None, f"skipped: the {'fast' if fa is None else 'exact'} "
                             f"sweep takes longer than {4 * TIMEOUT[0]} s"))
                show(rows[-1])
                continue
            for pt in sorted(fa, key=int):
                (tf, why), (te, _) = fa[pt], ex.get(pt, (None, ""))
                if tf is None and "infeasible" not in why:
                    rows.append((f"{base}#{pt}", None, None, why))
                elif tf is not None:
                    rows.append((f"{base}#{pt}", tf, te, "" if te else "exact run failed"))
                else:
                    continue
                show(rows[-1])
    bad = skipped = 0
    worst = (0.0, "")
    for name, f, e, note in rows:
        if f is None or e is None:
            skipped += 1
            continue
        d = (f - e) / e
        bad += abs(d) > TOL
        worst = max(worst, (abs(d), name))
    n = len(rows) - skipped
    print(f"fast vs exact: {n - bad} of {n} within {100*TOL:.0f} % (worst {100*worst[0]:.2f} %, "
          f"{worst[1]}); {skipped} not compared (resource guard at --max-steps {a.max_steps}, "
          f"runs over {a.timeout} s, or a failed run: the reasons above)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
