"""tools/fidelity_common.py -- what the table scripts of make fidelity share
(tools/fidelity_mlperf.py, tools/fidelity_serving.py): their command line
(TPUSIM [--data DIR] [-j N] [--only ID,ID] [--timeout S]) and their rows."""
import argparse, csv, json, os, subprocess


def table_args(csv_name):
    """The parsed arguments and the rows of tests/fidelity/CSV_NAME (--only's ids)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("tpusim")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                   "fidelity"))
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--only", default="")
    ap.add_argument("--timeout", type=int, default=900)
    a = ap.parse_args()
    with open(os.path.join(a.data, csv_name)) as fh:
        rows = [r for r in csv.DictReader(fh) if not a.only or r["id"] in a.only.split(",")]
    return a, rows


def simulate(tpusim, scen, tmp, timeout_s):
    """Runs scenario 'scen' (a dict, written as JSON, which is YAML) in 'tmp' with
    no trace: (summary dict, None), or (None, stderr's last line or the cap)."""
    f = os.path.join(tmp, scen["name"] + ".yaml")
    with open(f, "w") as fh:
        json.dump(scen, fh)
    out = os.path.join(tmp, scen["name"])
    try:
        p = subprocess.run([tpusim, "run", f, "-o", out, "--quiet", "--trace", "none"],
                           capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"over the {timeout_s} s cap"
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    with open(os.path.join(out, "summary.json")) as fh:
        return json.load(fh), None
