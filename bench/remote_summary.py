#!/usr/bin/env python3
"""The table of bench/remote_bench.sh: reads its results.jsonl and prints
each figure, its ratio and [met]/[MISSED] against issue 34's targets.

  remote_summary.py RESULTS.jsonl [--latency MS]

Rates are `gpufeed bench`'s images_per_s (the epochs after the first); with
ROUNDS > 1 the median of the rounds is used. The peer's rate is its best
epoch. R6 takes the epochs after the first (served from the disk cache).
"""
import argparse
import json
import statistics
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--latency", type=float, default=25)
    a = ap.parse_args()
    res = {}
    for line in open(a.results):
        line = line.strip()
        if line:
            r = json.loads(line)
            res[r["name"]] = r["result"]

    def rate(prefix):
        vals = [v["images_per_s"] for k, v in res.items()
                if k.startswith(prefix + "_") and k[len(prefix) + 1:].isdigit()]
        return statistics.median(vals) if vals else None

    rows = []

    def target(name, got, want, what, higher=True):
        if got is None:
            rows.append(f"{name:<4} {what}: not measured")
            return
        ok = got >= want if higher else got <= want
        rows.append(f"{name:<4} {what}: {got:.3f} (target {'>=' if higher else '<='} {want}) "
                    f"[{'met' if ok else 'MISSED'}]")

    print(f"{'dataset':<8} {'local':>9} {'nginx':>9} {'proxy':>9} {'+' + str(int(a.latency)) + ' ms':>9}"
          "   images/s")
    for ds in ("jpeg", "raw"):
        r = {s: rate(f"r1_{ds}_{s}") for s in ("local", "nginx", "proxy0", "delayed")}
        if r["local"] is None:
            continue
        print(f"{ds:<8} " + " ".join(f"{(r[s] or 0):9.0f}" for s in ("local", "nginx", "proxy0", "delayed")))
        if r["nginx"] and r["local"]:
            target("R1", r["nginx"] / r["local"], 0.90, f"{ds} over HTTP / local disk")
        if r["proxy0"] and r["nginx"]:
            target("", r["proxy0"] / r["nginx"], 0.95, f"{ds} through the proxy, no delay / nginx direct")
        if r["delayed"] and r["nginx"]:
            target("R2", r["delayed"] / r["nginx"], 0.90, f"{ds} at +{a.latency:g} ms / R1")

    dset = res.get("r3_dataset")
    for order in ("block", "shuffle"):
        run, req = res.get(f"r3_{order}_run"), res.get(f"r3_{order}_requests")
        tr = res.get(f"r3_{order}_trace")
        if not run or not req or not dset or not tr:
            continue
        n = dset["samples"]
        reads0, samples0 = tr["reads"].get("0", 0), tr["samples"].get("0", 0)
        traced = sum(tr["reads"].values())
        print(f"R3   {order}, one epoch of {n} samples: nginx logged {req['shard_gets']} shard GETs, "
              f"{req['index_gets']} index GETs, {req['head']} HEADs, {req['other']} other; the trace "
              f"{traced} reads: {reads0} of epoch 0 holding {samples0} samples, the rest read ahead "
              f"({dict((k, v) for k, v in tr['reads'].items() if k != '0')})")
        # Besides the trace's reads, each shard's header is read once, when
        # a sample of it is first used (its open's check). nginx also logs
        # the reads still in flight when the bench ended (read ahead into
        # the next epoch, cancelled by the loader's destroy, never traced):
        # at most the reads in flight.
        shards = dset.get("shards", 0)
        fly = run.get("remote", {}).get("in_flight_max", 0)
        target("", 1.0 if traced <= req["shard_gets"] <= traced + shards + fly else 0.0, 1.0,
               f"{order}: nginx's shard GETs are the trace's reads, at most a header read a "
               f"shard and the reads in flight at the end ({req['shard_gets']}; {traced}, "
               f"{shards} shards, {fly} in flight at most)")
        if order == "block":
            blocks = -(-n // dset["block_size"])
            target("R3", reads0 / blocks, 1.0, f"block order: epoch 0's reads a block ({blocks} blocks)",
                   higher=False)
        else:
            target("R3", reads0 / max(samples0, 1), 1.0, "shuffle: epoch 0's reads a sample read", higher=False)
            target("", samples0 / n, 1.0, "shuffle: epoch 0's samples read / the dataset's", higher=False)

    big = res.get("r4_index1m")
    if big:
        s = (big["create_ms"] + big["first_batch_ms"]) / 1000
        print(f"R4   1,000,000 samples at +{a.latency:g} ms: create {big['create_ms']:.0f} ms, "
              f"first batch {big['first_batch_ms']:.0f} ms after it")
        idx = big.get("remote", {}).get("index")
        if idx:
            print(f"     the index: {idx['pages']} pages of 4 KiB in memory "
                  f"({idx['bytes'] / 2**20:.1f} MiB in {idx['reads']} reads) "
                  f"of the 64 MiB a million records take")
        target("R4", s, 2.0, "seconds from create to the first batch", higher=False)

    peer, ours = res.get("r5_peer"), res.get("r5_gpufeed")
    if ours:
        print(f"R5   gpufeed {ours['images_per_s']:.0f} images/s"
              + (f", peer {peer['best_img_per_s']:.0f} ({peer['workers']} workers)" if peer else ", peer not run"))
        if peer:
            target("R5", ours["images_per_s"] / peer["best_img_per_s"], 5.0, f"gpufeed / peer at +{a.latency:g} ms")

    for ds in ("jpeg", "raw"):
        c, l = res.get(f"r6_{ds}_cached"), res.get(f"r6_{ds}_local")
        if not c or not l:
            continue
        rem = c.get("remote", {})
        print(f"R6   {ds}: disk cache {c['images_per_s']:.0f} images/s, local {l['images_per_s']:.0f}; "
              f"disk cache {rem.get('disk_cache', {})}")
        target("R6", c["images_per_s"] / l["images_per_s"], 0.95, f"{ds} from the disk cache / local disk")
    print("\n".join(rows))


if __name__ == "__main__":
    sys.exit(main())
