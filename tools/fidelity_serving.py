"""tools/fidelity_serving.py -- serving rows of make fidelity.

Each row of tests/fidelity/serving.csv becomes a serve: scenario of the run it
was measured in: the chip and slice, the model preset, the mesh, a closed loop
at the stated concurrency with the stated number of prompts, fixed input and
output lengths (output length 1 for the TTFT rows measured that way), a running
batch of max_num_seqs, chunked prefill within the engine's default 2048-token
budget, pages of 128 tokens. Rows of one run (throughput, TTFT, TPOT of the same
benchmark) share one simulation. tpusim predicts summary.json serving
output_tokens_per_s, ttft_s.mean, tpot_s.mean and itl_s.mean.

Rows measured on JetStream (the source is a JetStream repository) run its engine,
serve.engine.scheduler: jetstream: each prefill one request alone, padded to a power
of two, before the next generate step; a generate step over every slot of the batch
(max_num_seqs) against a dense cache of max_model_len tokens each, attention as XLA
einsums over it (attention_kernel: dense: JetStream-PyTorch's default, ragged_mha
off, as its benchmarks ran), max_num_batched_tokens its max_prefill_length (the
source's max input length, 1024). Those rows' benchmark sent ShareGPT's 2000
prompts at once: the rows state 2000 prompts at concurrency 2000, fixed at
ShareGPT's mean lengths under the benchmark's filter (215 in, 197 out). A batch sharded over the chips (data=N: JetStream's shard_on_batch) is
that one engine's slots split over N groups, every group running each prefill.
Rows measured with int8 (JetStream's int8: weight-only int8 weights with
per-channel scales and an int8 KV cache) run with serve.model.quantization: int8
and serve.engine.kv_cache_dtype: int8. On v7, whose chips are two JAX devices each, an
SGLang-JAX row's tensor parallelism spans the devices (its cookbook's --tp-size 8 on a
4-chip tpu7x 2x2x1): the mesh column in chips becomes tensor = 2 x chips.
Rows measured on SGLang-JAX run its scheduler, serve.engine.scheduler: sglang: a
prefill batch whenever requests wait (chunked_prefill_size 2048, as the cookbook's
runs state), decodes otherwise, the host's work overlapped (its overlap scheduler), its
prefills' attention in SGLang-JAX's RPA v3 blocks (q blocks of 32 tokens: serving/serve_rpa.c). Rows this build cannot express (a preset it lacks,
a chip serving refuses, a kernel limit) print "not run: <reason>". The errors are medians over
the rows run, separately for output throughput and for latency (TTFT, TPOT,
ITL). Nothing here is fitted to the rows.
Runnable alone:
    tools/fidelity_serving.py TPUSIM [--data DIR] [-j N] [--only ID,ID] [--timeout S]"""
import os, re, statistics, sys, tempfile

import fidelity_common
from concurrent.futures import ThreadPoolExecutor

PRESETS = os.path.join(os.path.dirname(__file__), "..", "configs", "models", "presets")
METRICS = {"output_throughput": ("output_tokens_per_s", None, 1.0),
           "mean_ttft": ("ttft_s", "mean", 1e3), "mean_tpot": ("tpot_s", "mean", 1e3),
           "mean_itl": ("itl_s", "mean", 1e3)}
TIMEOUT_S = 900
# JetStream's max_prefill_length in the JetStream-PyTorch runs: summary.md's "max input length",
# 1024 in every row (each prompt pads to a power of two up to it)
JETSTREAM_MAX_PREFILL = 1024
# chips whose TensorCores are each a JAX device (configs/chips: megacore: false, 2 cores)
DEVICES_PER_CHIP = {"v7": 2}


def run_key(r):
    return tuple(r[k] for k in ("chip", "topology", "preset", "dtype", "mesh", "concurrency",
                                "prompts", "input_len", "output_len", "max_num_seqs",
                                "max_model_len"))


def why_not(r):
    if r["dtype"] not in ("bf16", "int8"):
        return f"{r['dtype']} weights/KV cache: serving here runs bf16 or int8"
    if not os.path.exists(os.path.join(PRESETS, r["preset"] + ".yaml")):
        return f"no preset {r['preset']}"
    return None


def scenario(r):
    mesh = {a: int(n) for a, n in (p.split("=") for p in r["mesh"].split())}
    # a batch sharded over chips (JetStream's shard_on_batch: every chip holds the model and
    # its share of the batch slots) runs as data-parallel replicas, max_num_seqs / data each
    jetstream = "jetstream" in r["source_url"].lower()
    seqs = int(r["max_num_seqs"]) // (1 if jetstream else mesh.get("data", 1))
    if "data" in mesh:
        mesh.setdefault("tensor", 1)
    # SGLang-JAX builds its mesh over every JAX device (create_device_mesh over jax.devices()):
    # on a chip whose TensorCores are each a device (v7: 2) its --tp-size counts devices, so
    # a mesh given in chips becomes tensor parallelism over the chips' devices
    if not jetstream and r["chip"] in DEVICES_PER_CHIP and "tensor" in mesh:
        mesh["tensor"] *= DEVICES_PER_CHIP[r["chip"]]
    shape = [int(x) for x in r["topology"].split("x")]
    name = "serve-" + "-".join(run_key(r)).replace("=", "").replace(" ", "")
    model, engine = {"preset": r["preset"]}, {}
    if r["dtype"] == "int8":  # JetStream's int8: weight-only int8 weights, an int8 KV cache
        model["quantization"], engine["kv_cache_dtype"] = "int8", "int8"
    if jetstream:
        engine.update(scheduler="jetstream", max_num_batched_tokens=JETSTREAM_MAX_PREFILL)
    elif "sglang" in r["source_url"].lower():  # SGLang's prefill-first scheduler, the
        engine.update(scheduler="sglang",       # cookbook's --chunked-prefill-size 2048
                      chunked_prefill_size=2048)
    return {"name": name, "chip": r["chip"],
            "topology": {"shape": shape},
            "serve": {"model": model, "mesh": mesh,
                      "engine": {**engine, "max_num_seqs": seqs, "page_size": 128,
                                 "max_model_len": int(r["max_model_len"])},
                      "requests": {"count": int(r["prompts"]),
                                   "concurrency": int(r["concurrency"]),
                                   "input_len": int(r["input_len"]),
                                   "output_len": int(r["output_len"]), "seed": 1}}}


def run_one(tpusim, r, tmp):
    """(serving summary, note) of one run."""
    s, err = fidelity_common.simulate(tpusim, scenario(r), tmp, TIMEOUT_S)
    if s is None:
        err = re.sub(r"^\S+\.yaml:\d+:\d+: ", "", err)   # the scenario's temporary path
        return None, re.sub(r"^serve: an engine step: .*?ops\.\d+: ", "engine step: ", err)[:120]
    return s["serving"], ""


def predicted(s, r):
    key, sub, scale = METRICS[r["metric"]]
    v = s[key] if sub is None else s[key][sub]
    return v * scale


def main():
    global TIMEOUT_S
    a, rows = fidelity_common.table_args("serving.csv")
    TIMEOUT_S = a.timeout
    runs = {}
    for r in rows:
        if not why_not(r):
            runs.setdefault(run_key(r), r)
    print("Serving (tests/fidelity/serving.csv): closed loops at the stated concurrency, "
          "fixed lengths, bf16 or int8 (weight-only int8 weights, an int8 KV cache)")
    print(f"{'id':6} {'chip':4} {'n':>2} {'preset':10} {'mesh':9} {'conc':>4} {'prompts':>7} "
          f"{'in/out':9} {'metric':17} {'measured':>9} {'predicted':>9} {'error':>7}")
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(a.j) as ex:
        keys = list(runs)
        res = dict(zip(keys, ex.map(lambda k: run_one(a.tpusim, runs[k], tmp), keys)))
    errs = {"throughput": [], "latency": []}
    for r in rows:
        head = f"{r['id']:6} {r['chip']:4} {r['chips']:>2} {r['preset']:10} {r['mesh']:9} " \
               f"{r['concurrency']:>4} {r['prompts']:>7} " \
               f"{r['input_len'] + '/' + r['output_len']:9} {r['metric']:17} " \
               f"{float(r['value']):9.4g}"
        reason = why_not(r)
        s, note = (None, reason) if reason else res[run_key(r)]
        if s is None:
            print(f"{head} {'-':>9} {'-':>7}  not run: {note}")
            continue
        pred, meas = predicted(s, r), float(r["value"])
        e = (pred - meas) / meas
        errs["throughput" if r["metric"] == "output_throughput" else "latency"].append(abs(e))
        print(f"{head} {pred:9.4g} {100 * e:+6.1f}%  {r['unit']}; mean batch "
              f"{s['mean_batch']['sequences']:.0f} seqs, {s['preemptions']} preemptions")
    for k, v in errs.items():
        if v:
            print(f"serving {k} rows compared: {len(v)}, median |error| "
                  f"{100 * statistics.median(v):.1f}%, worst {100 * max(v):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
