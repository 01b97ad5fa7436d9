#!/usr/bin/env python3
"""Summarises a torch.profiler Chrome trace of a training loop (CUDA
activity: kernels, copies and the CUDA runtime calls of every thread) into
the figures that say where a step's time goes (bench/train_torch.py
--profile writes the traces):

  per stream       kernels, their busy time (the union of their intervals)
                   and copies, per step; the training stream is the one
                   with the most kernel time;
  training gaps    the time inside the profiled span in which the training
                   stream ran nothing, per step, and the share of it in
                   which another stream was busy (a gap filled by the
                   loader's work on the GPU) or nothing was;
  overlap          the training stream's busy time during which another
                   stream's kernels ran at the same time (SMs shared);
  runtime calls    per thread group (the thread with the most launches is
                   "main", the others "other threads"): count and total time
                   of each CUDA runtime or driver call, the synchronising
                   ones first;
  top kernels      of the non-training streams, by time.

  python3 bench/trace_summary.py TRACE.json[.gz] [--steps N] [--json OUT]

N: the steps the trace holds (for the per-step figures; default: the
number of optimizer steps found, else 1)."""
import argparse
import collections
import gzip
import json
import sys

SYNC_CALLS = ("Synchronize", "cudaFree", "cudaMalloc", "cudaHostAlloc",
              "cudaFreeHost", "cudaHostRegister", "cudaHostUnregister",
              "cudaMallocHost", "cuMemFree", "cuMemAlloc", "cudaMemcpy")


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def union(intervals):
    """Sorted, merged (start, end) intervals."""
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return out


def total(iv):
    return sum(e - s for s, e in iv)


def intersect(a, b):
    """Total length of the intersection of two merged interval lists."""
    i = j = 0
    t = 0.0
    while i < len(a) and j < len(b):
        s = max(a[i][0], b[j][0])
        e = min(a[i][1], b[j][1])
        if e > s:
            t += e - s
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return t


def summarise(trace, steps=0):
    ev = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    kern = collections.defaultdict(list)      # stream -> [(s, e, name)]
    copies = collections.defaultdict(list)    # stream -> [(s, e, name)]
    calls = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0.0]))
    launches = collections.Counter()
    opt_steps = 0
    for e in ev:
        cat = e.get("cat", "")
        ts, dur = float(e.get("ts", 0)), float(e.get("dur", 0))
        args = e.get("args", {}) or {}
        if cat == "kernel":
            kern[args.get("stream", e.get("tid"))].append((ts, ts + dur, e["name"]))
        elif cat in ("gpu_memcpy", "gpu_memset"):
            copies[args.get("stream", e.get("tid"))].append((ts, ts + dur, e["name"]))
        elif cat in ("cuda_runtime", "cuda_driver"):
            tid = e.get("tid")
            c = calls[tid][e["name"]]
            c[0] += 1
            c[1] += dur
            if "Launch" in e["name"]:
                launches[tid] += 1
        elif "Optimizer.step" in e.get("name", ""):
            opt_steps += 1
    if not kern:
        return {"error": "no kernels in the trace (was CUDA activity recorded?)"}
    steps = steps or opt_steps or 1
    busy = {s: union([(a, b) for a, b, _ in k]) for s, k in kern.items()}
    train = max(busy, key=lambda s: total(busy[s]))
    t0 = min(iv[0][0] for iv in busy.values())
    t1 = max(iv[-1][1] for iv in busy.values())
    tb = busy[train]
    span = [[tb[0][0], tb[-1][1]]]
    gaps = []
    for k in range(1, len(tb)):
        gaps.append([tb[k - 1][1], tb[k][0]])
    others = union([(a, b) for s, iv in busy.items() if s != train for a, b in iv] +
                   [(a, b) for s, c in copies.items() if s != train for a, b, _ in c])
    other_k = union([(a, b) for s, iv in busy.items() if s != train for a, b in iv])
    gap_total = total(gaps)
    big = [g for g in gaps if g[1] - g[0] >= 50.0]
    res = {
        "steps": steps,
        "span_us": round(t1 - t0, 1),
        "training_stream": train,
        "training_busy_us_per_step": round(total(tb) / steps, 1),
        "training_span_us_per_step": round(total(span) / steps, 1),
        "training_gaps_us_per_step": round(gap_total / steps, 1),
        "training_gaps_50us_plus": {"count_per_step": round(len(big) / steps, 2),
                                    "us_per_step": round(total(big) / steps, 1)},
        "gaps_filled_by_other_streams_us_per_step": round(intersect(gaps, others) / steps, 1),
        "training_busy_overlapped_by_other_kernels_us_per_step":
            round(intersect(tb, other_k) / steps, 1),
        "streams": {},
        "runtime_calls": {},
    }
    for s in sorted(busy, key=lambda s: -total(busy[s])):
        names = collections.defaultdict(lambda: [0, 0.0])
        for a, b, n in kern[s]:
            names[n][0] += 1
            names[n][1] += b - a
        top = sorted(names.items(), key=lambda kv: -kv[1][1])[:8]
        cp = collections.defaultdict(lambda: [0, 0.0])
        for a, b, n in copies.get(s, []):
            cp[n][0] += 1
            cp[n][1] += b - a
        res["streams"][str(s)] = {
            "kernels_per_step": round(len(kern[s]) / steps, 1),
            "busy_us_per_step": round(total(busy[s]) / steps, 1),
            "top_kernels": [{"name": n[:90], "count_per_step": round(c / steps, 2),
                             "us_per_step": round(t / steps, 1)} for n, (c, t) in top],
            "copies": {n[:60]: {"count_per_step": round(c / steps, 2),
                                "us_per_step": round(t / steps, 1)} for n, (c, t) in cp.items()},
        }
    main = max(launches, key=launches.get) if launches else None
    groups = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0.0]))
    threads = collections.Counter()
    for tid, d in calls.items():
        g = "main" if tid == main else "other threads"
        threads[g] += 1
        for n, (c, t) in d.items():
            groups[g][n][0] += c
            groups[g][n][1] += t
    for g, d in groups.items():
        rows = sorted(d.items(), key=lambda kv: (not any(x in kv[0] for x in SYNC_CALLS),
                                                  -kv[1][1]))
        res["runtime_calls"][g] = {
            "threads": threads[g],
            "calls": [{"name": n, "count_per_step": round(c / steps, 2),
                       "us_per_step": round(t / steps, 1)} for n, (c, t) in rows[:14]]}
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--json", help="write the summary here too")
    a = ap.parse_args(argv)
    res = summarise(load(a.trace), a.steps)
    text = json.dumps(res, indent=1)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    return 0 if "error" not in res else 1


if __name__ == "__main__":
    sys.exit(main())
