"""gpufeed.Loader: the C loader shaped like a PyTorch data loader."""

import os
import re
import sys

from . import _C
from ._dist import distributed_defaults
from .errors import ConfigError
from .transforms import Transform

__all__ = ["Loader", "parse_bytes"]

_ORDERS = {"shuffle": 0, "sequential": 1, "block": 2}
_PARTITIONS = {"pad": 0, "drop": 1}
_ON_ERROR = {"fail": 0, "skip": 1}
_IO = {"auto": 0, "uring": 1, "io_uring": 1, "pread": 2}
_GPU_DECODE = {"auto": 0, "off": 1, "all": 2}
_WORKER_SCHED = {"batch": 0, "normal": 1}
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_bytes(v, what="cache_bytes"):
    """An int, or a string "8G", "512M", "1.5G", "64K" (binary units; an
    optional "B" or "iB" after the letter)."""
    if isinstance(v, bool):
        raise ConfigError("%s: %r is not a size" % (what, v))
    if isinstance(v, int):
        if v < 0:
            raise ConfigError("%s must be >= 0, not %d" % (what, v))
        return v
    if isinstance(v, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(i?B)?\s*", v,
                         re.IGNORECASE)
        if m:
            return int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    raise ConfigError("%s: %r is not a size (an int, or e.g. \"8G\", "
                      "\"512M\")" % (what, v))


def _choice(table, value, what):
    if value not in table:
        raise ConfigError("%s=%r: use one of %s" % (
            what, value, ", ".join(repr(k) for k in table)))
    return table[value]


def _uint(value, what, lo=0):
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise ConfigError("%s must be an int >= %d, not %r" % (what, lo, value))
    return value


def _resolve_device(device, local_rank):
    """The gf_loader_config device: an ordinal, DEVICE_CPU or DEVICE_AUTO."""
    if device is None:
        torch = sys.modules.get("torch")
        if torch is None:
            try:
                import torch  # noqa: F811 - only to ask whether CUDA works
            except ImportError:
                torch = None
        if torch is not None:
            if torch.cuda.is_available():
                return local_rank if local_rank is not None else \
                    torch.cuda.current_device()
            return _C.DEVICE_CPU
        return local_rank if local_rank is not None else _C.DEVICE_AUTO
    if isinstance(device, bool):
        raise ConfigError("device=%r is not a device" % (device,))
    if isinstance(device, int):
        if device < 0:
            raise ConfigError("device=%d: a CUDA ordinal is >= 0" % device)
        return device
    s = str(device)  # torch.device -> "cuda:0" / "cpu"
    if s == "cpu":
        return _C.DEVICE_CPU
    if s == "cuda":
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            return torch.cuda.current_device()
        return local_rank if local_rank is not None else 0
    m = re.fullmatch(r"cuda:(\d+)", s)
    if m:
        return int(m.group(1))
    raise ConfigError("device=%r: use None, 'cpu', 'cuda', 'cuda:N', an int "
                      "or a torch.device" % (device,))


_REMOTE_INTS = ("max_attempts", "retry_ms", "connect_timeout_ms", "stall_ms",
                "max_connections", "fetch_requests", "fetch_threads")


def _remote_config(remote):
    """The ``remote=`` dict (docs/REMOTE.md) as gf_remote_config fields:
    tls_verify (default True), ca_file, max_attempts, retry_ms,
    connect_timeout_ms, stall_ms, max_connections, fetch_requests,
    fetch_threads, fetch_bytes and cache_dir_bytes (ints or sizes such as "256M"),
    cache_dir."""
    if not isinstance(remote, dict):
        raise ConfigError("remote must be a dict (tls_verify, ca_file, "
                          "max_attempts, retry_ms, connect_timeout_ms, "
                          "stall_ms, max_connections, fetch_requests, "
                          "fetch_threads, "
                          "fetch_bytes, cache_dir, cache_dir_bytes), not %r"
                          % (remote,))
    out = {}
    for k, v in remote.items():
        if k == "tls_verify":
            out["tls_no_verify"] = 0 if v else 1
        elif k in ("ca_file", "cache_dir"):
            out[k] = None if v is None else os.fsdecode(os.fspath(v))
        elif k in ("fetch_bytes", "cache_dir_bytes"):
            out[k] = parse_bytes(v, k)
        elif k in _REMOTE_INTS:
            out[k] = _uint(v, k)
        elif k == "s3":
            out[k] = None if v is None else _s3_config(v)
        else:
            raise ConfigError("remote has no option %r" % (k,))
    return out


_S3_STRS = ("access_key_id", "secret_access_key", "session_token", "region",
            "endpoint_url", "profile")
_S3_ADDRESSING = {"auto": 0, "path": 1, "virtual": 2}


def _s3_config(s3):
    """The ``remote={"s3": {...}}`` dict (docs/REMOTE.md) as gf_s3_config
    fields: anonymous (bool: unsigned requests, as the AWS CLI's
    --no-sign-request), access_key_id, secret_access_key, session_token,
    region, endpoint_url, profile (str) and addressing ("auto", "path" or
    "virtual"). What is left out is found as the AWS CLI finds it."""
    if not isinstance(s3, dict):
        raise ConfigError("remote['s3'] must be a dict (anonymous, "
                          "access_key_id, secret_access_key, session_token, "
                          "region, endpoint_url, profile, addressing), not a "
                          "%s" % type(s3).__name__)
    out = {}
    for k, v in s3.items():
        if k == "anonymous":
            out[k] = 1 if v else 0
        elif k == "addressing":
            if v not in _S3_ADDRESSING:
                raise ConfigError("remote['s3']['addressing'] is 'auto', "
                                  "'path' or 'virtual', not %r" % (v,))
            out[k] = _S3_ADDRESSING[v]
        elif k in _S3_STRS:
            if v is not None and not isinstance(v, str):
                # Never the value: it may be a secret.
                raise ConfigError("remote['s3'][%r] must be a str" % (k,))
            out[k] = v
        else:
            raise ConfigError("remote['s3'] has no option %r" % (k,))
    return out


_SHARDS_INDEX = {"auto": 0, "require": 1, "scan": 2, "stream": 3}
_SHARDS_OPTIONS = ("index, image_fields, label, threads, index_bytes, "
                   "fields, field_bytes, shuffle, shuffle_bytes")


def _shards_config(shards):
    """The ``shards=`` dict (docs/SHARDS.md) as gf_shards_config fields:
    index ("auto", "require", "scan" or "stream"), image_fields (a str of
    ";"-separated field names, or a list or tuple of them), label (a str:
    "auto", "none" or a field name), threads (int), index_bytes (an int
    or a size such as "256M"), fields (other fields handed with each
    batch: a str of ";"-separated names or a list or tuple of them),
    field_bytes (the most bytes one may hold: an int or a size such as
    "64K"; default 64 KiB), and for streaming mode shuffle (the samples
    the shuffle buffer holds: an int >= 1, 1 for none; default 1000) and
    shuffle_bytes (its bytes at most: an int >= 1 or a size such as
    "256M"; default 256 MiB). None for either: the default. Both are
    refused with another index, named."""
    if not isinstance(shards, dict):
        raise ConfigError("shards must be a dict (%s), not %r"
                          % (_SHARDS_OPTIONS, shards))
    out = {}
    for k, v in shards.items():
        if k == "index":
            if not isinstance(v, str) or v not in _SHARDS_INDEX:
                raise ConfigError("shards['index'] is 'auto', 'require', "
                                  "'scan' or 'stream', not %r" % (v,))
            out[k] = _SHARDS_INDEX[v]
        elif k == "image_fields":
            if v is None:
                out[k] = None
                continue
            fields = [v] if isinstance(v, str) else v
            if (not isinstance(fields, (list, tuple)) or
                    not all(isinstance(f, str) for f in fields)):
                raise ConfigError("shards['image_fields'] must be a str or a "
                                  "list of str, not %r" % (v,))
            joined = ";".join(fields)
            if not joined.strip(";"):
                # C takes "" as the default: an empty list must not be
                # read as "jpg;jpeg;png".
                raise ConfigError("shards['image_fields'] names no field")
            out[k] = joined
        elif k == "label":
            if v is not None and not isinstance(v, str):
                raise ConfigError("shards['label'] must be a str ('auto', "
                                  "'none' or a field name), not %r" % (v,))
            out[k] = v
        elif k == "fields":
            if v is None:
                out[k] = None
                continue
            fields = [v] if isinstance(v, str) else v
            if (not isinstance(fields, (list, tuple)) or
                    not all(isinstance(f, str) for f in fields)):
                raise ConfigError("shards['fields'] must be a str or a "
                                  "list of str, not %r" % (v,))
            # Each name checked by C (empty, twice, upper-case): refused
            # there with the option named. An empty list asks for none.
            out[k] = ";".join(fields) if fields else None
        elif k == "field_bytes":
            out[k] = parse_bytes(v, "shards['field_bytes']")
        elif k == "threads":
            out[k] = _uint(v, "shards['threads']")
        elif k == "index_bytes":
            out[k] = parse_bytes(v, "shards['index_bytes']")
        elif k == "shuffle":
            # C takes 0 as the default (1000): a 0 meant as "no shuffle"
            # (webdataset's shuffle(0)) must not shuffle 1000 samples.
            if v is not None and (isinstance(v, bool) or
                                  not isinstance(v, int) or v < 1):
                raise ConfigError("shards['shuffle'] must be an int >= 1 "
                                  "(the samples the shuffle buffer holds; "
                                  "1: no shuffle; None: 1000), not %r"
                                  % (v,))
            out[k] = 0 if v is None else v
        elif k == "shuffle_bytes":
            if v is None:
                out[k] = 0
                continue
            n = parse_bytes(v, "shards['shuffle_bytes']")
            if n == 0:
                # 0 is C's default (256 MiB), not an empty buffer.
                raise ConfigError("shards['shuffle_bytes'] must be at least "
                                  "1 byte (None: 256 MiB), not %r" % (v,))
            out[k] = n
        else:
            raise ConfigError("shards has no option %r (%s)"
                              % (k, _SHARDS_OPTIONS))
    if out.get("index") != _SHARDS_INDEX["stream"]:
        for k in ("shuffle", "shuffle_bytes"):
            if out.get(k):
                raise ConfigError("shards[%r] is for streaming mode "
                                  "(shards['index'] 'stream'); with an "
                                  "index, order='shuffle' shuffles every "
                                  "sample" % (k,))
    return out


class Loader:
    """Batches of a dataset folder (``gpufeed build``), a folder of PNG
    and JPEG files or WebDataset tar shards, one rank's share, epoch after
    epoch; see the package documentation for every argument
    (``jpeg_scale``: JPEG windows decoded at a reduced DCT scale where they
    allow, True by default; False: full scale, the same bytes as a full
    decode; ``gpu_decode``: "auto", "off" or "all", which JPEG samples
    nvJPEG decodes on the GPU, with ``gpu_decode_percent`` the share of
    them, 1-100, 0 for all, and ``gpu_decoders`` the nvJPEG decoders
    working at once, 1-8, 0 for the default, 1; ``worker_sched``: "batch", the decode workers
    under SCHED_BATCH so that the training loop's threads get a core at
    once when they wake, or "normal").

    ``source`` names tar shards (docs/SHARDS.md) when it ends in ".tar"
    (one shard, or a brace pattern such as "train-{000000..000099}.tar"),
    holds "::" (a list) or starts with "@" (a list file); a sample's
    ``sample_path`` is then its key. ``shards``, a dict, says how they are
    read: ``index`` ("auto": a shard's ".idx" beside it where there is one,
    else a scan of its headers; "require": every shard must have one, else
    create fails naming it; "scan": indexes are not looked for; "stream":
    streaming mode, below), ``image_fields`` (the fields an image may come
    from: a str such as "jpg;png" or a list of names; default
    "jpg;jpeg;png"), ``label`` ("auto", the default: the "cls" field where
    a sample has one, else -1; "none": -1; or a field every sample must
    hold), ``threads`` (shards opened at once at create; in streaming
    mode, shards read at once, default 4), ``index_bytes`` (the largest
    index file read, an int or a size such as "256M"), ``fields`` (other
    fields handed with each batch, such as ["txt", "json"]) and
    ``field_bytes`` (the most bytes such a field may hold, default 64 KiB;
    a larger one is a bad sample, under error_policy).

    Streaming mode (``shards={"index": "stream"}``) reads each shard front
    to back in one request, without an index, as the webdataset library
    does: for remote shards that have no ".idx" files. Each epoch the
    shards are permuted from the seed and dealt to ranks whole; the
    samples of ``threads`` shards at once pass through a shuffle buffer of
    ``shuffle`` samples (default 1000; 1: none) and at most
    ``shuffle_bytes`` bytes (an int or a size such as "256M"; default 256
    MiB). The order depends on the shards, seed, rank, world_size,
    threads and the buffer's sizes only. It needs a transform with an
    output size, or ``max_sample_bytes``; it refuses ``cache_bytes``. An
    epoch's length is known only at its end: ``len()`` raises TypeError
    and ``num_samples`` is None (docs/SHARDS.md).

    Iterating yields ``(images, labels)`` torch tensors (on the device,
    ready on torch's current stream; CPU tensors in host mode); with
    ``shards={"fields": [...]}``, ``(images, labels, fields)``: fields a
    dict {name: list, one item a sample}, "txt" as str (UTF-8, bytes that
    are not replaced by U+FFFD), any other field as bytes (json: bytes, for
    json.loads), None where a sample lacks that field (docs/SHARDS.md).
    ``batches()`` yields gpufeed.Batch objects without torch (their
    ``fields`` the same dict)."""

    def __init__(self, source, batch_size=256, *, shuffle=True, order=None,
                 seed=0, transform=None, device=None, cache_bytes=0,
                 drop_last=False, num_workers=0, prefetch=0, rank=None,
                 world_size=None, labels_file=None, partition="pad",
                 on_error="fail", channels=0, keep_16bit=False, io="auto",
                 io_queue_depth=0, io_direct=False, block_size=0,
                 max_sample_bytes=0, limits=None, staging_slots=0,
                 device_pool_bytes=0, trace_events=0, cache_direct=True,
                 jpeg_scale=True, gpu_decode="auto", gpu_decode_percent=0,
                 gpu_decoders=0,
                 worker_sched="batch", remote=None, shards=None):
        self._core = None
        source = os.fspath(source)
        if not isinstance(source, str):
            source = os.fsdecode(source)
        if order is None:
            order = "shuffle" if shuffle else "sequential"
        d_rank, d_world, local_rank = distributed_defaults()
        rank = d_rank if rank is None else rank
        world_size = d_world if world_size is None else world_size
        _uint(rank, "rank")
        _uint(world_size, "world_size", 1)
        if rank >= world_size:
            raise ConfigError("rank %d is not below world_size %d"
                              % (rank, world_size))
        if transform is not None and not isinstance(transform, Transform):
            raise ConfigError("transform must be a gpufeed transform "
                              "(RandomResizedCrop, ResizeCenterCrop, ...), not "
                              "%r" % (transform,))
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ConfigError("seed must be an int >= 0, not %r" % (seed,))
        cfg = {
            "source": source,
            "batch_size": _uint(batch_size, "batch_size", 1),
            "seed": seed,
            "order": _choice(_ORDERS, order, "order"),
            "rank": rank,
            "world": world_size,
            "partition": _choice(_PARTITIONS, partition, "partition"),
            "drop_last": int(bool(drop_last)),
            "cache_bytes": parse_bytes(cache_bytes),
            "threads": _uint(num_workers, "num_workers"),
            "prefetch": _uint(prefetch, "prefetch"),
            "channels": _uint(channels, "channels"),
            "keep_16bit": int(bool(keep_16bit)),
            "error_policy": _choice(_ON_ERROR, on_error, "on_error"),
            "io_backend": _choice(_IO, io, "io"),
            "io_queue_depth": _uint(io_queue_depth, "io_queue_depth"),
            "io_direct": int(bool(io_direct)),
            "block_size": _uint(block_size, "block_size"),
            "max_sample_bytes": parse_bytes(max_sample_bytes,
                                            "max_sample_bytes"),
            "device": _resolve_device(device, local_rank),
            "staging_slots": _uint(staging_slots, "staging_slots"),
            "device_pool_bytes": parse_bytes(device_pool_bytes,
                                             "device_pool_bytes"),
            "trace_events": _uint(trace_events, "trace_events"),
            "cache_direct": 0 if cache_direct else 1,
            "jpeg_scale": 0 if jpeg_scale else 1,
            "gpu_decode": _choice(_GPU_DECODE, gpu_decode, "gpu_decode"),
            "gpu_decode_percent": _uint(gpu_decode_percent,
                                        "gpu_decode_percent"),
            "gpu_decoders": _uint(gpu_decoders, "gpu_decoders"),
            "worker_sched": _choice(_WORKER_SCHED, worker_sched,
                                    "worker_sched"),
        }
        if remote is not None:
            cfg["remote"] = _remote_config(remote)
        if shards is not None:
            cfg["shards"] = _shards_config(shards)
        if labels_file is not None:
            cfg["labels_file"] = os.fsdecode(os.fspath(labels_file))
        if limits is not None:
            if not isinstance(limits, dict):
                raise ConfigError("limits must be a dict of gf_limits fields "
                                  "(max_width, max_height, max_pixels, "
                                  "max_bytes)")
            cfg["limits"] = dict(limits)
        if transform is not None:
            cfg["transform"] = transform.to_c(seed)
        self._config = cfg
        self.transform = transform
        self.batch_size = batch_size
        self._core = _C.Core(cfg)
        self._classes = None

    # ---- iteration -------------------------------------------------------

    def _stream(self):
        """The torch current stream of the loader's device (GPU mode)."""
        if self._core.device < 0:
            return 0
        return _current_stream(self._core.device)

    def __iter__(self):
        """One epoch (the rest of the current one) as (images, labels)
        torch tensors. Without set_epoch, the next iteration runs the next
        epoch."""
        it = self._tensor_iter()
        return it if it is not None else self._iter_objects(self._core_or_raise())

    def _tensor_iter(self, indices_of=None):
        """The rest of the epoch in one C call a batch (_C.TensorIter):
        torch's current stream, the batch, both capsules and both tensors,
        and with indices_of, indices_of(bytearray of the batch's uint64
        sample indices) as a third item. None where torch lacks its capsule
        importer. It holds the Loader: `for x, y in Loader(...)` must not
        close the loader under the loop."""
        core = self._core_or_raise()
        imp = _importer()
        if imp is None:
            return None
        return core.tensors(_stream_getter() if core.device >= 0 else None,
                            imp, self, indices_of)

    def _iter_objects(self, core):
        """__iter__ through Batch objects and the public torch.from_dlpack
        (a torch without the capsule importer)."""
        on_device = core.device >= 0
        tensor = _tensor_maker()
        # The generator keeps no reference to a batch it has handed out
        # (a local would hold it until the next step, one batch slot fewer
        # for the workers): the pair is taken off a one-item list as it is
        # yielded.
        box = []
        while True:
            stream = _current_stream(core.device) if on_device else 0
            b = core.next(stream)
            if b is None:
                return
            item = (tensor(b.images, stream), tensor(b.labels, stream))
            if core.field_count:
                item += (b.fields,)
            box.append(item)
            del b
            yield box.pop()

    def batches(self, stream=0):
        """One epoch (the rest of the current one) as gpufeed.Batch objects;
        no torch needed. stream: the cudaStream_t (int) the batch is handed
        to in GPU mode; 0: the host waits for it."""
        core = self._core_or_raise()
        box = []  # as in __iter__: no reference kept past the yield
        while True:
            b = core.next(stream)
            if b is None:
                return
            box.append(b)
            del b
            yield box.pop()

    def next_batch(self, stream=0):
        """The next Batch, or None at the end of the epoch."""
        return self._core_or_raise().next(stream)

    def set_epoch(self, epoch):
        self._core_or_raise().set_epoch(_uint(epoch, "epoch"))

    # ---- metadata --------------------------------------------------------

    def _streaming(self):
        shards = self._config.get("shards")
        return shards is not None and \
            shards.get("index") == _SHARDS_INDEX["stream"]

    def __len__(self):
        """Batches an epoch of this rank. TypeError in streaming mode
        (shards={"index": "stream"}), as PyTorch's loaders without a
        length: the length is known only at the epoch's end."""
        core = self._core_or_raise()
        if self._streaming():
            raise TypeError("gpufeed.Loader has no len() in streaming mode: "
                            "an epoch's length is known only at its end")
        return core.epoch_size()[1]

    def __bool__(self):
        # Without it, `if loader:` would call __len__, and raise in
        # streaming mode.
        return self._streaming() or len(self) > 0

    @property
    def num_samples(self):
        """Samples an epoch of this rank; None in streaming mode."""
        core = self._core_or_raise()
        if self._streaming():
            return None
        return core.epoch_size()[0]

    @property
    def field_names(self):
        """The other fields asked for (shards={"fields": ...}), in order;
        () without them."""
        return self._core_or_raise().field_names

    @property
    def classes(self):
        if self._classes is None:
            self._classes = self._core_or_raise().class_names()
        return list(self._classes)

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def sample_path(self, i):
        return self._core_or_raise().sample_path(_uint(i, "index"))

    def stats(self):
        return self._core_or_raise().stats()

    def plan(self):
        return _C.plan(self._config)

    @property
    def device(self):
        d = self._core_or_raise().device
        return "cpu" if d < 0 else "cuda:%d" % d

    @property
    def held_batches(self):
        """Batches lent and not yet given back (views still alive)."""
        return self._core.held if self._core is not None else 0

    @property
    def prefetch(self):
        return self._core_or_raise().prefetch

    def trace_write(self, path):
        self._core_or_raise().trace_write(os.fspath(path))

    # ---- resume ----------------------------------------------------------

    def state_dict(self):
        """Where the loader stands, as plain ints (gf_loader_state): fits
        torch.save; load_state_dict resumes exactly."""
        return self._core_or_raise().state_export()

    def load_state_dict(self, state):
        self._core_or_raise().state_import(dict(state))

    # ---- lifetime --------------------------------------------------------

    def _core_or_raise(self):
        if self._core is None or self._core.closed:
            raise ConfigError("the loader is closed")
        return self._core

    def close(self):
        """Stops delivery. Tensors already made stay valid; the loader's
        memory goes when the last of them is freed."""
        if self._core is not None:
            self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "gpufeed.Loader(%r, batch_size=%d, device=%r)" % (
            _C.location_display(self._config["source"]), self.batch_size,
            "closed" if self._core is None or self._core.closed
            else self.device)


# ---- torch handoff ------------------------------------------------------
# torch.from_dlpack asks torch for the current stream on every call (tens of
# microseconds in torch 2.x, twice a batch): the iterator asks once (the
# raw-stream query when torch has it) and hands the capsule, exported on
# that stream, to torch's own capsule importer. Both are torch's internal
# calls behind torch.from_dlpack; where either is missing, the public
# torch.from_dlpack is used.

def _stream_getter():
    """f(device) -> the cudaStream_t (int) of torch's current stream on
    `device` (0 for the legacy default stream: the caller makes it 1)."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda device: torch.cuda.current_stream(device).cuda_stream


def _current_stream(device):
    """The cudaStream_t (int) of torch's current stream on `device`; the
    legacy default stream (0 in torch) as 1, as the DLPack spec asks."""
    s = _stream_getter()(device)
    return s if s != 0 else 1


def _importer():
    """torch's own capsule importer (behind torch.from_dlpack), or None."""
    import torch
    return getattr(torch._C, "_from_dlpack", None)


def _tensor_maker():
    """f(view, stream) -> a torch tensor viewing the batch's memory."""
    import torch
    imp = _importer()
    if imp is None:
        return lambda view, stream: torch.utils.dlpack.from_dlpack(view)

    def make(view, stream):
        return imp(view.__dlpack__(stream=stream) if stream else
                   view.__dlpack__())
    return make
