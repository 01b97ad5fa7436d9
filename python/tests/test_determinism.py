"""The same seed gives the same batches, bit for bit, whatever the thread
count; another seed gives others."""

import gpufeed
import torch

from conftest import collect


def _run(source, threads, seed, transform):
    loader = gpufeed.Loader(source, 8, seed=seed, num_workers=threads,
                            device="cpu", transform=transform)
    try:
        return collect(loader)
    finally:
        loader.close()


def _equal(a, b):
    return (a[0] == b[0] and
            all(torch.equal(x, y) for x, y in zip(a[1], b[1])) and
            all(torch.equal(x, y) for x, y in zip(a[2], b[2])))


def test_threads_do_not_change_batches(varied):
    rrc = gpufeed.RandomResizedCrop(24, dtype="float32",
                                    mean=gpufeed.IMAGENET_MEAN,
                                    std=gpufeed.IMAGENET_STD)
    one = _run(varied, 1, 7, rrc)
    three = _run(varied, 3, 7, rrc)
    assert _equal(one, three)
    assert len(one[1]) == 5 and one[1][0].shape == (8, 3, 24, 24)


def test_another_seed_gives_other_batches(varied):
    rrc = gpufeed.RandomResizedCrop(24, dtype="uint8")
    a = _run(varied, 2, 1, rrc)
    b = _run(varied, 2, 2, rrc)
    assert a[0] != b[0]


def test_transform_seed_independent_of_order(varied):
    # The transform's own seed fixed, the order's seed changed: each sample
    # gets the same crop (the crop depends on (seed, epoch, index) only).
    a = _run(varied, 2, 1, gpufeed.RandomResizedCrop(16, dtype="uint8", seed=42))
    b = _run(varied, 2, 2, gpufeed.RandomResizedCrop(16, dtype="uint8", seed=42))
    by_index_a = {i: img for idx, imgs in zip(a[0], a[1]) for i, img in zip(idx, imgs)}
    by_index_b = {i: img for idx, imgs in zip(b[0], b[1]) for i, img in zip(idx, imgs)}
    assert by_index_a.keys() == by_index_b.keys()
    assert all(torch.equal(by_index_a[i], by_index_b[i]) for i in by_index_a)
