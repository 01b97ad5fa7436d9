#!/usr/bin/env python3
"""gpufeed from Python against `gpufeed bench` on the same sources, threads
and transform, in one run, and Python's own cost per batch.

For each source given (--png: a PNG folder; --gradzstd: a gradzstd dataset;
--raw: a raw dataset read with a host cache large enough that the epochs
after the first come from it -- "cached raw"):

  cli     `gpufeed bench SRC --json --quiet` with --batch, --threads,
          --epochs, --device, --prefetch and the transform below;
  python  gpufeed.Loader with the same options and the equivalent transform,
          the loop a training script writes (`for images, labels in loader`,
          torch tensors through DLPack), consuming as the CLI does: on a GPU
          it records an event on torch's current stream after each batch
          and waits (asleep) for the previous batch's event, keeping one
          queued; each tensor dies before the next batch (release).

Both rates count the epochs after the first (which fills the page cache and
the cache budget), as `gpufeed bench` does; the ratio python/cli is printed
with the 0.97 target. Transform (both): RandomResizedCrop(--rrc, default 224)
+ flip, f16 NCHW normalised with ImageNet's mean/std (`--rrc 224 --dtype f16
--layout nchw --mean 123.675,116.28,103.53 --std 58.395,57.12,57.375`).

Python's cost per batch (--cost-batches, default 300, on the last source
given, or --cost-source): the host time of next() + the DLPack export +
torch.from_dlpack of images and labels + dropping the tensors (the release),
timed only around those calls and counted only for batches that were
already ready (the loader's consumer wait did not move by 2 us or more, the
CLI's own rule for its next_release_us figures); between batches the loop
sleeps 1.5 batch intervals (from the measured rate) so the next one is
ready (--cost-wait spin: spins on the clock as long instead). Both the high-level iterator and the low-level batches() path
(next + torch.from_dlpack + batch.release()) are measured; p50 and p99 in
microseconds, with the 20 us target. After each iterator batch the loop
sleeps again and times torch alone doing its part of a handoff on tensors
of the same shapes that gpufeed did not make (the stream query, two
capsule imports, the tensors' end): the share of the cost that is torch's.
The same loop then times gpufeed's own part of the iterator's call (its C
path with torch left out: the capsules not imported, the stream asked once;
next + DLPack export + release), and gpufeed.torch.DataLoader (the
one-line adapter) over the same source and options, without and with
return_indices=True.

Output: a table, the [met]/[MISSED] lines, and with --json one JSON line.

usage: python_bench.py --bin BIN [--png DIR] [--gradzstd DATASET] [--raw DATASET]
       [--threads N] [--batch N] [--epochs N] [--device auto|cpu|N]
       [--prefetch N] [--rrc N] [--raw-cache SIZE] [--cost-batches N]
       [--cost-source png|gradzstd|raw] [--cost-wait sleep|spin] [--repeat N] [--json]
BIN is the build folder holding the gpufeed CLI; the Python package must be
importable (PYTHONPATH=BIN/python for a build tree, or installed with pip).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

import gpufeed

MEAN_PX = "123.675,116.28,103.53"
STD_PX = "58.395,57.12,57.375"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="build folder with the gpufeed CLI")
    ap.add_argument("--png", help="PNG folder (ImageFolder tree)")
    ap.add_argument("--gradzstd", help="gradzstd dataset (gpufeed build --codec gradzstd)")
    ap.add_argument("--raw", help="raw dataset (gpufeed build --codec raw), read cached")
    ap.add_argument("--raw-cache", default="auto",
                    help="cache budget for --raw (default: 1.1 x its shard bytes)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--device", default="auto", help="auto (GPU 0 when there is one), cpu or N")
    ap.add_argument("--prefetch", type=int, default=0, help="batch slots (0: autotune, both)")
    ap.add_argument("--rrc", type=int, default=224)
    ap.add_argument("--cost-batches", type=int, default=300)
    ap.add_argument("--cost-source", choices=["png", "gradzstd", "raw"])
    ap.add_argument("--cost-wait", choices=["sleep", "spin"], default="sleep",
                    help="how the cost loop waits between batches: asleep (default), "
                         "or spinning on the clock, as a thread in CUDA's default "
                         "synchronisation does (its core and caches stay its own)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each side, alternating; the best rate of each is kept")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    a.sources = [(n, getattr(a, n)) for n in ("png", "gradzstd", "raw") if getattr(a, n)]
    if not a.sources:
        ap.error("give at least one of --png, --gradzstd, --raw")
    if a.epochs < 2:
        ap.error("--epochs must be >= 2 (the first epoch is not counted)")
    return a


def dataset_bytes(path):
    return sum(e.stat().st_size for e in os.scandir(path) if e.is_file())


def cache_for(a, name, path):
    if name != "raw":
        return 0
    if a.raw_cache != "auto":
        return a.raw_cache
    return str(int(dataset_bytes(path) * 1.1) + (64 << 20))


def torch_device(a):
    """gpufeed's device for --device, and whether it is a GPU."""
    if a.device == "cpu":
        return "cpu", False
    if a.device == "auto":
        if torch.cuda.is_available():
            return "cuda:0", True
        return "cpu", False
    return f"cuda:{int(a.device)}", True


def run_cli(a, path, cache):
    cmd = [os.path.join(a.bin, "gpufeed"), "bench", path, "--json", "--quiet",
           "--batch", str(a.batch), "--threads", str(a.threads), "--epochs", str(a.epochs),
           "--device", a.device, "--rrc", str(a.rrc), "--dtype", "f16", "--layout", "nchw",
           "--mean", MEAN_PX, "--std", STD_PX]
    if a.prefetch:
        cmd += ["--prefetch", str(a.prefetch)]
    if cache:
        cmd += ["--cache", str(cache)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"python_bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def transform(a):
    return gpufeed.RandomResizedCrop(a.rrc, flip=True, dtype="float16", layout="NCHW",
                                     mean=gpufeed.IMAGENET_MEAN, std=gpufeed.IMAGENET_STD)


def make_loader(a, path, cache, device):
    return gpufeed.Loader(path, a.batch, shuffle=True, seed=0, transform=transform(a),
                          device=device, cache_bytes=cache, drop_last=True,
                          num_workers=a.threads, prefetch=a.prefetch)


def make_adapter(a, path, cache, device, indices):
    """gpufeed.torch.DataLoader with make_loader's options."""
    import gpufeed.torch as gft
    return gft.DataLoader(path, batch_size=a.batch, shuffle=True, seed=0,
                          transform=transform(a), device=device, cache_bytes=cache,
                          drop_last=True, num_workers=a.threads, prefetch=a.prefetch,
                          channels=0, return_indices=indices)


def run_python(a, path, cache, device, gpu):
    """Rates per epoch, the CLI's way; returns (steady img/s, per-epoch, loader mode)."""
    epochs = []
    with make_loader(a, path, cache, device) as ld:
        mode = ld.device
        ev = [torch.cuda.Event(blocking=True), torch.cuda.Event(blocking=True)] if gpu else None
        for e in range(a.epochs):
            ld.set_epoch(e)
            t0 = time.perf_counter()
            n = k = 0
            for images, labels in ld:
                n += images.shape[0]
                del images, labels          # the batch goes back (stream-ordered)
                if gpu:
                    ev[k & 1].record()
                    if k:
                        ev[(k - 1) & 1].synchronize()
                k += 1
            if gpu:
                torch.cuda.current_stream().synchronize()
            epochs.append((n, time.perf_counter() - t0))
    steady = epochs[1:]
    rate = sum(n for n, _ in steady) / sum(s for _, s in steady)
    return rate, [round(n / s, 1) for n, s in epochs], mode


def consumer_stream(gpu):
    """The cudaStream_t batches() hands each batch to: torch's current stream
    (cudaStreamLegacy, 1, for the legacy default stream whose handle is 0),
    as the iterator does; 0 in host mode."""
    if not gpu:
        return 0
    return torch.cuda.current_stream().cuda_stream or 1


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q / 100.0 * len(xs)))] if xs else float("nan")


def torch_alone(a, device, gpu):
    """f() -> microseconds torch alone takes for its part of a batch's
    handoff, on tensors of the batch's shapes not made by gpufeed: the
    current stream's query (GPU), the import of two DLPack capsules made
    beforehand (torch._C._from_dlpack, what the iterator calls) and the
    two tensors' end. Timed in the same loop and conditions as gpufeed's
    cost: the floor under Python's cost that gpufeed does not control."""
    img = torch.empty(a.batch, 3, a.rrc, a.rrc, dtype=torch.float16, device=device)
    lab = torch.empty(a.batch, dtype=torch.int64, device=device)
    imp = getattr(torch._C, "_from_dlpack", None) or torch.utils.dlpack.from_dlpack
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    to = torch.utils.dlpack.to_dlpack

    def once():
        c1, c2 = to(img), to(lab)
        t0 = time.perf_counter_ns()
        if gpu and raw is not None:
            raw(0)
        x, y = imp(c1), imp(c2)
        del x, y
        return (time.perf_counter_ns() - t0) / 1000.0
    return once


def waiter(a, rate):
    """f(): the pause between batches, 1.5 batch intervals, asleep or spinning."""
    interval = min(0.5, 1.5 * a.batch / rate if rate > 0 else 0.01)

    def wait():
        if a.cost_wait == "sleep":
            time.sleep(interval)
        else:
            end = time.perf_counter() + interval
            while time.perf_counter() < end:
                pass
    return wait


def python_cost(a, path, cache, device, gpu, rate):
    """(high-level, low-level, torch alone) lists of microseconds, ready
    batches only."""
    wait = waiter(a, rate)
    hi, lo, alone = [], [], []
    floor = torch_alone(a, device, gpu)
    with make_loader(a, path, cache, device) as ld:
        ld.set_epoch(0)
        for images, labels in ld:       # epoch 0 fills the cache (a raw source)
            del images, labels
        want = a.cost_batches
        max_epochs = 1 + 2 * (want // max(1, len(ld)) + 1)
        epoch = 1
        while (len(hi) < want or len(lo) < want) and epoch < max_epochs:
            low = epoch % 2 == 0        # odd epochs: the iterator; even: batches()
            got = lo if low else hi
            ld.set_epoch(epoch)
            it = iter(ld.batches(stream=consumer_stream(gpu))) if low else iter(ld)
            while len(got) < want:
                wait()                  # the next batch is ready by now
                w0 = ld.stats()["consumer_wait_ns"]
                t0 = time.perf_counter_ns()
                try:
                    if low:
                        b = next(it)
                        images = torch.from_dlpack(b.images)
                        labels = torch.from_dlpack(b.labels)
                        del images, labels
                        b.release()
                        del b
                    else:
                        images, labels = next(it)
                        del images, labels
                except StopIteration:
                    break
                t1 = time.perf_counter_ns()
                if ld.stats()["consumer_wait_ns"] - w0 < 2000:
                    got.append((t1 - t0) / 1000.0)
                    if not low:             # torch alone, the same wait before it
                        wait()
                        alone.append(floor())
            del it
            epoch += 1
        if gpu:
            torch.cuda.synchronize()
    return hi, lo, alone


def time_ready(a, rate, stats, new_iter, per_epoch):
    """Microseconds of next() + the item's end, over iterators new_iter()
    makes until --cost-batches are timed: ready batches only (the loader's
    consumer wait did not move by 2 us), each after the pause python_cost
    makes before the iterator's. stats: the loader's stats method."""
    wait = waiter(a, rate)
    got = []
    for _ in range(2 * (a.cost_batches // max(1, per_epoch) + 1)):
        it = new_iter()
        while len(got) < a.cost_batches:
            wait()
            w0 = stats()["consumer_wait_ns"]
            t0 = time.perf_counter_ns()
            item = next(it, None)
            if item is None:
                break
            del item
            t1 = time.perf_counter_ns()
            if stats()["consumer_wait_ns"] - w0 < 2000:
                got.append((t1 - t0) / 1000.0)
        del it
        if len(got) >= a.cost_batches:
            break
    return got


def adapter_cost(a, path, cache, device, gpu, rate, indices):
    """Microseconds of next() + the items' end through gpufeed.torch.DataLoader,
    ready batches only, timed and paced as python_cost times the iterator
    (epoch 0 fills the cache)."""
    with make_adapter(a, path, cache, device, indices) as dl:
        for item in dl:
            del item
        got = time_ready(a, rate, dl.loader.stats, lambda: iter(dl), len(dl))
        if gpu:
            torch.cuda.synchronize()
    return got


def own_cost(a, path, cache, device, gpu, rate):
    """Microseconds of gpufeed's own part of the iterator's next(): the same
    C call a batch (_C.TensorIter, what `for images, labels in loader`
    runs) with torch left out: the stream is torch's current one, asked once
    before the loop (a Python lambda returns it), and each DLPack capsule is
    handed back as it is instead of imported (an identity lambda); dropping
    the two capsules gives the batch back (their deleter, as a tensor's
    would), and the next call returns it to the loader. So: next + the
    DLPack export + the release, with Python calls of ours where the real
    iterator calls torch. Ready batches only, timed and paced as
    python_cost times the iterator (epoch 0 fills the cache)."""
    stream = consumer_stream(gpu)
    with make_loader(a, path, cache, device) as ld:
        for images, labels in ld:
            del images, labels
        got = time_ready(a, rate, ld.stats,
                         lambda: ld._core.tensors((lambda d: stream) if gpu else None,
                                                  lambda c: c, ld),
                         len(ld))
        if gpu:
            torch.cuda.synchronize()
    return got


def main(argv=None):
    a = parse_args(argv)
    device, gpu = torch_device(a)
    rows = []
    for name, path in a.sources:
        cache = cache_for(a, name, path)
        best_cli = best_py = None
        for _ in range(a.repeat):
            cli = run_cli(a, path, cache)
            if best_cli is None or cli["images_per_s"] > best_cli["images_per_s"]:
                best_cli = cli
            py = run_python(a, path, cache, device, gpu)
            if best_py is None or py[0] > best_py[0]:
                best_py = py
        rows.append({"source": name, "path": path, "cache_bytes": int(cache or 0),
                     "cli_img_per_s": best_cli["images_per_s"],
                     "cli_epoch_img_per_s": best_cli.get("epoch_images_per_s"),
                     "cli_mode": best_cli["mode"], "cli_threads": best_cli["threads"],
                     "cli_next_release_us_p50": best_cli.get("next_release_us_p50"),
                     "py_img_per_s": round(best_py[0], 1), "py_epoch_img_per_s": best_py[1],
                     "py_device": best_py[2],
                     "ratio": round(best_py[0] / best_cli["images_per_s"], 4)})
        print(f"## {name}: cli {best_cli['images_per_s']:.0f} img/s ({best_cli['mode']}), "
              f"python {best_py[0]:.0f} img/s ({best_py[2]})", file=sys.stderr, flush=True)
    cname = a.cost_source or a.sources[-1][0]
    cpath = dict(a.sources)[cname]
    crate = next(r["py_img_per_s"] for r in rows if r["source"] == cname)
    hi, lo, alone = python_cost(a, cpath, cache_for(a, cname, cpath), device, gpu, crate)
    cost = {"source": cname, "wait": a.cost_wait, "iterator_us_p50": round(pct(hi, 50), 2),
            "iterator_us_p99": round(pct(hi, 99), 2), "iterator_samples": len(hi),
            "low_level_us_p50": round(pct(lo, 50), 2), "low_level_us_p99": round(pct(lo, 99), 2),
            "low_level_samples": len(lo),
            "torch_alone_us_p50": round(pct(alone, 50), 2),
            "torch_alone_us_p99": round(pct(alone, 99), 2), "torch_alone_samples": len(alone)}
    own = own_cost(a, cpath, cache_for(a, cname, cpath), device, gpu, crate)
    cost.update({"own_us_p50": round(pct(own, 50), 2), "own_us_p99": round(pct(own, 99), 2),
                 "own_samples": len(own)})
    for key, indices in (("adapter", False), ("adapter_indices", True)):
        xs = adapter_cost(a, cpath, cache_for(a, cname, cpath), device, gpu, crate, indices)
        cost.update({key + "_us_p50": round(pct(xs, 50), 2),
                     key + "_us_p99": round(pct(xs, 99), 2), key + "_samples": len(xs)})

    print(f"\ngpufeed {gpufeed.__version__}, torch {torch.__version__}; batch {a.batch}, "
          f"threads {a.threads}, epochs {a.epochs} (rates: epochs 2..), transform "
          f"RandomResizedCrop {a.rrc} + flip, f16 NCHW, ImageNet mean/std")
    print(f"{'source':10} {'mode':6} {'cli img/s':>10} {'python img/s':>13} {'ratio':>7}")
    for r in rows:
        print(f"{r['source']:10} {r['cli_mode']:6} {r['cli_img_per_s']:10.0f} "
              f"{r['py_img_per_s']:13.0f} {r['ratio']:7.3f}")
    print(f"Python's cost per ready batch on {cname} (waiting by {a.cost_wait} between "
          f"batches): iterator (next + DLPack + "
          f"from_dlpack + release) p50 {cost['iterator_us_p50']:.1f} us, p99 "
          f"{cost['iterator_us_p99']:.1f} us ({len(hi)} batches); batches() + from_dlpack + "
          f"release() p50 {cost['low_level_us_p50']:.1f} us, p99 {cost['low_level_us_p99']:.1f} "
          f"us ({len(lo)}); the CLI's next+release p50 "
          + ", ".join(f"{r['source']} {r['cli_next_release_us_p50']}" for r in rows) + " us")
    print(f"torch alone, the same loop (stream query + two capsule imports + the two "
          f"tensors' end, tensors not gpufeed's): p50 {cost['torch_alone_us_p50']:.1f} us, "
          f"p99 {cost['torch_alone_us_p99']:.1f} us ({len(alone)})")
    print(f"gpufeed's own part, the same loop (the iterator's C call with torch left out: "
          f"next + DLPack export + release): p50 {cost['own_us_p50']:.1f} us, p99 "
          f"{cost['own_us_p99']:.1f} us ({cost['own_samples']})")
    print(f"gpufeed.torch.DataLoader, the same loop (next + the items' end): p50 "
          f"{cost['adapter_us_p50']:.1f} us, p99 {cost['adapter_us_p99']:.1f} us "
          f"({cost['adapter_samples']}); with return_indices=True p50 "
          f"{cost['adapter_indices_us_p50']:.1f} us, p99 {cost['adapter_indices_us_p99']:.1f} "
          f"us ({cost['adapter_indices_samples']})")
    print("\ntargets:")
    ok_all = True
    for r in rows:
        ok = r["ratio"] >= 0.97
        ok_all &= ok
        print(f"  [{'met' if ok else 'MISSED'}] {r['source']}: Python >= 0.97x gpufeed bench: "
              f"{r['ratio']:.3f}x")
    ok = len(hi) > 0 and cost["iterator_us_p50"] < 20
    ok_all &= ok
    print(f"  [{'met' if ok else 'MISSED'}] Python's cost per batch < 20 us (p50 of ready "
          f"batches, iterator, torch's part included): {cost['iterator_us_p50']:.1f} us")
    ok = len(own) > 0 and cost["own_us_p50"] < 20
    ok_all &= ok
    print(f"  [{'met' if ok else 'MISSED'}] gpufeed's own cost per batch < 20 us (p50 of "
          f"ready batches, next + DLPack + release): {cost['own_us_p50']:.1f} us")
    if a.json:
        print(json.dumps({"bench": "python_vs_cli", "gpufeed": gpufeed.__version__,
                          "torch": torch.__version__, "batch": a.batch, "threads": a.threads,
                          "epochs": a.epochs, "rrc": a.rrc, "device": a.device,
                          "sources": rows, "python_cost": cost, "targets_met": ok_all}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
