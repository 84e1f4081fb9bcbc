#!/usr/bin/env python3
"""tools/fidelity_xla.py TPUSIM [CSV] -- XLA's dense matmuls (jnp.dot, einsum,
dot_general) as measured on TPUs (tests/fidelity/xla_matmul.csv: chip, m, k,
n, dtype, time, how it was timed, source), each predicted by a matmul with
`block: auto`, and the error of each. A row passes when the prediction is
within 10 % of the measurement. Host-timed rows include ~0.1 ms of Python
dispatch, which is added to the prediction. Rows whose measurement ran with a
raised scoped VMEM limit give the op the same limit. Rows measured on one
device of a two-device chip (v7) run on the chip with one TensorCore (the
other idle: the whole HBM for it). Rows with gate "no" are shown for
reference (the CSV's notes say why); exit status 1 when a gated row is
outside 10 %. XLA_CHIP_SET="key.path=value ..." overrides chip keys, for
experiments."""
import csv, json, os, subprocess, sys, tempfile

HOST_S = 0.1e-3  # Python dispatch in host-timed rows
TOL = 0.10


def predict(tpusim, row, tmp):
    op = {"op": "matmul", "name": row["id"], "m": int(row["m"]), "k": int(row["k"]),
          "n": int(row["n"]), "dtype": row["dtype"], "block": "auto"}
    if row["vmem_limit"]:
        op["vmem_limit_bytes"] = row["vmem_limit"]
    chip = {"base": row["chip"]}
    for kv in os.environ.get("XLA_CHIP_SET", "").split():  # experiments: key.path=value
        k, v = kv.split("=")
        d = chip
        for p in k.split(".")[:-1]:
            d = d.setdefault(p, {})
        d[k.split(".")[-1]] = {"true": True, "false": False}.get(v, v)
    if row["devices"] == "1":  # one device busy: the chip's other TensorCores idle
        chip.setdefault("tensorcore", {})["count"] = 1
    path = os.path.join(tmp, row["id"] + ".yaml")
    with open(path, "w") as f:
        json.dump({"name": row["id"], "chip": chip, "workload": [op]}, f)  # JSON is YAML
    out = os.path.join(tmp, row["id"])
    r = subprocess.run([tpusim, "run", path, "-o", out, "--quiet"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()[-80:]
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)["ops"][0], None


def main():
    tpusim = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "../tests/fidelity/xla_matmul.csv")
    with open(path) as f:
        rows = list(csv.DictReader(f))
    print("XLA matmuls (tests/fidelity/xla_matmul.csv), predicted with block: auto")
    print(f"{'id':5} {'chip':4} {'m x k x n':19} {'measured':>11} {'predicted':>11} {'error':>7} "
          f"{'TF/s meas':>9} {'TF/s pred':>9}  blocks (bound)")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows:
            meas = float(row["measured_s"])
            shape = f"{row['m']}x{row['k']}x{row['n']}"
            op, err = predict(tpusim, row, tmp)
            if op is None:
                print(f"{row['id']:5} {row['chip']:4} {shape:19} {meas*1e6:9.2f}us {'error':>11}  {err}")
                bad += row["gate"] == "yes"
                continue
            t = op["time_s"] + (HOST_S if row["timing"] == "host" else 0.0)
            e = (t - meas) / meas
            flops = 2.0 * int(row["m"]) * int(row["k"]) * int(row["n"])
            blocks = " ".join(f"{k}={v}" for k, v in op["auto_blocks"].items())
            note = " +0.1ms dispatch" if row["timing"] == "host" else ""
            ok = abs(e) <= TOL
            gated = row["gate"] == "yes"
            bad += gated and not ok
            flag = "" if ok else "  OUTSIDE 10%" if gated else "  outside 10% (reference row)"
            print(f"{row['id']:5} {row['chip']:4} {shape:19} {meas*1e6:9.2f}us {t*1e6:9.2f}us "
                  f"{100*e:+6.1f}% {flops/meas/1e12:9.1f} {flops/t/1e12:9.1f}  {blocks} "
                  f"({op['auto_bound']}){note}{flag}")
    gates = sum(r["gate"] == "yes" for r in rows)
    print(f"{gates - bad} of {gates} gated rows within {100*TOL:.0f} % "
          f"({len(rows) - gates} reference rows shown, not gated)")
    return 1 if bad else 0


sys.exit(main())
