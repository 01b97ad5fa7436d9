"""gpufeed.torch: the PyTorch side of gpufeed (the only module that imports torch).

- ``distributed_defaults()``: (rank, world_size, local_rank) from
  torch.distributed when it is initialised, else RANK / WORLD_SIZE /
  LOCAL_RANK, else (0, 1, None) -- the core's function, re-exported.
- ``DataLoader``: shaped like ``torch.utils.data.DataLoader`` so an existing
  training script changes one line::

      # loader = torch.utils.data.DataLoader(train_set, batch_size=256,
      #              sampler=DistributedSampler(train_set), num_workers=16,
      #              pin_memory=True, drop_last=True)
      loader = gpufeed.torch.DataLoader(train_set, batch_size=256,
                   sampler=DistributedSampler(train_set), num_workers=16,
                   pin_memory=True, drop_last=True)

  ``train_set`` is a torchvision ``datasets.ImageFolder`` (its ``root`` and
  ``transform`` are taken) or a path; the torchvision transform is translated
  to gpufeed's (``translate_transform``) or refused naming the transform that
  has no equivalent.
- ``translate_transform(t)``: a torchvision transform (v1 or v2) to a
  gpufeed transform object.
- ``save_checkpoint`` / ``load_checkpoint``: the loader's state beside the
  model's and optimiser's in one ``torch.save`` file.

The loader's state is plain ints, strings and bytes, so
``torch.save({"model": model.state_dict(), "loader": loader.state_dict()}, f)``
works as it is, and ``loader.load_state_dict(torch.load(f)["loader"])``
resumes with the identical next batch.
"""

import numbers
import os

from .loader import _current_stream, _tensor_maker
import torch

import gpufeed
from gpufeed import distributed_defaults

__all__ = [
    "DataLoader",
    "UnsupportedTransformError",
    "distributed_defaults",
    "load_checkpoint",
    "save_checkpoint",
    "translate_transform",
]


class UnsupportedTransformError(ValueError):
    """A torchvision transform (or DataLoader option) gpufeed cannot do.

    ``.transform`` holds the name of the transform (or option) refused."""

    def __init__(self, name, why):
        self.transform = name
        super().__init__(f"gpufeed.torch: {name}: {why}")


# --------------------------------------------------------------------------
# torchvision transforms -> gpufeed transform

_SUPPORTED = (
    "Compose, RandomResizedCrop, Resize(int) + CenterCrop, Resize((h, w)), "
    "CenterCrop, RandomCrop, RandomHorizontalFlip(p=0.5), ToTensor, "
    "PILToTensor, ToImage, ToImageTensor, ToPureTensor, ConvertImageDtype, "
    "ConvertDtype, ToDtype, Normalize"
)

_DTYPES = {
    torch.uint8: "uint8",
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
}


def _is_gpufeed_transform(t):
    mod = type(t).__module__ or ""
    return mod == "gpufeed" or mod.startswith("gpufeed.")


def _tv_name(t):
    """'RandomResizedCrop' for a torchvision transform, None for anything else."""
    mod = type(t).__module__ or ""
    if mod.startswith("torchvision.transforms"):
        return type(t).__name__
    return None


def _describe(t):
    cls = type(t)
    return f"{cls.__name__} ({cls.__module__}.{cls.__qualname__})"


def _hw(size, what):
    """torchvision size (int, [n], (h, w)) -> (h, w, shorter_side_only)."""
    if isinstance(size, numbers.Integral):
        return int(size), int(size), True
    size = list(size)
    if len(size) == 1:
        return int(size[0]), int(size[0]), True
    if len(size) == 2:
        return int(size[0]), int(size[1]), False
    raise UnsupportedTransformError(what, f"size {size!r} is not an int or (h, w)")


def _check_bilinear(t, name):
    interp = getattr(t, "interpolation", None)
    if interp is None:
        return
    v = getattr(interp, "value", interp)
    # InterpolationMode.BILINEAR ("bilinear"), or PIL's BILINEAR (2) that old
    # torchvision kept as given.
    if v not in ("bilinear", 2):
        raise UnsupportedTransformError(
            name, f"interpolation {v!r}: gpufeed resamples bilinearly only "
                  "(InterpolationMode.BILINEAR, the default)")


def _antialias(t):
    # None (torchvision < 0.17's default) antialiases PIL images, which is
    # what an ImageFolder yields, so it is taken as True.
    a = getattr(t, "antialias", True)
    return True if a is None or a == "warn" else bool(a)


def _pad_amount(padding, name):
    if padding is None:
        return 0
    if isinstance(padding, numbers.Integral):
        return int(padding)
    p = list(padding)
    if p and all(int(x) == int(p[0]) for x in p):
        return int(p[0])
    raise UnsupportedTransformError(
        name, f"padding {padding!r}: gpufeed pads every side by the same amount")


def _flatten(t, out):
    name = _tv_name(t)
    if name == "Compose":
        for s in t.transforms:
            _flatten(s, out)
    else:
        out.append(t)


def translate_transform(transform, seed=None):
    """The gpufeed transform equivalent to a torchvision transform.

    ``transform``: a torchvision transform or ``Compose`` (v1
    ``torchvision.transforms`` or ``torchvision.transforms.v2``), a gpufeed
    transform (returned as it is) or None (None). Supported, in this order:
    one geometric step (``RandomResizedCrop``; ``Resize(int)`` followed by
    ``CenterCrop``; ``Resize((h, w))``; ``CenterCrop``; ``RandomCrop`` with
    an equal zero padding), ``RandomHorizontalFlip(p=0.5)`` anywhere, then
    the conversion to a tensor (``ToTensor``, ``PILToTensor``, ``ToImage``,
    ``ConvertImageDtype``, ``ToDtype``) and ``Normalize``. Interpolation must
    be bilinear (the default). The output is NCHW as torchvision's. Anything
    else raises ``UnsupportedTransformError`` naming the transform.

    Random choices are gpufeed's (a function of seed, epoch and sample),
    not torch's generator: the same recipe, not the same random draws. A
    CenterCrop without a resize starts at floor((in - out) / 2) where
    torchvision rounds half to even: one pixel apart on some odd margins.
    """
    if transform is None or _is_gpufeed_transform(transform):
        return transform
    steps = []
    _flatten(transform, steps)
    geo = None          # (kind, kwargs)
    flip = False
    dtype = "uint8"
    unit = None         # None: uint8 pixels; 1.0: values scaled to [0, 1]; 255.0: float pixels
    mean = std = None   # in [0, 1] units (gpufeed's Python units)
    pending_resize = None  # Resize(int) waiting for its CenterCrop
    for i, t in enumerate(steps):
        name = _tv_name(t)
        if name is None:
            raise UnsupportedTransformError(
                _describe(t), "not a torchvision transform gpufeed can translate; "
                f"supported: {_SUPPORTED}")
        after_tensor = unit is not None
        geometric = name in ("RandomResizedCrop", "Resize", "CenterCrop", "RandomCrop")
        if geometric and (geo is not None or (pending_resize and name != "CenterCrop")):
            raise UnsupportedTransformError(
                name, "a second resize or crop: gpufeed does one geometric step "
                "(Resize(int) + CenterCrop counts as one)")
        if geometric and after_tensor:
            raise UnsupportedTransformError(
                name, "after the conversion to a tensor: put resizes and crops first")
        if name == "RandomResizedCrop":
            _check_bilinear(t, name)
            h, w, _ = _hw(t.size, name)
            geo = ("RandomResizedCrop", dict(size=(h, w), scale=tuple(t.scale),
                                             ratio=tuple(t.ratio), antialias=_antialias(t)))
        elif name == "Resize":
            _check_bilinear(t, name)
            if getattr(t, "max_size", None) is not None:
                raise UnsupportedTransformError(name, "max_size is not supported")
            h, w, shorter = _hw(t.size, name)
            if shorter:
                pending_resize = (h, _antialias(t))
            else:
                geo = ("Resize", dict(size=(h, w), antialias=_antialias(t)))
        elif name == "CenterCrop":
            h, w, _ = _hw(t.size, name)
            if pending_resize:
                side, aa = pending_resize
                pending_resize = None
                geo = ("ResizeCenterCrop", dict(size=(h, w), resize=side, antialias=aa))
            else:
                geo = ("CenterCrop", dict(size=(h, w)))
        elif name == "RandomCrop":
            if getattr(t, "pad_if_needed", False):
                raise UnsupportedTransformError(name, "pad_if_needed=True is not supported")
            fill = getattr(t, "fill", 0)
            if isinstance(fill, dict):
                fill = set(fill.values())
                fill = 0 if fill <= {0, None} else fill
            if fill not in (0, None):
                raise UnsupportedTransformError(name, f"fill {fill!r}: gpufeed pads with zeros")
            mode = getattr(t, "padding_mode", "constant")
            if mode != "constant":
                raise UnsupportedTransformError(
                    name, f"padding_mode {mode!r}: gpufeed pads with zeros ('constant')")
            h, w, _ = _hw(t.size, name)
            geo = ("RandomCrop", dict(size=(h, w), padding=_pad_amount(t.padding, name)))
        elif name == "RandomHorizontalFlip":
            if float(t.p) != 0.5:
                raise UnsupportedTransformError(
                    name, f"p={t.p}: gpufeed flips with probability 0.5 only")
            if flip:
                raise UnsupportedTransformError(name, "given twice")
            flip = True
        elif name == "ToTensor":
            if after_tensor:
                raise UnsupportedTransformError(name, "the image is already a tensor")
            dtype, unit = "float32", 1.0
        elif name in ("PILToTensor", "ToImage", "ToImageTensor", "ToPureTensor"):
            pass  # the same values, as a tensor
        elif name in ("ConvertImageDtype", "ConvertDtype", "ToDtype"):
            d = getattr(t, "dtype", None)
            if isinstance(d, dict):
                raise UnsupportedTransformError(name, "a per-type dtype dict is not supported")
            if d not in _DTYPES:
                raise UnsupportedTransformError(
                    name, f"dtype {d}: gpufeed outputs uint8, float32, float16 or bfloat16")
            scale = name != "ToDtype" or bool(getattr(t, "scale", False))
            target = _DTYPES[d]
            if dtype == "uint8":
                if target == "uint8":
                    pass
                else:
                    dtype, unit = target, (1.0 if scale else 255.0)
            else:
                if target == "uint8":
                    raise UnsupportedTransformError(
                        name, "back to uint8 after a float conversion is not supported")
                dtype = target
        elif name == "Normalize":
            if dtype == "uint8":
                raise UnsupportedTransformError(
                    name, "before the conversion to a float tensor (add ToTensor or ToDtype first)")
            if mean is not None:
                raise UnsupportedTransformError(name, "given twice")
            # Normalize's mean/std are in the units of its input: [0, 1]
            # after a scaling conversion, pixels (0..255) after ToDtype(scale=False).
            mean = tuple(float(m) / unit for m in t.mean)
            std = tuple(float(s) / unit for s in t.std)
        else:
            raise UnsupportedTransformError(
                _describe(t), f"no gpufeed equivalent; supported: {_SUPPORTED}")
    if pending_resize:
        raise UnsupportedTransformError(
            "Resize", "Resize(int) alone gives images of varying sizes; follow it "
            "with CenterCrop (or use Resize((h, w)))")
    if dtype != "uint8" and mean is None:
        if unit == 1.0:
            mean, std = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)   # x / 255
        # unit 255: float pixels, gpufeed's default (no normalisation)
    common = dict(dtype=dtype, layout="NCHW", mean=mean, std=std)
    if seed is not None:
        common["seed"] = seed
    if geo is None:
        return gpufeed.Convert(flip=flip, **common)
    kind, kw = geo
    if kind == "RandomResizedCrop":
        return gpufeed.RandomResizedCrop(kw.pop("size"), flip=flip, **kw, **common)
    if kind == "ResizeCenterCrop":
        return gpufeed.ResizeCenterCrop(flip=flip, **kw, **common)
    if kind == "Resize":
        return gpufeed.Resize(kw.pop("size"), flip=flip, **kw, **common)
    if kind == "CenterCrop":
        return gpufeed.CenterCrop(kw.pop("size"), flip=flip, **common)
    return gpufeed.RandomCrop(kw.pop("size"), flip=flip, **kw, **common)


# --------------------------------------------------------------------------
# samplers


def _sampler_options(sampler):
    """rank/world/seed/order/partition from a torch sampler (None: none)."""
    if sampler is None:
        return {}
    from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler

    if isinstance(sampler, DistributedSampler):
        return dict(rank=int(sampler.rank), world_size=int(sampler.num_replicas),
                    seed=int(sampler.seed),
                    order="shuffle" if sampler.shuffle else "sequential",
                    partition="drop" if sampler.drop_last else "pad")
    if isinstance(sampler, RandomSampler):
        if getattr(sampler, "replacement", False) or getattr(sampler, "_num_samples", None):
            raise UnsupportedTransformError(
                "RandomSampler", "replacement or num_samples: gpufeed delivers each "
                "sample once per epoch")
        opts = dict(order="shuffle")
        gen = getattr(sampler, "generator", None)
        if gen is not None:
            opts["seed"] = int(gen.initial_seed())
        return opts
    if isinstance(sampler, SequentialSampler):
        return dict(order="sequential")
    raise UnsupportedTransformError(
        type(sampler).__name__, "sampler not supported (DistributedSampler, "
        "RandomSampler and SequentialSampler are)")


def _dataset_source(dataset):
    """(source path, dataset transform, classes) from a path or an ImageFolder."""
    if isinstance(dataset, (str, bytes, os.PathLike)):
        return dataset, None
    root = getattr(dataset, "root", None)
    if root is None:
        raise UnsupportedTransformError(
            type(dataset).__name__, "gpufeed reads a folder or a gpufeed dataset: "
            "give a path or a torchvision ImageFolder (its .root is read)")
    if getattr(dataset, "target_transform", None) is not None:
        raise UnsupportedTransformError(
            "target_transform", "not supported (labels are the class indices)")
    return root, getattr(dataset, "transform", None)


def _indices_tensor(buf):
    """The batch's sample indices (a bytearray of native uint64, each below
    2**63) as an int64 CPU tensor viewing that copy."""
    return torch.frombuffer(buf, dtype=torch.int64)


class DataLoader:
    """``torch.utils.data.DataLoader``'s interface over a ``gpufeed.Loader``.

    ``dataset``: a path (an ImageFolder tree of PNG and JPEG files, a
    gpufeed dataset, or WebDataset tar shards: a ".tar" path or brace
    pattern, a "::" list or an "@" list file, read as ``shards=`` says)
    or a torchvision ``ImageFolder`` (its ``root`` is read
    by gpufeed, its ``transform`` used when ``transform`` is not given; its
    own loading is not used). ``shuffle`` and ``sampler`` as in PyTorch: a
    ``DistributedSampler`` gives rank, world size, seed, shuffle and its
    ``drop_last`` (True: drop the tail so ranks get equal shares, gpufeed's
    ``partition="drop"``; False: pad, ``"pad"``), and its ``set_epoch`` is
    honoured. ``num_workers`` becomes gpufeed's decode threads (0: chosen by
    gpufeed); ``pin_memory``, ``prefetch_factor``, ``persistent_workers``,
    ``timeout`` and ``pin_memory_device`` are accepted and have no effect
    (batches are assembled in pinned memory and land on the device).
    ``collate_fn``, ``batch_sampler`` and ``worker_init_fn`` are refused.

    Iteration yields ``(images, labels)``: images as the transform makes them
    (NCHW), labels int64 (as PyTorch's collate gives them), on the loader's
    device (``device=None``: LOCAL_RANK's GPU, or the CPU without one), on
    torch's current stream. ``return_indices=True`` yields ``(images,
    labels, indices)`` with the dataset sample indices (int64, on the CPU).
    Tar shards read with other fields (``shards={"fields": ["txt"]}``)
    yield ``(images, labels, fields)``, or ``(images, labels, fields,
    indices)``: fields a dict {name: list a sample}, as gpufeed.Loader
    gives it.
    An iteration is one epoch: without a sampler each new iteration starts
    the next epoch (a new shuffle, as PyTorch's), with a
    ``DistributedSampler`` the epoch is the sampler's (``set_epoch``), and
    ``set_epoch(e)`` chooses the next one. ``state_dict()`` /
    ``load_state_dict()`` resume in the middle of an epoch: the next
    iteration continues it with the identical next batch.
    Tar shards in streaming mode (``shards={"index": "stream"}``) iterate
    the same way, but ``len()`` raises TypeError: an epoch's length is
    known only at its end.

    Other keyword arguments (``seed``, ``device``, ``cache_bytes``,
    ``channels``, ``remote``, ``shards`` ...) go to ``gpufeed.Loader``;
    ``channels`` defaults to 3 (RGB, as ImageFolder's loader converts every
    image).
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None,
                 batch_sampler=None, num_workers=0, collate_fn=None,
                 pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor=None,
                 persistent_workers=False, pin_memory_device="",
                 transform=None, return_indices=False, **loader_options):
        for name, value in (("batch_sampler", batch_sampler), ("collate_fn", collate_fn),
                            ("worker_init_fn", worker_init_fn),
                            ("multiprocessing_context", multiprocessing_context)):
            if value is not None:
                raise UnsupportedTransformError(
                    name, "not supported: gpufeed reads, decodes, transforms and "
                    "batches in its own threads")
        if batch_size is None or int(batch_size) < 1:
            raise UnsupportedTransformError("batch_size", f"{batch_size!r}: must be a positive int")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        source, ds_transform = _dataset_source(dataset)
        if transform is None:
            transform = ds_transform
        opts = {"order": "shuffle" if shuffle else "sequential"}
        if generator is not None:
            opts["seed"] = int(generator.initial_seed())
        opts.update(_sampler_options(sampler))
        seed = loader_options.pop("seed", None)
        if seed is not None:
            opts["seed"] = int(seed)
        opts.setdefault("channels", 3)
        opts.update(loader_options)
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.sampler = sampler
        self.drop_last = bool(drop_last)
        self.num_workers = int(num_workers)
        self.pin_memory = bool(pin_memory)
        self.return_indices = bool(return_indices)
        self.transform = translate_transform(transform)
        self._loader = gpufeed.Loader(source, self.batch_size, transform=self.transform,
                                      drop_last=self.drop_last,
                                      num_workers=self.num_workers, **opts)
        self._next_epoch = 0
        self._resume_epoch = None   # epoch a load_state_dict left in the middle

    # -- what PyTorch's DataLoader offers ---------------------------------

    def __len__(self):
        """Batches an epoch; TypeError in streaming mode (as PyTorch's
        DataLoader over an IterableDataset without a length)."""
        return len(self._loader)

    def __bool__(self):
        return bool(self._loader)

    def set_epoch(self, epoch):
        """The epoch the next iteration runs (also the sampler's, if it has one)."""
        self._next_epoch = int(epoch)
        if self.sampler is not None and hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(int(epoch))

    def _epoch_to_run(self):
        from torch.utils.data import DistributedSampler

        if isinstance(self.sampler, DistributedSampler):
            return int(self.sampler.epoch)
        return self._next_epoch

    def __iter__(self):
        epoch = self._epoch_to_run()
        if self._resume_epoch is None or self._resume_epoch != epoch:
            self._loader.set_epoch(epoch)
        self._resume_epoch = None
        self._next_epoch = epoch + 1
        if not self.return_indices:
            # The Loader's own iterator: one C call a batch, on torch's
            # current stream at each batch, labels int64 as collate gives
            # them.
            return iter(self._loader)
        # The same C call a batch, with the indices as a third item: copied
        # out of the batch (uint64 in C, below 2**63) into one bytearray and
        # viewed as int64.
        it = self._loader._tensor_iter(_indices_tensor)
        return it if it is not None else self._iter_with_indices()

    def _iter_with_indices(self):
        # A torch without the capsule importer: through Batch objects. A
        # suspended generator keeps its locals, and a reference
        # kept here would hold each batch one next() longer than the caller
        # does (the loader's slots are few): each item is taken off a
        # one-item list as it is yielded.
        device = self._loader.device
        index = None if device == "cpu" else (torch.device(device).index or 0)
        slot = []
        while True:
            # host mode: 0; on a GPU torch's current stream, asked each batch
            stream = 0 if index is None else _current_stream(index)
            slot.append(self._take(stream))
            if slot[-1] is None:
                return
            yield slot.pop()

    def _take(self, stream):
        batch = self._loader.next_batch(stream)
        if batch is None:
            return None
        make = self.__dict__.get("_make") or self.__dict__.setdefault("_make", _tensor_maker())
        images = make(batch.images, stream)   # the stream waits for the batch
        labels = make(batch.labels, stream)   # int64
        fields = (batch.fields,) if self._loader.field_names else ()
        return (images, labels) + fields + (_indices_tensor(batch._indices_buffer()),)

    # -- resume -------------------------------------------------------------

    def state_dict(self):
        """The loader's position: plain ints/str/bytes, fits torch.save."""
        return {"gpufeed": self._loader.state_dict(), "next_epoch": self._next_epoch}

    def load_state_dict(self, state):
        """Resumes from state_dict(): the next iteration continues the saved
        epoch (when the sampler's epoch, if any, is that epoch) with the
        identical next batch."""
        self._loader.load_state_dict(state["gpufeed"])
        epoch = _state_epoch(state["gpufeed"])
        self._resume_epoch = epoch
        self._next_epoch = epoch if epoch is not None else int(state["next_epoch"])
        if self.sampler is not None and hasattr(self.sampler, "set_epoch") and epoch is not None:
            self.sampler.set_epoch(epoch)

    # -- gpufeed extras ------------------------------------------------------

    @property
    def loader(self):
        """The gpufeed.Loader underneath."""
        return self._loader

    @property
    def classes(self):
        return self._loader.classes

    @property
    def class_to_idx(self):
        return self._loader.class_to_idx

    @property
    def device(self):
        return self._loader.device

    def close(self):
        self._loader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _state_epoch(state):
    e = state.get("epoch") if isinstance(state, dict) else None
    return None if e is None else int(e)


# --------------------------------------------------------------------------
# checkpoints


def save_checkpoint(path, loader, **objects):
    """torch.save of {"loader": loader.state_dict(), name: obj.state_dict()
    (or obj itself when it has none) for each keyword}: e.g.
    ``save_checkpoint(f, loader, model=model, optimizer=opt, epoch=3)``.
    The file is written to a temporary name and renamed, so a crash never
    leaves a half-written checkpoint."""
    ckpt = {"loader": loader.state_dict()}
    for name, obj in objects.items():
        ckpt[name] = obj.state_dict() if hasattr(obj, "state_dict") else obj
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    torch.save(ckpt, tmp)
    os.replace(tmp, path)
    return ckpt


def load_checkpoint(path, loader=None, map_location="cpu", **objects):
    """Reads a save_checkpoint file: loads the loader's state into
    ``loader`` and each keyword object's (``model=model`` ...) through its
    load_state_dict; returns the whole dict (plain entries such as an epoch
    number included)."""
    ckpt = torch.load(path, map_location=map_location)
    if loader is not None:
        loader.load_state_dict(ckpt["loader"])
    for name, obj in objects.items():
        obj.load_state_dict(ckpt[name])
    return ckpt
