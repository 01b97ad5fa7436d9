#!/usr/bin/env python3
"""A real training loop fed three ways: torchvision ResNet-50 / ResNet-18,
bf16 autocast, channels_last, SGD (momentum 0.9), cross-entropy, batch 256 of
224x224 by default, fed by

  gpufeed     gpufeed.Loader on SOURCE (an ImageFolder tree of PNG or JPEG
              files, or a gpufeed dataset): RandomResizedCrop(SIZE) + flip,
              --dtype (bf16) NCHW, normalised with ImageNet's mean/std on the
              device; --threads decode threads; JPEG samples to nvJPEG as
              --gpu-decode and --gpu-decode-percent say;
  dataloader  the PyTorch DataLoader on SOURCE (a PNG or JPEG folder):
              --threads worker processes, pin_memory, read_file +
              decode_png / decode_jpeg (RGB, by the file's extension) +
              v2.RandomResizedCrop(SIZE, antialias=True) + RandomHorizontalFlip
              (bench/pytorch_rrc.py's recipe), then on the device: copy
              (non_blocking), normalise in float32, cast to --dtype;
  synthetic   one batch of random tensors already on the device (the ceiling:
              what the GPU trains with no input pipeline at all);
  dlpack      the synthetic batch handed over as gpufeed hands its batches:
              each next() asks torch's current stream and imports two DLPack
              capsules of it (made during the previous step's preparation)
              with torch's capsule importer, and the previous step's two
              tensors end as the iterator resumes. Its host_next_us is
              torch's own part of gpufeed's handoff in the same loop.

Every feed's batch goes through .contiguous(memory_format=channels_last) on
the training stream (with --layout nhwc gpufeed hands NHWC out and the
permuted view is already channels_last: no copy).

The loop keeps one step queued, as a loop that logs the previous step's loss
does: after queuing step k it waits for step k-1 to end, then takes batch
k+1 while step k runs on the GPU. --wait sleep (the default) waits asleep
(a blocking event, leaving the core to the loader's threads); --wait spin
as torch's own synchronisation does by default (an event without
cudaEventBlockingSync: CUDA spins while the process has fewer contexts than
cores), the thread keeping its core.

Measured after --warmup steps, over --steps steps (one JSON line per run):
  img_per_s          images trained per second, all ranks (host wall clock
                     between two device synchronisations);
  gpu_data_wait_pct  the share of the GPU's time between the end of the
                     first measured step and the end of the last one in
                     which the training stream was not running a step: for
                     each step, the time from the end of the previous step
                     (an event recorded after optimizer.step) to its start
                     (an event recorded once its batch is in hand and its
                     preparation -- copy, cast, normalise, layout -- is
                     queued), summed. It counts the GPU idle while the host
                     waits for data, and the input's own preparation on the
                     training stream; the synthetic feed shows the floor
                     (launch gaps). On the CPU (no events): the host time in
                     the data iterator and the preparation over wall time;
  host_data_wait_pct the host time blocked in the data iterator (next())
                     plus the preparation, over wall time;
  host_next_us_p50/_p99  the host time of each measured step's next() call,
                     in microseconds. With gpufeed it holds the previous
                     batch's release (its tensors freed as the iterator
                     resumes), next, the DLPack export and the two torch
                     tensors: where the loader keeps ahead of the model
                     (gpu_data_wait_pct at the synthetic feed's), it is
                     Python's own cost per batch inside a real loop, the
                     thread coming back from its wait for the GPU;
  host_next_torch_us_p50, host_next_own_us_p50/_p99  with --split-next
                     (gpufeed feed, GPU): torch's calls inside each next()
                     timed (the current-stream query, the two capsule
                     imports, the previous tensors' end, whose deleters are
                     gpufeed's), and next() less them: gpufeed's own part;
  vs_synthetic       img_per_s / the synthetic feed's (--ceiling, or the
                     synthetic run of the same invocation when --feed lists
                     it first), and gpu_wait_vs_synthetic_pct, 100 x (1 - that).

--check delivers --epochs whole epochs (no partial batch dropped), training
on each batch, gathers every rank's delivered sample indices and checks
each epoch delivered every sample exactly once (the padded repeats a world
size that does not divide the dataset needs, and no more); it prints one
JSON line and exits 1 when the check fails. With the gpufeed feed it also
interrupts and resumes a job, as a checkpointing training job does:
--stop-after K stops every rank after K steps of the first epoch and
writes to --save FILE the loader's state_dict (rank 0's: every rank's is
the job's, docs/RESUME.md) with the sample indices the job delivered so
far; --resume FILE starts a job (of the same or another world size: an
elastic resume) from that state and checks that the interrupted epoch,
both jobs' deliveries together, gave every sample exactly once (with the
old job's padding when the world size is the same, none when it differs),
and the later epochs as fresh ones. Ranks of a resumed epoch whose shares
differ by one batch are joined (DDP's join) rather than left waiting.
The JSON line also carries, for each CUDA device, the memory in use before
the loader, once it runs, and after close (cudaMemGetInfo), and the
device pool each rank's plan set, so that a multi-rank job shows each
pool on its own device and nothing of gpufeed elsewhere.

Distributed: rank, world and the local GPU come from RANK / WORLD_SIZE /
LOCAL_RANK (torchrun sets them); with WORLD_SIZE > 1 the process group is
initialised (nccl on GPUs, gloo on the CPU) and the model wrapped in
DistributedDataParallel; gpufeed and the DataLoader's DistributedSampler
take their share. Only rank 0 prints.

usage: train_torch.py --source DIR [--feed gpufeed|dataloader|synthetic|dlpack[,...]]
       [--model resnet50|resnet18] [--steps N] [--warmup N] [--batch N]
       [--size N] [--threads N] [--dtype bf16|f16|f32] [--layout nchw|nhwc]
       [--device cuda|cpu] [--cache SIZE] [--prefetch N] [--wait sleep|spin] [--seed S]
       [--split-next] [--ceiling IMG_PER_S] [--check] [--epochs N]
       [--stop-after K --save FILE] [--resume FILE]
Smoke run without a GPU: --device cpu --steps 2 --warmup 1 --model resnet18
--size 32 --batch 8.
"""
import argparse
import contextlib
import gc
import collections
import itertools
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

MEAN = (0.485, 0.456, 0.406)   # ImageNet's, in [0, 1] units
STD = (0.229, 0.224, 0.225)
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
GF_DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", help="PNG ImageFolder tree or gpufeed dataset")
    ap.add_argument("--feed", default="gpufeed",
                    help="gpufeed, dataloader, synthetic, dlpack, or a comma list run in turn")
    ap.add_argument("--model", default="resnet50", choices=["resnet50", "resnet18"])
    ap.add_argument("--steps", type=int, default=200, help="measured steps")
    ap.add_argument("--warmup", type=int, default=30, help="steps before measuring")
    ap.add_argument("--batch", type=int, default=256, help="per rank")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--threads", type=int, default=16,
                    help="gpufeed decode threads / DataLoader workers (gpufeed: 0 autotunes)")
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--layout", default="nchw", choices=["nchw", "nhwc"])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--cache", default="0", help="gpufeed cache_bytes (e.g. 8G)")
    ap.add_argument("--prefetch", type=int, default=0, help="gpufeed batch slots (0: autotune)")
    ap.add_argument("--wait", default="sleep", choices=["sleep", "spin"],
                    help="how the loop waits for the previous step: asleep (a blocking "
                         "event) or spinning (torch's default synchronisation)")
    ap.add_argument("--gpu-decode", default="auto", choices=["auto", "off", "all"],
                    help="gpufeed: which JPEG samples nvJPEG may take (auto: a built "
                         "dataset's, on GPUs with JPEG engines)")
    ap.add_argument("--gpu-decode-percent", type=int, default=0,
                    help="gpufeed: share of a batch's JPEG positions for nvJPEG (0: all)")
    ap.add_argument("--split-next", action="store_true",
                    help="gpufeed: time torch's calls inside each next() (the stream query, "
                         "the two capsule imports, the previous tensors' end) and report "
                         "gpufeed's own part beside them")
    ap.add_argument("--profile", metavar="DIR",
                    help="record the measured steps with torch.profiler (CUDA activity: "
                         "kernels, copies, runtime calls of every thread) into "
                         "DIR/FEED_MODEL.json, summarised by bench/trace_summary.py, and "
                         "gpufeed's own trace into DIR/FEED_MODEL.gpufeed.json")
    ap.add_argument("--gpu-decoders", type=int, default=0,
                    help="gpufeed: nvJPEG decoders working at once (0: the loader's default)")
    ap.add_argument("--train-stream", default="default", choices=["default", "side"],
                    help="the stream the model trains on: torch's default (the legacy "
                         "default stream) or a side stream of its pool (non-blocking)")
    ap.add_argument("--cores-per-rank", type=int, default=0, metavar="N",
                    help="pin each local rank (LOCAL_RANK, 0 alone) to its own N "
                         "of the CPUs the job may use, before any thread starts "
                         "(the loader's cores per GPU under torchrun)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--ceiling", type=float, default=0.0,
                    help="synthetic img/s to compare with (else the synthetic run of this invocation)")
    ap.add_argument("--check", action="store_true",
                    help="exactly-once check over --epochs whole epochs")
    ap.add_argument("--epochs", type=int, default=1, help="epochs of --check")
    ap.add_argument("--stop-after", type=int, default=0, metavar="K",
                    help="--check: stop after K steps of the first epoch, state to --save")
    ap.add_argument("--save", metavar="FILE", help="--check --stop-after: where the state goes")
    ap.add_argument("--resume", metavar="FILE",
                    help="--check: resume from a --save FILE (any world size)")
    a = ap.parse_args(argv)
    a.feeds = [f.strip() for f in a.feed.split(",") if f.strip()]
    for f in a.feeds:
        if f not in FEEDS:
            ap.error(f"--feed {f}: gpufeed, dataloader, synthetic or dlpack")
    if any(f in ("gpufeed", "dataloader") for f in a.feeds) and not a.source:
        ap.error("--source is required for the gpufeed and dataloader feeds")
    if a.check and any(f in ("synthetic", "dlpack") for f in a.feeds):
        ap.error("--check needs a real feed (gpufeed or dataloader)")
    if a.steps < 1 or a.warmup < 0:
        ap.error("--steps must be >= 1 and --warmup >= 0")
    if (a.stop_after or a.save or a.resume) and (not a.check or a.feeds != ["gpufeed"]):
        ap.error("--stop-after, --save and --resume need --check and --feed gpufeed")
    if a.stop_after < 0 or bool(a.stop_after) != bool(a.save):
        ap.error("--stop-after K (K >= 1) and --save FILE go together")
    return a


# -- distributed set-up --------------------------------------------------------

class Dist:
    def __init__(self, device):
        self.rank = int(os.environ.get("RANK", "0"))
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        local = os.environ.get("LOCAL_RANK")
        self.local_rank = int(local) if local is not None else None
        cuda = device == "cuda"
        if cuda and not torch.cuda.is_available():
            raise SystemExit("train_torch: --device cuda but torch sees no GPU (use --device cpu)")
        # More ranks than GPUs share them round-robin, each rank with its own
        # gpufeed pool; NCCL refuses two ranks on one GPU, so they talk gloo.
        self.shared_gpu = False
        if cuda:
            n = torch.cuda.device_count()
            self.device = torch.device("cuda", (self.local_rank or 0) % n)
            self.shared_gpu = self.world > n
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        self.cuda = cuda
        if self.world > 1 and not torch.distributed.is_initialized():
            torch.distributed.init_process_group(
                "nccl" if cuda and not self.shared_gpu else "gloo")

    def gather(self, obj):
        if self.world == 1:
            return [obj]
        out = [None] * self.world
        if self.cuda and not self.shared_gpu:
            torch.cuda.set_device(self.device)   # NCCL gathers through the device
        torch.distributed.all_gather_object(out, obj)
        return out

    def barrier(self):
        if self.world > 1:
            torch.distributed.barrier()


    def allreduce_max(self, x):
        if self.world == 1:
            return x
        t = torch.tensor([x], dtype=torch.float64,
                         device=self.device if self.cuda else "cpu")
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
        return float(t.item())


def device_memory():
    """Bytes in use on every CUDA device (cudaMemGetInfo), index order, and
    what this process's torch caching allocator holds on each."""
    if not torch.cuda.is_available():
        return {"used": [], "torch": []}
    used, held = [], []
    for d in range(torch.cuda.device_count()):
        free, total = torch.cuda.mem_get_info(d)
        used.append(total - free)
        held.append(torch.cuda.memory_reserved(d))
    return {"used": used, "torch": held}


def memory_report(per_rank):
    """Every rank's device_memory() snapshots (before, during, after) ->
    per device and moment: the memory in use and, beside it, what is not
    torch's (the used bytes less every rank's torch reservations there):
    the CUDA contexts and gpufeed's pools."""
    out = {}
    for k in ("before", "during", "after"):
        snaps = [r[k] for r in per_rank if r[k] is not None]
        if not snaps or not snaps[0]["used"]:
            out[k] = None
            continue
        used = snaps[-1]["used"]   # the last rank's reading (each reads every device)
        torch_held = [sum(sn["torch"][d] for sn in snaps) for d in range(len(used))]
        out[k] = {"used": used, "not_torch": [u - t for u, t in zip(used, torch_held)]}
    return out


# -- feeds: each gives set_epoch(e) and an iterator of (x, y, indices|None) ---

IMAGE_EXTS = (".png", ".jpg", ".jpeg")


def image_files(root):
    """ImageFolder order: classes are the sorted sub-folders, files sorted
    (PNG and JPEG files, as gpufeed's folder source takes them)."""
    classes = sorted(d.name for d in os.scandir(root) if d.is_dir())
    files, labels = [], []
    for c, name in enumerate(classes):
        for r, _, fs in sorted(os.walk(os.path.join(root, name))):
            for f in sorted(fs):
                if f.lower().endswith(IMAGE_EXTS):
                    files.append(os.path.join(r, f))
                    labels.append(c)
    return files, labels


class SyntheticFeed:
    def __init__(self, a, dist):
        g = torch.Generator(device="cpu").manual_seed(a.seed)
        x = torch.randn(a.batch, 3, a.size, a.size, generator=g).to(DTYPES[a.dtype])
        self.x = x.to(dist.device).contiguous(memory_format=torch.channels_last)
        self.y = torch.randint(0, 1000, (a.batch,), generator=g).to(dist.device)
        self.name = "synthetic"

    def set_epoch(self, epoch):
        pass

    def __iter__(self):
        while True:
            yield self.x, self.y, None

    def prepare(self, x, y):
        return x, y

    def close(self):
        pass


class DlpackFeed(SyntheticFeed):
    def __init__(self, a, dist):
        super().__init__(a, dist)
        self.name = "dlpack"
        self.imp = getattr(torch._C, "_from_dlpack", None) or torch.utils.dlpack.from_dlpack
        self.raw = getattr(torch._C, "_cuda_getCurrentRawStream", None) if dist.cuda else None
        self.index = (dist.device.index or 0) if dist.cuda else 0
        self.caps = None
        self.make_capsules()

    def make_capsules(self):
        to = torch.utils.dlpack.to_dlpack
        self.caps = (to(self.x), to(self.y))

    def __iter__(self):
        while True:
            if self.raw is not None:
                self.raw(self.index)
            c1, c2 = self.caps
            self.caps = None
            x, y = self.imp(c1), self.imp(c2)
            del c1, c2
            yield x, y, None
            del x, y

    def prepare(self, x, y):
        self.make_capsules()     # outside next(), as gpufeed's are its own
        return x, y


class GpufeedFeed:
    def __init__(self, a, dist):
        import gpufeed

        self.check = a.check
        tf = gpufeed.RandomResizedCrop(a.size, flip=True, dtype=GF_DTYPES[a.dtype],
                                       layout=a.layout.upper(), mean=MEAN, std=STD)
        self.loader = gpufeed.Loader(
            a.source, a.batch, shuffle=True, seed=a.seed, transform=tf,
            device=str(dist.device), cache_bytes=a.cache, drop_last=not a.check,
            num_workers=a.threads, prefetch=a.prefetch, channels=3,
            rank=dist.rank, world_size=dist.world, gpu_decode=a.gpu_decode,
            gpu_decode_percent=a.gpu_decode_percent, gpu_decoders=a.gpu_decoders,
            trace_events=(1 << 20) if a.profile else 0)
        self.layout = a.layout
        self.split = a.split_next and dist.cuda
        self.torch_ns = [0]      # --split-next: torch's time since the last take_torch_us()
        self.name = "gpufeed " + gpufeed.__version__
        self.total = int(self.loader.state_dict()["samples"])   # in the dataset
        self.pool_bytes = 0
        if self.loader.device != "cpu":   # the pool the plan set, reserved at create
            self.pool_bytes = int(self.loader.stats()["device_pool_reserved"])

    def set_epoch(self, epoch):
        self.loader.set_epoch(epoch)

    def state_dict(self):
        return self.loader.state_dict()

    def load_state_dict(self, state):
        self.loader.load_state_dict(state)

    def __iter__(self):
        # (each generator drops its references once the loop has the batch)
        if not self.check:
            it = self._split_iter() if self.split else self.loader
            for x, y in it:
                yield x, y, None
                del x, y
            return
        stream = 0   # host mode; on a GPU torch's current stream (cudaStreamLegacy for 0)
        if self.loader.device != "cpu":
            stream = torch.cuda.current_stream().cuda_stream or 1
        for b in self.loader.batches(stream=stream):
            x, y = torch.from_dlpack(b.images), torch.from_dlpack(b.labels)
            idx = list(b.indices)
            del b
            yield x, y, idx
            del x, y

    def _split_iter(self):
        """The loader's own iteration (_C.TensorIter: one C call a batch)
        with torch's calls timed: the current-stream query and the capsule
        importer it calls, and the end of the previous batch's tensors as
        the loop resumes (torch frees them; gpufeed's deleter queues the
        batch, the one part of it that is not torch's)."""
        from gpufeed.loader import _importer, _stream_getter
        raw, imp, clock, acc = _stream_getter(), _importer(), time.perf_counter_ns, self.torch_ns

        def stream_of(device):
            t = clock()
            s = raw(device)
            acc[0] += clock() - t
            return s

        def make(capsule):
            t = clock()
            x = imp(capsule)
            acc[0] += clock() - t
            return x
        for x, y in self.loader._core.tensors(stream_of, make, self.loader):
            yield x, y
            t = clock()
            del x, y
            acc[0] += clock() - t

    def take_torch_us(self):
        us = self.torch_ns[0] / 1000.0
        self.torch_ns[0] = 0
        return us

    def prepare(self, x, y):
        if self.layout == "nhwc":
            x = x.permute(0, 3, 1, 2)   # NHWC memory = channels_last NCHW view
        return x.contiguous(memory_format=torch.channels_last), y.long()

    def close(self):
        self.loader.close()


class IndexedImages(torch.utils.data.Dataset):
    def __init__(self, files, labels, size):
        try:  # torchvision >= 0.15: v2 (bench/pytorch_rrc.py's choice)
            from torchvision.transforms import v2 as T
        except ImportError:
            from torchvision import transforms as T
        self.files, self.labels = files, labels
        self.tf = T.Compose([T.RandomResizedCrop(size, antialias=True),
                             T.RandomHorizontalFlip()])

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        from torchvision.io import ImageReadMode, decode_jpeg, decode_png, read_file

        path = self.files[i]
        decode = decode_png if path.lower().endswith(".png") else decode_jpeg
        x = decode(read_file(path), mode=ImageReadMode.RGB)
        return self.tf(x), self.labels[i], i


class DataLoaderFeed:
    def __init__(self, a, dist):
        if not os.path.isdir(a.source) or os.path.exists(os.path.join(a.source, "index.gfi")):
            raise SystemExit(f"train_torch: --feed dataloader needs an image folder, not "
                             f"{a.source}")
        files, labels = image_files(a.source)
        if len(files) < a.batch * dist.world:
            raise SystemExit(f"train_torch: {len(files)} image files in {a.source}, fewer than "
                             f"a batch of {a.batch} per rank")
        ds = IndexedImages(files, labels, a.size)
        self.total = len(files)
        self.sampler = torch.utils.data.DistributedSampler(
            ds, num_replicas=dist.world, rank=dist.rank, shuffle=True, seed=a.seed,
            drop_last=False)
        w = a.threads
        more = dict(persistent_workers=True, prefetch_factor=4) if w > 0 else {}
        self.dl = torch.utils.data.DataLoader(
            ds, batch_size=a.batch, sampler=self.sampler, num_workers=w,
            pin_memory=dist.cuda, drop_last=not a.check, **more)
        self.device = dist.device
        self.dtype = DTYPES[a.dtype]
        self.mean = torch.tensor([m * 255 for m in MEAN], device=dist.device).view(1, 3, 1, 1)
        self.std = torch.tensor([s * 255 for s in STD], device=dist.device).view(1, 3, 1, 1)
        self.name = "torch.utils.data.DataLoader"

    def set_epoch(self, epoch):
        self.sampler.set_epoch(epoch)

    def __iter__(self):
        for x, y, idx in self.dl:
            yield x, y, idx.tolist()

    def prepare(self, x, y):
        x = x.to(self.device, non_blocking=True).float().sub_(self.mean).div_(self.std)
        x = x.to(self.dtype).contiguous(memory_format=torch.channels_last)
        return x, y.to(self.device, non_blocking=True)

    def close(self):
        del self.dl


FEEDS = {"synthetic": SyntheticFeed, "dlpack": DlpackFeed, "gpufeed": GpufeedFeed,
         "dataloader": DataLoaderFeed}


# -- the loop ------------------------------------------------------------------

def make_model(a, dist):
    import torchvision

    model = getattr(torchvision.models, a.model)(weights=None)
    model = model.to(dist.device, memory_format=torch.channels_last)
    if dist.world > 1:
        ids = [dist.device.index] if dist.cuda else None
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, weight_decay=1e-4)
    return model, opt


def percentile(xs, q):
    """The q-th percentile of xs (nearest rank); nan when empty."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q / 100.0 * len(xs)))] if xs else float("nan")


def padding(total, world):
    """The repeats a padded epoch of `world` ranks adds (DistributedSampler's)."""
    return -(-total // world) * world - total


def check_delivery(got, total, pad, epoch):
    """One epoch's delivered indices, all ranks (and jobs) together: every
    sample of [0, total) once, plus exactly `pad` repeats."""
    counts = collections.Counter(got)
    missing = sum(1 for i in range(total) if i not in counts)
    outside = sum(1 for i in counts if not 0 <= i < total)
    extra = len(got) - len(counts)
    good = missing == 0 and outside == 0 and extra == pad
    return good, {"epoch": epoch, "delivered": len(got), "missing": missing,
                  "outside": outside, "repeats": extra, "padding": pad, "ok": good}


def check_epochs(per_rank_epochs, total, world, first_epoch=0, before=None):
    """Every sample of [0, total) once an epoch, plus exactly the padding.
    before: the interrupted job's {"world": W, "delivered": per-rank lists}
    of the first epoch checked (a resumed one): its deliveries count with
    this job's, and the padding is the old job's when the world size is the
    same, none when it differs (an elastic rest is never padded)."""
    report = []
    ok = True
    for e in range(len(per_rank_epochs[0])):
        got = [i for r in per_rank_epochs for i in r[e]]
        pad = padding(total, world)
        if e == 0 and before is not None:
            got += [i for r in before["delivered"] for i in r]
            pad = padding(total, world) if before["world"] == world else 0
        good, rep = check_delivery(got, total, pad, first_epoch + e)
        ok &= good
        report.append(rep)
    return ok, report


def write_profile(a, dist, feed_name, prof, feed):
    """--profile: the torch trace, its summary and gpufeed's own trace."""
    import trace_summary

    os.makedirs(a.profile, exist_ok=True)
    base = os.path.join(a.profile, f"{feed_name}_{a.model}" +
                        (f"_rank{dist.rank}" if dist.world > 1 else ""))
    prof.export_chrome_trace(base + ".json")
    summary = trace_summary.summarise(trace_summary.load(base + ".json"), a.steps)
    if feed_name == "gpufeed":
        feed.loader.trace_write(base + ".gpufeed.json")
        summary["gpufeed_stats"] = {k: v for k, v in feed.loader.stats().items()
                                    if isinstance(v, (int, float, str))}
    with open(base + ".summary.json", "w") as f:
        json.dump(summary, f, indent=1)


def run(a, dist, feed_name, ceiling):
    mem_before = device_memory() if a.check else None
    feed = FEEDS[feed_name](a, dist)
    first_epoch, before = 0, None
    if a.resume:
        with open(a.resume) as f:
            before = json.load(f)
        feed.load_state_dict(before["state"])
        first_epoch = int(before["state"]["epoch"])
    model, opt = make_model(a, dist)
    model.train()
    side = None
    if a.train_stream == "side" and dist.cuda:
        side = torch.cuda.Stream(device=dist.device)
        side.wait_stream(torch.cuda.current_stream())
        torch.cuda.set_stream(side)
    cuda = dist.cuda
    autocast = torch.autocast(device_type=dist.device.type, dtype=torch.bfloat16)
    if cuda:
        torch.backends.cudnn.benchmark = True
        blocking = a.wait == "sleep"
        mk = lambda: torch.cuda.Event(enable_timing=True, blocking=blocking)  # noqa: E731
    total_steps = a.warmup + a.steps
    prof = None
    starts, ends = [], []       # events of the measured steps (GPU)
    host_wait = 0.0             # seconds in next() + prepare, measured steps
    next_us = []                # each measured step's next(), microseconds
    torch_us = []               # --split-next: torch's part of each
    host_gap = 0.0
    prev_end = None
    step = 0
    t_begin = None
    delivered = []              # --check: per epoch, the indices this rank got
    mem_during = None
    stopped = None
    done = False
    # Ranks of a resumed (elastic) epoch may take one step more than others:
    # DDP's join lets the finished ones shadow the rest's collectives.
    join = model.join() if a.check and dist.world > 1 else contextlib.nullcontext()
    with join:
        for epoch in itertools.count(first_epoch):
            if done or (a.check and epoch >= a.epochs):
                break
            if not (a.resume and epoch == first_epoch):
                feed.set_epoch(epoch)   # a resumed epoch goes on from the state
            if a.check:
                delivered.append([])
            it = iter(feed)
            while True:
                if not a.check and step == total_steps:
                    done = True
                    break
                if a.stop_after and step == a.stop_after:
                    stopped = feed.state_dict()
                    done = True
                    break
                if step == a.warmup and t_begin is None:
                    if cuda:
                        torch.cuda.synchronize()
                    t_begin = time.perf_counter()
                    if a.profile and cuda:
                        prof = torch.profiler.profile(
                            activities=[torch.profiler.ProfilerActivity.CUDA])
                        prof.start()
                t0 = time.perf_counter()
                try:
                    x, y, idx = next(it)
                except StopIteration:
                    break
                t_next = time.perf_counter()
                split = getattr(feed, "split", False)
                took = feed.take_torch_us() if split else 0.0
                x, y = feed.prepare(x, y)
                t1 = time.perf_counter()
                measured = step >= a.warmup
                if measured:
                    host_wait += t1 - t0
                    next_us.append(1e6 * (t_next - t0))
                    if split:
                        torch_us.append(took)
                if a.check:
                    delivered[-1].extend(idx)
                    if mem_during is None:
                        mem_during = device_memory()
                if cuda:
                    ev_start = mk()
                    ev_start.record()
                with autocast:
                    out = model(x)
                    loss = F.cross_entropy(out, y)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                del x, y, out, loss
                if cuda:
                    ev_end = mk()
                    ev_end.record()
                    if measured:
                        starts.append(ev_start)
                        ends.append(ev_end)
                    if prev_end is not None:
                        prev_end.synchronize()   # step k-1 done; step k stays queued
                    prev_end = ev_end
                elif measured:
                    host_gap += t1 - t0
                step += 1
    if cuda:
        torch.cuda.synchronize()
    t_end = time.perf_counter()
    if prof is not None:
        prof.stop()
        write_profile(a, dist, feed_name, prof, feed)
    feed.close()
    if side is not None:
        torch.cuda.set_stream(torch.cuda.default_stream(dist.device))

    if a.check:
        gathered = dist.gather(delivered)
        del model, opt
        gc.collect()
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()                  # every rank's loader closed
        mem_after = device_memory()
        pools = dist.gather([dist.device.index if cuda else None,
                             getattr(feed, "pool_bytes", 0)])
        mems = dist.gather({"before": mem_before, "during": mem_during, "after": mem_after})
        res = {"bench": "train_torch", "check": None, "feed": feed_name, "loader": feed.name,
               "world": dist.world, "samples": feed.total, "batch": a.batch,
               "device_pools": [{"rank": r, "device": d, "pool_bytes": b}
                                for r, (d, b) in enumerate(pools)],
               "device_memory": memory_report(mems)}
        if stopped is not None:
            # the job's deliveries so far, with the state, for --resume
            if dist.rank == 0:
                tmp = a.save + ".tmp"
                with open(tmp, "w") as f:
                    json.dump({"state": stopped, "world": dist.world,
                               "delivered": [r[0] for r in gathered]}, f)
                os.replace(tmp, a.save)
            res.update(check=True, stopped_after=step, state_epoch=int(stopped["epoch"]),
                       state_position=int(stopped["position"]))
            return res, True
        ok, report = check_epochs(gathered, feed.total, dist.world, first_epoch, before)
        res.update(check=ok, epochs=report)
        if before is not None:
            res["resumed_from_world"] = before["world"]
        return res, ok

    measured_steps = step - a.warmup
    wall = dist.allreduce_max(t_end - t_begin)
    if cuda:
        gaps = [ends[k - 1].elapsed_time(starts[k]) for k in range(1, len(starts))]
        span = ends[0].elapsed_time(ends[-1]) if len(ends) > 1 else 0.0
        gpu_wait = 100.0 * sum(gaps) / span if span > 0 else 0.0
    else:
        gpu_wait = 100.0 * host_gap / (t_end - t_begin)
    rate = measured_steps * a.batch * dist.world / wall
    res = {
        "bench": "train_torch", "feed": feed_name, "loader": feed.name, "model": a.model,
        "source": a.source if feed_name in ("gpufeed", "dataloader") else None,
        "device": (torch.cuda.get_device_name(dist.device) if cuda else "cpu"),
        "world": dist.world, "batch": a.batch, "size": a.size, "dtype": a.dtype,
        "layout": a.layout if feed_name == "gpufeed" else "nchw",
        "threads": a.threads if feed_name in ("gpufeed", "dataloader") else None,
        "warmup": a.warmup, "steps": measured_steps,
        "img_per_s": round(rate, 1),
        "step_ms": round(1000.0 * wall / measured_steps, 3),
        "gpu_data_wait_pct": round(gpu_wait, 2),
        "host_data_wait_pct": round(100.0 * host_wait / (t_end - t_begin), 2),
        "host_next_us_p50": round(percentile(next_us, 50), 2),
        "host_next_us_p99": round(percentile(next_us, 99), 2),
        "wait": a.wait,
        "torch": torch.__version__,
    }
    if torch_us:
        own = [n - t for n, t in zip(next_us, torch_us)]
        res.update(host_next_torch_us_p50=round(percentile(torch_us, 50), 2),
                   host_next_own_us_p50=round(percentile(own, 50), 2),
                   host_next_own_us_p99=round(percentile(own, 99), 2))
    if ceiling:
        res["vs_synthetic"] = round(rate / ceiling, 4)
        res["gpu_wait_vs_synthetic_pct"] = round(100.0 * (1 - rate / ceiling), 2)
    return res, True


def pin_rank_cores(n):
    """Pins this process to the LOCAL_RANK-th block of n of its allowed CPUs."""
    allowed = sorted(os.sched_getaffinity(0))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    mine = allowed[local * n:(local + 1) * n]
    if len(mine) < n:
        raise SystemExit(f"train_torch: --cores-per-rank {n}: local rank {local} needs CPUs "
                         f"{local * n}-{(local + 1) * n - 1} of the {len(allowed)} allowed")
    os.sched_setaffinity(0, mine)


def main(argv=None):
    a = parse_args(argv)
    if a.cores_per_rank:
        pin_rank_cores(a.cores_per_rank)
    dist = Dist(a.device)
    ceiling = a.ceiling
    ok_all = True
    for feed_name in a.feeds:
        res, ok = run(a, dist, feed_name, ceiling if feed_name != "synthetic" else 0.0)
        ok_all &= ok
        if feed_name == "synthetic" and not ceiling:
            ceiling = res["img_per_s"]
        if dist.rank == 0:
            print(json.dumps(res), flush=True)
    if dist.world > 1:
        torch.distributed.destroy_process_group()
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
