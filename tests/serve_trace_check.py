#!/usr/bin/env python3
"""tests/serve_trace_check.py TRACE SUMMARY -- checks a serving run's
trace.json (serving/serve_trace.h) against its summary.json: the trace is
JSON, it holds exactly the summary's `serving.steps` step spans ("X"), each
request's async events ("b"/"e", cat "request") nest (every end closes the
innermost open span of its name, never before it began) and all close, and
the summary's trace object counts the events in the file. A capped trace
(summary trace.complete false) may hold fewer steps: then the spans are
the first ones; a windowed one (trace.window_s) those the window kept. Prints one line per request: id, queued and prefill
lengths in us (0: no such phase). Exit 1 with the reason on failure."""
import json
import sys


def fail(msg):
    print("serve_trace_check: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    with open(sys.argv[1]) as f:
        trace = json.load(f)
    with open(sys.argv[2]) as f:
        summary = json.load(f)
    events = trace["traceEvents"]
    steps = summary["serving"]["steps"]
    spans = [e for e in events if e["ph"] == "X"]
    whole = summary["trace"]["window_s"] is None
    complete = summary["trace"]["complete"] and whole
    if summary["trace"]["events"] != len(events):
        fail("summary says %d events, the file holds %d" % (summary["trace"]["events"], len(events)))
    if complete and len(spans) != steps:
        fail("%d step spans, the summary has %d steps" % (len(spans), steps))
    first = int(spans[0]["name"].split()[1]) if spans and not whole else 0
    if [e["name"] for e in spans] != ["step %d" % k for k in range(first, first + len(spans))]:
        fail("the step spans are not consecutive steps in order")
    if not summary["trace"]["complete"] and "capped" not in trace["otherData"]:
        fail("capped, but the metadata does not say so")
    stacks, phases = {}, {}
    for e in events:  # in file order: the writer puts each request's events in order
        if e["ph"] not in "be":
            continue
        if e.get("cat") != "request":
            fail("async event outside category request: %r" % e)
        st = stacks.setdefault(e["id"], [])
        if e["ph"] == "b":
            st.append((e["name"], e["ts"]))
            continue
        if not st or st[-1][0] != e["name"] or e["ts"] < st[-1][1]:
            fail("request %s: %s ends out of order" % (e["id"], e["name"]))
        name, ts = st.pop()
        phases.setdefault(e["id"], {}).setdefault(name, e["ts"] - ts)
    for rid, st in stacks.items():
        if st:
            fail("request %s: %s never ends" % (rid, st[-1][0]))
    if complete and len(stacks) != summary["serving"]["requests"]:
        fail("%d request tracks, %d requests" % (len(stacks), summary["serving"]["requests"]))
    for rid in sorted(phases):
        p = phases[rid]
        print("%s %.3f %.3f" % (rid, p.get("queued", 0), p.get("prefill", 0)))


main()
