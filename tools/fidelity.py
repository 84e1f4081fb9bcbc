#!/usr/bin/env python3
"""tools/fidelity.py TPUSIM [POINTS.json] -- runs the public TPU measurements of
../shared/validation/points.json through the simulator and prints predicted vs
measured with |error| per point and the median per kind. Points marked host_timed
include ~0.1 ms of Python dispatch (see shared/validation/README.md); their error
is shown but they are flagged."""
import json, os, statistics, subprocess, sys, tempfile

HOST_S = 0.1e-3  # Python dispatch in host-timed points (shared/validation/README.md)

def scenario(p):
    k, q = p["kind"], p["params"]
    topo = p["topology"]
    head = {"name": p["id"], "chip": p["chip"], "topology": {"shape": topo}}
    if k == "pallas_matmul":
        dt = {"bfloat16": "bf16", "float32": "f32", "int8": "int8"}[q.get("dtype", "bfloat16")]
        op = {"op": "matmul", "m": q["m"], "k": q["k"], "n": q["n"], "dtype": dt,
              "block": {"bm": q["bm"], "bk": q["bk"], "bn": q["bn"]}}
    elif k == "flash_attention_fwd":
        op = {"op": "flash_attention", "batch": q["batch"], "heads": q["heads"],
              "q_seq_len": q["seq_len"], "kv_seq_len": q["seq_len"], "head_dim": q["head_dim"],
              "causal": q["causal"], "mode": "fwd",
              "dtype": {"bfloat16": "bf16", "float32": "f32"}[q["dtype"]],
              "block_sizes": {"block_q": q["block_q"], "block_k_major": q["block_k_major"],
                              "block_k": q["block_k"], "block_b": q["block_b"]}}
    elif k == "ppermute":
        op = {"op": "ppermute", "bytes": q["bytes_per_device"], "axis": 0,
              "shift": q.get("shift", 1)}
    elif k == "hbm_copy":
        op = {"op": "hbm_copy", "bytes": q["bytes"]}
    elif k in ("all_gather", "all_reduce"):
        axes = list(range(len(topo))) if q.get("axis") == "all" else [q["axis"]]
        x = 1
        for a in axes:
            x *= topo[a]
        per = q["bytes_per_device"] if "bytes_per_device" in q else q["total_bytes"] // x
        op = {"op": k, "axes": axes, "bytes": per}
    else:
        return None
    head["workload"] = [op]
    return head

def main():
    tpusim = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "../../shared/validation/points.json")
    points = json.load(open(path))
    errs = {}
    print(f"{'id':5} {'kind':22} {'chip':5} {'measured':>12} {'predicted':>12} {'error':>8}  bound     note")
    with tempfile.TemporaryDirectory() as tmp:
        for p in points:
            sc = scenario(p)
            note = "host-timed (+~0.1 ms dispatch)" if p.get("host_timed") else ""
            if sc is None:
                print(f"{p['id']:5} {p['kind']:22} {p['chip']:5} {p['measured_s']*1e3:10.4f}ms {'n/a':>12}")
                continue
            f = os.path.join(tmp, p["id"] + ".yaml")
            json.dump(sc, open(f, "w"))  # JSON is YAML
            out = os.path.join(tmp, p["id"])
            r = subprocess.run([tpusim, "run", f, "-o", out, "-q"], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{p['id']:5} {p['kind']:22} {p['chip']:5} {p['measured_s']*1e3:10.4f}ms {'error':>12}  {r.stderr.strip()[:60]}")
                continue
            s = json.load(open(os.path.join(out, "summary.json")))
            t = s["ops"][0]["time_s"]
            e = abs(t - p["measured_s"]) / p["measured_s"]
            errs.setdefault(p["kind"], []).append((e, p.get("host_timed", False)))
            if p.get("host_timed"):
                eh = abs(t + HOST_S - p["measured_s"]) / p["measured_s"]
                note += f"; with dispatch {1e3*(t + HOST_S):.4f}ms: {100*eh:.1f}%"
            print(f"{p['id']:5} {p['kind']:22} {p['chip']:5} {p['measured_s']*1e3:10.4f}ms "
                  f"{t*1e3:10.4f}ms {100*e:7.1f}%  {s['ops'][0]['bound']:9} {note}")
    allv = []
    for k, v in errs.items():
        es = [e for e, _ in v]
        allv += es
        print(f"median |error| {k:22} {100*statistics.median(es):6.1f}%  ({len(es)} points)")
    if allv:
        print(f"median |error| {'all':22} {100*statistics.median(allv):6.1f}%  ({len(allv)} points)")

main()
