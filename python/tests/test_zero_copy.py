"""DLPack without a copy: the tensor's memory is the batch's output; both
capsule kinds (legacy for torch 1.x, versioned for 2.x) work, and a
capsule nobody consumes gives the batch back when it is freed."""

import gpufeed
import numpy
import pytest
import torch


def _loader(folder, **kw):
    return gpufeed.Loader(folder, 8, device="cpu", seed=1,
                          transform=gpufeed.Convert(dtype="float32"), **kw)


def test_tensor_is_the_batch_output(folder):
    loader = _loader(folder)
    b = loader.next_batch()
    images = torch.from_dlpack(b.images)
    labels = torch.from_dlpack(b.labels)
    assert images.data_ptr() == b.images_ptr == b.images.data_ptr
    assert labels.data_ptr() == b.labels.data_ptr
    assert images.shape == b.images.shape == (8, 3, 16, 16)
    assert b.images.dtype == "float32" and b.labels.dtype == "int64"
    assert b.images.__dlpack_device__() == (1, 0)
    # numpy takes it too (host mode), the same memory.
    arr = numpy.from_dlpack(b.images)
    assert arr.__array_interface__["data"][0] == b.images_ptr
    arr_l = numpy.from_dlpack(b.labels)
    assert arr_l.tolist() == list(b.label_list)


def test_versioned_and_legacy_capsules(folder):
    loader = _loader(folder)
    b = loader.next_batch()
    legacy = b.images.__dlpack__()
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    versioned = b.images.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    old = b.images.__dlpack__(max_version=(0, 8))
    assert "versioned" not in repr(old)
    t = torch.utils.dlpack.from_dlpack(legacy)
    assert t.data_ptr() == b.images_ptr
    assert "used_dltensor" in repr(legacy)
    with pytest.raises(BufferError):
        b.images.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        b.images.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        b.images.__dlpack__(stream=5)  # a CPU array takes no stream
    assert b.images.__dlpack__(dl_device=(1, 0), copy=False) is not None


def test_unconsumed_capsules_give_the_batch_back(folder):
    loader = _loader(folder, prefetch=2)
    for _ in range(20):
        b = loader.next_batch()
        caps = [b.images.__dlpack__(), b.images.__dlpack__(max_version=(1, 0)),
                b.labels.__dlpack__()]
        del b
        assert loader.held_batches == 1  # the capsules still view it
        del caps
        assert loader.held_batches == 0
        if loader.next_batch() is None:  # keep going across epochs
            continue


def test_release_early(folder):
    loader = _loader(folder, prefetch=1)
    b = loader.next_batch()
    t = torch.from_dlpack(b.images)
    b.release()
    assert loader.held_batches == 0
    with pytest.raises(BufferError):
        b.images
    b2 = loader.next_batch()  # the one slot is free again
    assert b2.index == 1
    del t
