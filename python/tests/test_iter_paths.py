"""Iterating a Loader is one C call a batch (_C.TensorIter: the stream,
the batch, both capsules and both tensors) when torch has its capsule
importer; the per-object path (Batch objects and the public
torch.from_dlpack) is what a torch without it gets. Both must give the
same tensors, and the C iterator must end like a generator: at the end of
the epoch and after an error."""

import os
import shutil

import gpufeed
import gpufeed.loader
import pytest
import torch


def _loader(folder, **kw):
    return gpufeed.Loader(folder, 8, device="cpu", seed=3,
                          transform=gpufeed.Convert(dtype="float32"), **kw)


def _epoch(loader, epoch):
    loader.set_epoch(epoch)
    return [(x.clone(), y.clone()) for x, y in loader]


needs_importer = pytest.mark.skipif(
    getattr(torch._C, "_from_dlpack", None) is None,
    reason="this torch has no capsule importer: only the object path runs")


@needs_importer
def test_iteration_is_the_c_iterator(folder):
    with _loader(folder) as loader:
        it = iter(loader)
        assert type(it).__name__ == "TensorIter"
        assert iter(it) is it
        images, labels = next(it)
        assert images.dtype == torch.float32 and labels.dtype == torch.int64
        assert images.shape == (8, 3, 16, 16) and labels.shape == (8,)


@needs_importer
def test_c_iterator_equals_the_object_path(folder, monkeypatch):
    with _loader(folder) as a:
        want = [_epoch(a, e) for e in (0, 1)]
    monkeypatch.setattr(gpufeed.loader, "_importer", lambda: None)
    with _loader(folder) as b:
        assert type(iter(b)).__name__ != "TensorIter"
        got = [_epoch(b, e) for e in (0, 1)]
    assert [len(e) for e in want] == [len(e) for e in got] == [7, 7]
    for we, ge in zip(want, got):
        for (x, lx), (y, ly) in zip(we, ge):
            assert torch.equal(x, y) and torch.equal(lx, ly)
    # Each sample once an epoch: 50 samples, the last batch short.
    assert sum(len(lx) for _, lx in want[0]) == 50


def test_a_temporary_loader_lives_through_its_loop(folder):
    # Nothing else holds the Loader: the iterator must (its finaliser
    # closes the loader).
    got = [len(y) for _, y in _loader(folder)]
    assert sum(got) == 50 and len(got) == 7


@needs_importer
def test_c_iterator_ends_like_a_generator(folder, tmp_path):
    root = str(tmp_path / "bad")
    shutil.copytree(folder, root)
    with open(os.path.join(root, "class1", "img00004.png"), "r+b") as f:
        data = bytearray(f.read())
        for i in range(60, len(data) - 20):
            data[i] ^= 0x5A
        f.seek(0)
        f.write(data)
    with gpufeed.Loader(root, 10, shuffle=False, device="cpu") as loader:
        it = iter(loader)
        with pytest.raises(gpufeed.CorruptSampleError) as e:
            for pair in it:
                del pair
        assert e.value.file.endswith("class1/img00004.png")
        with pytest.raises(StopIteration):
            next(it)  # finished after the error, as a generator is
        assert loader.held_batches == 0
        # A new iteration goes on with the rest of the epoch.
        rest = [len(y) for _, y in loader]
        assert rest and sum(rest) <= 40
    with _loader(folder) as loader:  # the end of an epoch, for good
        it = iter(loader)
        assert sum(1 for _ in it) == 7
        with pytest.raises(StopIteration):
            next(it)
    with pytest.raises(gpufeed.Error):
        iter(loader)  # closed
