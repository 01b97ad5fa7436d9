"""Tensors outlive the iterator, close() and the Loader object; a long run
holds nothing and does not grow; holding too many batches is an error,
never a deadlock."""

import gc

import gpufeed
import pytest
import torch


def _loader(folder, **kw):
    kw.setdefault("device", "cpu")
    return gpufeed.Loader(folder, 8, seed=2,
                          transform=gpufeed.Convert(dtype="float32"), **kw)


def test_tensor_outlives_iterator_close_and_loader(folder):
    gc.collect()
    base = gpufeed._C._live_batch_records()
    loader = _loader(folder, prefetch=3)
    it = iter(loader)
    images, labels = next(it)
    copy_i, copy_l = images.clone(), labels.clone()
    ptr = images.data_ptr()
    del it
    gc.collect()
    loader.close()
    assert torch.equal(images, copy_i) and torch.equal(labels, copy_l)
    with pytest.raises(gpufeed.ConfigError):
        loader.next_batch()
    del loader
    gc.collect()
    # Allocate and write elsewhere: the batch's memory is still ours.
    junk = [torch.full((8, 3, 16, 16), 7.0) for _ in range(16)]
    assert images.data_ptr() == ptr
    assert torch.equal(images, copy_i) and torch.equal(labels, copy_l)
    assert gpufeed._C._live_batch_records() == base + 1
    del junk, images, labels  # the loader is destroyed here
    assert gpufeed._C._live_batch_records() == base


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_a_thousand_batches_hold_nothing(folder):
    gc.collect()
    base = gpufeed._C._live_batch_records()
    loader = _loader(folder, prefetch=2)
    n = 0
    rss = []
    while n < 1000:
        for images, labels in loader:
            s = float(images[0, 0, 0, 0]) + int(labels[0])  # use them
            assert s == s
            n += 1
            if n in (200, 1000):
                gc.collect()
                rss.append(_rss_kib())
            if n == 1000:
                break
    del images, labels
    assert loader.held_batches == 0
    assert gpufeed._C._live_batch_records() == base
    # Growth between batch 200 and 1000 under 2 MiB (leaks of a batch
    # record, a capsule or a tensor a batch would show many times that).
    assert rss[1] - rss[0] < 2048, rss
    assert loader.stats()["batches"] >= 1000


def test_holding_more_than_prefetch_is_an_error(folder):
    loader = _loader(folder, prefetch=2)
    held = [torch.from_dlpack(loader.next_batch().images) for _ in range(2)]
    with pytest.raises(gpufeed.BusyError) as e:
        loader.next_batch()
    msg = str(e.value)
    assert "holds 2 batches" in msg and "prefetch" in msg
    assert e.value.code == -16 and e.value.name == "EBUSY"
    del held[0]
    b = loader.next_batch()  # one freed: delivery goes on
    assert b.index == 2


def test_context_manager_closes(folder):
    with _loader(folder) as loader:
        images, _ = next(iter(loader))
    with pytest.raises(gpufeed.ConfigError):
        len(loader)
    assert images.shape[0] == 8



def test_iterators_keep_no_batch_past_the_yield(folder):
    """Once the caller drops what an iterator gave, the loader has the
    batch back before the next one is asked for: a reference kept by the
    iterator would cost the workers one of the loader's few slots."""
    with _loader(folder, prefetch=2) as loader:
        it = iter(loader)
        images, labels = next(it)
        assert loader.held_batches == 1
        del images, labels
        assert loader.held_batches == 0
        pair = next(it)
        assert loader.held_batches == 1
        del pair, it
        it = loader.batches()
        b = next(it)
        assert loader.held_batches == 1
        del b
        assert loader.held_batches == 0
        del it
