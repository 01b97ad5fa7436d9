"""gpufeed.torch.DataLoader in host mode: torchvision transform translation,
ImageFolder input, samplers and epochs, checkpoints through torch.save, and a
two-process (world 2) run delivering every sample exactly once an epoch."""

import json
import os
import struct
import subprocess
import sys
import zlib

import pytest

torch = pytest.importorskip("torch")
import gpufeed  # noqa: E402
import gpufeed.torch as gft  # noqa: E402

try:
    import torchvision
    from torchvision import datasets
    from torchvision import transforms as T
except ImportError:  # the translation tests need torchvision's classes
    torchvision = None

try:
    from torchvision.transforms import v2 as T2
except ImportError:
    T2 = None

needs_tv = pytest.mark.skipif(torchvision is None, reason="torchvision not installed")
needs_v2 = pytest.mark.skipif(T2 is None, reason="torchvision.transforms.v2 not available")

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
COUNT = 36
BATCH = 8


def _png(path, h, w, channels, seed):
    """A PNG (8-bit, gray/RGB/RGBA) of smooth gradients plus noise."""
    color = {1: 0, 3: 2, 4: 6}[channels]
    rows = []
    x = seed * 2654435761 & 0xFFFFFFFF
    for y in range(h):
        row = bytearray([0])
        for i in range(w):
            for c in range(channels):
                x = (x * 1103515245 + 12345) & 0x7FFFFFFF
                row.append((y * 7 + i * 5 + c * 60 + seed * 13 + (x >> 16) % 24) & 0xFF)
        rows.append(bytes(row))

    def chunk(kind, data):
        c = kind + data
        return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(b"".join(rows))))
        f.write(chunk(b"IEND", b""))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """COUNT PNGs of varied sizes (24-47 px a side) in 3 class folders; one
    gray and one RGBA image among them."""
    root = tmp_path_factory.mktemp("pngs")
    for i in range(COUNT):
        d = root / f"class{i % 3}"
        d.mkdir(exist_ok=True)
        h, w = 24 + (i * 7) % 24, 24 + (i * 11) % 24
        ch = 1 if i == 5 else 4 if i == 7 else 3
        _png(d / f"img{i:03d}.png", h, w, ch, i)
    return str(root)


def _batches(it):
    out = []
    for item in it:
        out.append(tuple(x.clone() for x in item))
    return out


def _gpufeed_epoch(folder, transform, epoch=0, **kw):
    kw.setdefault("shuffle", True)
    kw.setdefault("seed", 3)
    with gpufeed.Loader(folder, BATCH, transform=transform, device="cpu", channels=3,
                        **kw) as ld:
        ld.set_epoch(epoch)
        return _batches(ld)


def _adapter_epoch(dl, epoch=None):
    if epoch is not None:
        dl.set_epoch(epoch)
    return _batches(dl)


def _assert_same(a, b):
    assert len(a) == len(b) and len(a) > 0
    for (xa, ya, *_), (xb, yb, *_) in zip(a, b):
        assert xa.dtype == xb.dtype and xa.shape == xb.shape
        assert torch.equal(xa, xb)
        assert torch.equal(ya.long(), yb.long())


# -- translation: each torchvision recipe gives what the equivalent gpufeed
#    transform gives through gpufeed.Loader -------------------------------

def _cases_v1():
    f16 = torch.float16
    return [
        ("train", T.Compose([T.RandomResizedCrop(20), T.RandomHorizontalFlip(), T.ToTensor(),
                             T.Normalize(MEAN, STD)]),
         gpufeed.RandomResizedCrop(20, flip=True, dtype="float32", mean=MEAN, std=STD)),
        ("train-scale", T.Compose([T.RandomResizedCrop((16, 20), scale=(0.3, 0.9),
                                                       ratio=(0.5, 2.0)), T.ToTensor()]),
         gpufeed.RandomResizedCrop((16, 20), scale=(0.3, 0.9), ratio=(0.5, 2.0),
                                   flip=False, dtype="float32", mean=(0, 0, 0), std=(1, 1, 1))),
        ("eval", T.Compose([T.Resize(28), T.CenterCrop(20), T.ToTensor(), T.Normalize(MEAN, STD)]),
         gpufeed.ResizeCenterCrop(size=20, resize=28, dtype="float32", mean=MEAN, std=STD)),
        ("convert-f16", T.Compose([T.RandomResizedCrop(20), T.PILToTensor(),
                                   T.ConvertImageDtype(f16)]),
         gpufeed.RandomResizedCrop(20, flip=False, dtype="float16", mean=(0, 0, 0), std=(1, 1, 1))),
        ("convert-normalize-bf16", T.Compose([T.RandomResizedCrop(20), T.RandomHorizontalFlip(),
                                              T.ToTensor(), T.Normalize(MEAN, STD),
                                              T.ConvertImageDtype(torch.bfloat16)]),
         gpufeed.RandomResizedCrop(20, flip=True, dtype="bfloat16", mean=MEAN, std=STD)),
        ("resize-hw", T.Compose([T.Resize((18, 26), antialias=False), T.ToTensor()]),
         gpufeed.Resize((18, 26), antialias=False, dtype="float32", mean=(0, 0, 0), std=(1, 1, 1))),
        ("center-uint8", T.Compose([T.CenterCrop(16), T.PILToTensor()]),
         gpufeed.CenterCrop(16, dtype="uint8")),
        ("random-crop", T.Compose([T.RandomCrop(16, padding=2), T.RandomHorizontalFlip(),
                                   T.ToTensor(), T.Normalize(MEAN, STD)]),
         gpufeed.RandomCrop(16, padding=2, flip=True, dtype="float32", mean=MEAN, std=STD)),
    ]


@needs_tv
@pytest.mark.parametrize("case", range(8))
def test_translation_v1(folder, case):
    name, tv, gf = _cases_v1()[case]
    with gft.DataLoader(folder, batch_size=BATCH, shuffle=True, seed=3, transform=tv,
                        device="cpu") as dl:
        got = _adapter_epoch(dl, 0)
    _assert_same(got, _gpufeed_epoch(folder, gf))
    assert got[0][1].dtype == torch.int64   # labels as PyTorch's collate gives them


@needs_v2
def test_translation_v2(folder):
    cases = [
        (T2.Compose([T2.ToImage(), T2.RandomResizedCrop(20, antialias=True),
                     T2.RandomHorizontalFlip(), T2.ToDtype(torch.float32, scale=True),
                     T2.Normalize(MEAN, STD)]),
         gpufeed.RandomResizedCrop(20, flip=True, dtype="float32", mean=MEAN, std=STD)),
        (T2.Compose([T2.Resize(28), T2.CenterCrop(20), T2.ToImage(),
                     T2.ToDtype(torch.float16, scale=True), T2.Normalize(MEAN, STD)]),
         gpufeed.ResizeCenterCrop(size=20, resize=28, dtype="float16", mean=MEAN, std=STD)),
        # scale=False: float pixels, Normalize's mean/std in pixel units
        (T2.Compose([T2.PILToTensor(), T2.RandomResizedCrop(20),
                     T2.ToDtype(torch.float32, scale=False),
                     T2.Normalize([m * 255 for m in MEAN], [s * 255 for s in STD])]),
         gpufeed.RandomResizedCrop(20, flip=False, dtype="float32", mean=MEAN, std=STD)),
    ]
    for tv, gf in cases:
        with gft.DataLoader(folder, batch_size=BATCH, shuffle=True, seed=3, transform=tv,
                            device="cpu") as dl:
            _assert_same(_adapter_epoch(dl, 0), _gpufeed_epoch(folder, gf))


@needs_tv
def test_translation_matches_torchvision_values(folder):
    """The deterministic recipes against torchvision itself on the same
    files: the units of ToTensor/Normalize, the evaluation resize and the
    RGB conversion of gray and RGBA images are torchvision's."""
    norm = T.Compose([T.ToTensor(), T.Normalize(MEAN, STD)])
    ds_eval = datasets.ImageFolder(folder, transform=T.Compose([T.Resize(28), T.CenterCrop(20),
                                                                norm]))
    # Resize + CenterCrop: within one pixel level (PIL's resize against the
    # tensor antialias path gpufeed follows, docs/TRANSFORMS.md)
    one_level = 1.01 / 255 / min(STD)
    ds_full = datasets.ImageFolder(folder, transform=norm)
    ds_crop = datasets.ImageFolder(folder, transform=T.Compose([T.CenterCrop(16), norm]))
    for ds in (ds_eval, ds_crop):
        with gft.DataLoader(ds, batch_size=BATCH, device="cpu", return_indices=True) as dl:
            seen = 0
            for images, labels, indices in dl:
                for x, y, i in zip(images, labels, indices.tolist()):
                    if ds is ds_eval:
                        ref, target = ds[i]
                        tol = one_level
                    else:
                        # CenterCrop alone: gpufeed's window starts at
                        # floor((in - out) / 2); torchvision rounds that
                        # half to even, one pixel further on some odd margins
                        full, target = ds_full[i]
                        t, l = (full.shape[1] - 16) // 2, (full.shape[2] - 16) // 2
                        ref, tol = full[:, t:t + 16, l:l + 16], 1e-6
                    assert int(y) == target
                    assert x.shape == ref.shape
                    diff = (x - ref).abs().max().item()
                    assert diff <= tol, f"sample {i} ({ds.samples[i][0]}): {diff}"
                    seen += 1
            assert seen == COUNT


@needs_tv
@pytest.mark.parametrize("bad,name", [
    (lambda: T.Compose([T.RandomResizedCrop(20), T.ColorJitter(0.4), T.ToTensor()]),
     "ColorJitter"),
    (lambda: T.Compose([T.Lambda(lambda x: x), T.ToTensor()]), "Lambda"),
    (lambda: T.RandomHorizontalFlip(p=0.3), "RandomHorizontalFlip"),
    (lambda: T.Compose([T.Resize(28), T.ToTensor()]), "Resize"),
    (lambda: T.Compose([T.Normalize(MEAN, STD), T.ToTensor()]), "Normalize"),
    (lambda: T.RandomResizedCrop(20, interpolation=T.InterpolationMode.NEAREST),
     "RandomResizedCrop"),
    (lambda: T.Compose([T.RandomResizedCrop(20), T.RandomCrop(16)]), "RandomCrop"),
    (lambda: T.RandomCrop(16, padding=2, padding_mode="reflect"), "RandomCrop"),
    (lambda: T.Compose([T.RandomResizedCrop(20), T.ToTensor(),
                        T.ConvertImageDtype(torch.float64)]), "ConvertImageDtype"),
])
def test_unsupported_transform_refused(folder, bad, name):
    with pytest.raises(gft.UnsupportedTransformError) as e:
        gft.DataLoader(folder, batch_size=BATCH, transform=bad(), device="cpu")
    assert e.value.transform.startswith(name)
    assert name in str(e.value)
    assert isinstance(e.value, ValueError)


def test_refused_options(folder):
    with pytest.raises(gft.UnsupportedTransformError, match="collate_fn"):
        gft.DataLoader(folder, batch_size=BATCH, collate_fn=lambda b: b, device="cpu")
    with pytest.raises(ValueError, match="mutually exclusive"):
        gft.DataLoader(folder, batch_size=BATCH, shuffle=True,
                       sampler=torch.utils.data.SequentialSampler(range(COUNT)), device="cpu")


def test_gpufeed_transform_passes_through(folder):
    gf = gpufeed.RandomResizedCrop(20, flip=True, dtype="float32", mean=MEAN, std=STD)
    assert gft.translate_transform(gf) is gf
    with gft.DataLoader(folder, batch_size=BATCH, shuffle=True, seed=3, transform=gf,
                        device="cpu", pin_memory=True, num_workers=2) as dl:
        _assert_same(_adapter_epoch(dl, 0), _gpufeed_epoch(folder, gf))


def test_batch_returns_when_the_caller_frees_it(folder):
    """The adapter keeps no reference of its own: once the caller drops a
    batch's tensors the loader has it back, before the next batch is asked
    for (the loader's slots are few: a hidden reference costs one)."""
    for with_indices in (False, True):
        with gft.DataLoader(folder, batch_size=BATCH, device="cpu", transform=_crop(),
                            return_indices=with_indices) as dl:
            it = iter(dl)
            item = next(it)
            assert dl.loader.held_batches == 1
            del item
            assert dl.loader.held_batches == 0
            x = next(it)[0]
            assert dl.loader.held_batches == 1
            del x, it


# -- ImageFolder input ------------------------------------------------------

@needs_tv
def test_imagefolder_input(folder):
    ds = datasets.ImageFolder(folder, transform=T.Compose([
        T.RandomResizedCrop(20), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)]))
    with gft.DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=2, pin_memory=True,
                        drop_last=False, device="cpu", return_indices=True) as dl:
        assert dl.classes == ds.classes
        assert dl.class_to_idx == ds.class_to_idx
        assert len(dl) == (COUNT + BATCH - 1) // BATCH
        seen = []
        for images, labels, indices in dl:
            assert images.shape[1:] == (3, 20, 20) and images.dtype == torch.float32
            for y, i in zip(labels.tolist(), indices.tolist()):
                assert y == ds.targets[i]
                path = dl.loader.sample_path(i)
                assert os.path.samefile(os.path.join(folder, path), ds.samples[i][0])
            seen += indices.tolist()
        assert sorted(seen) == list(range(COUNT))
    # the dataset's transform matters: the same recipe through gpufeed.Loader
    gf = gpufeed.RandomResizedCrop(20, flip=True, dtype="float32", mean=MEAN, std=STD)
    with gft.DataLoader(ds, batch_size=BATCH, shuffle=True, seed=3, device="cpu") as dl:
        _assert_same(_adapter_epoch(dl, 0), _gpufeed_epoch(folder, gf))


def test_not_a_folder_dataset_refused():
    with pytest.raises(gft.UnsupportedTransformError, match="ImageFolder"):
        gft.DataLoader([1, 2, 3], batch_size=2)


# -- samplers and epochs -----------------------------------------------------

def _crop():
    """A fixed-size output: the images of a batch must share a size to be a tensor."""
    return gpufeed.CenterCrop(16, dtype="uint8")


def _indices(dl, epoch=None):
    if epoch is not None:
        dl.set_epoch(epoch)
    return [i for _, _, idx in dl for i in idx.tolist()]


def _loader_indices(folder, epoch, **kw):
    with gpufeed.Loader(folder, BATCH, device="cpu", **kw) as ld:
        ld.set_epoch(epoch)
        return [i for b in ld.batches() for i in b.indices]


@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler(folder, drop_last):
    from torch.utils.data import DistributedSampler

    world = 5   # COUNT = 36 is not a multiple: padding or dropping shows
    per_rank = []
    for rank in range(world):
        s = DistributedSampler(range(COUNT), num_replicas=world, rank=rank, shuffle=True,
                               seed=11, drop_last=drop_last)
        with gft.DataLoader(folder, batch_size=BATCH, sampler=s, device="cpu",
                            transform=_crop(), return_indices=True) as dl:
            assert dl.loader.num_samples == len(list(iter(s)))   # the sampler's share
            e0 = _indices(dl)          # sampler.epoch 0
            s.set_epoch(1)             # PyTorch's way: the sampler's set_epoch
            e1 = _indices(dl)
            assert e0 != e1
            again = _indices(dl)       # no new set_epoch: the sampler's epoch again
            assert again == e1
            ref_kw = dict(rank=rank, world_size=world, seed=11, shuffle=True,
                          partition="drop" if drop_last else "pad")
            assert e0 == _loader_indices(folder, 0, **ref_kw)
            assert e1 == _loader_indices(folder, 1, **ref_kw)
            per_rank.append(e0)
    flat = [i for r in per_rank for i in r]
    if drop_last:
        assert len(flat) == len(set(flat)) == COUNT // world * world
    else:
        assert set(flat) == set(range(COUNT))
        assert len(flat) == -(-COUNT // world) * world


def test_epochs_without_sampler(folder):
    with gft.DataLoader(folder, batch_size=BATCH, shuffle=True, seed=4, device="cpu",
                        transform=_crop(), return_indices=True) as dl:
        e0, e1 = _indices(dl), _indices(dl)    # each iteration: the next epoch
        assert sorted(e0) == sorted(e1) == list(range(COUNT)) and e0 != e1
        assert _indices(dl, 0) == e0 and _indices(dl, 1) == e1
        assert e1 == _loader_indices(folder, 1, seed=4, shuffle=True)
    with gft.DataLoader(folder, batch_size=BATCH, device="cpu", transform=_crop(),
                        return_indices=True) as dl:
        assert _indices(dl) == list(range(COUNT))   # shuffle=None: sequential, as PyTorch


# -- checkpoints ---------------------------------------------------------------

def test_checkpoint_round_trip(folder, tmp_path):
    tf = gpufeed.RandomResizedCrop(20, flip=True, dtype="float32", mean=MEAN, std=STD)

    def make():
        return gft.DataLoader(folder, batch_size=BATCH, shuffle=True, seed=9, transform=tf,
                              device="cpu", return_indices=True)

    with make() as dl:
        dl.set_epoch(2)
        whole = _batches(dl)
    model = torch.nn.Linear(4, 2)
    with make() as dl:
        dl.set_epoch(2)
        it = iter(dl)
        head = [tuple(x.clone() for x in next(it)) for _ in range(2)]
        # the plain way: the state is plain data inside the training checkpoint
        torch.save({"model": model.state_dict(), "loader": dl.state_dict()}, tmp_path / "a.pt")
        gft.save_checkpoint(tmp_path / "b.pt", dl, model=model, step=2)
        del it
    _assert_same(head, whole[:2])

    with make() as dl:
        ck = torch.load(tmp_path / "a.pt")
        dl.load_state_dict(ck["loader"])
        _assert_same(_batches(dl), whole[2:])      # the identical next batch, to the end
        nxt = _indices(dl)                         # then epoch 3
        assert nxt == _loader_indices(folder, 3, seed=9, shuffle=True)

    fresh = torch.nn.Linear(4, 2)
    with make() as dl:
        ck = gft.load_checkpoint(tmp_path / "b.pt", dl, model=fresh)
        assert ck["step"] == 2
        assert torch.equal(fresh.weight, model.weight)
        _assert_same(_batches(dl), whole[2:])


# -- two processes, world 2 ------------------------------------------------------

_RANK_SCRIPT = r"""
import json, sys
import gpufeed, gpufeed.torch as gft
folder, out, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
rank, world, _ = gft.distributed_defaults()
dl = gft.DataLoader(folder, batch_size=batch, shuffle=True, seed=21, device="cpu",
                    transform=gpufeed.CenterCrop(16, dtype="uint8"), return_indices=True)
epochs = []
for epoch in range(3):
    dl.set_epoch(epoch)
    epochs.append([i for _, _, idx in dl for i in idx.tolist()])
json.dump({"rank": rank, "world": world, "len": len(dl), "epochs": epochs}, open(out, "w"))
"""


def test_two_ranks_exactly_once(folder, tmp_path):
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank))
        out = tmp_path / f"rank{rank}.json"
        procs.append((subprocess.Popen([sys.executable, "-c", _RANK_SCRIPT, folder, str(out),
                                        str(BATCH)], env=env), out))
    results = []
    for p, out in procs:
        assert p.wait(timeout=120) == 0
        results.append(json.load(open(out)))
    assert [r["rank"] for r in results] == [0, 1] and all(r["world"] == 2 for r in results)
    for epoch in range(3):
        a, b = (r["epochs"][epoch] for r in results)
        assert len(a) == len(b) == COUNT // 2
        assert sorted(a + b) == list(range(COUNT)), f"epoch {epoch}"
    assert results[0]["epochs"][0] != results[0]["epochs"][1]


def test_indices_without_the_capsule_importer(folder, monkeypatch):
    """A torch without its capsule importer: the adapter's return_indices
    path goes through Batch objects and yields what the one-call path
    does."""
    def run():
        with gft.DataLoader(folder, batch_size=BATCH, device="cpu", shuffle=True,
                            seed=4, transform=_crop(), return_indices=True) as dl:
            return [tuple(t.clone() for t in item) for item in dl]
    want = run()
    monkeypatch.setattr(gpufeed.loader, "_importer", lambda: None)
    got = run()
    assert len(got) == len(want) == -(-COUNT // BATCH)
    for a, b in zip(want, got):
        assert all(torch.equal(x, y) for x, y in zip(a, b)) and len(b) == 3


@pytest.mark.parametrize("indices", [False, True])
def test_iteration_takes_the_one_call_path(folder, indices):
    """The adapter runs the Loader's own iterator (one C call a batch), not a
    Batch object per batch, with return_indices too; what it yields is what
    the per-object path (Loader.batches) gives for the same epoch."""
    with gft.DataLoader(folder, batch_size=BATCH, device="cpu", shuffle=True,
                        seed=3, transform=_crop(), return_indices=indices) as dl:
        dl.loader.set_epoch(0)
        want = [(torch.from_dlpack(b.images).clone(), torch.from_dlpack(b.labels).clone(),
                 list(b.indices)) for b in dl.loader.batches()]
        dl.set_epoch(0)

        def refuse(*args, **kwargs):
            raise AssertionError("the adapter took a Batch object")

        dl.loader.next_batch = refuse
        got = [tuple(t.clone() for t in item) for item in dl]
        assert len(got) == len(want) == len(dl) == -(-COUNT // BATCH)
        for (a, la, ia), item in zip(want, got):
            assert len(item) == (3 if indices else 2)
            assert torch.equal(a, item[0]) and torch.equal(la, item[1])
            assert item[1].dtype == torch.int64
            if indices:
                assert item[2].dtype == torch.int64 and item[2].tolist() == ia
