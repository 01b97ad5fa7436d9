"""Every sample exactly once per epoch (this rank's share; all ranks
together cover the dataset), epoch after epoch, in torch tensors."""

import gpufeed
import torch

from conftest import CLASSES, COUNT


def test_each_sample_once_per_epoch(folder):
    with gpufeed.Loader(folder, 8, seed=3, device="cpu") as loader:
        for epoch in range(3):
            loader.set_epoch(epoch)
            seen = []
            n = 0
            for b in loader.batches():
                seen.extend(b.indices)
                labels = torch.from_dlpack(b.labels)
                assert labels.tolist() == list(b.label_list)
                n += 1
            assert sorted(seen) == list(range(COUNT))
            assert n == len(loader) == 7
            assert loader.num_samples == COUNT


def test_epochs_differ_and_iteration_continues(folder):
    loader = gpufeed.Loader(folder, 10, seed=5, device="cpu")
    first = [i for b in loader.batches() for i in b.indices]
    # Without set_epoch, the next iteration is the next epoch.
    second = [i for b in loader.batches() for i in b.indices]
    assert sorted(first) == sorted(second) == list(range(COUNT))
    assert first != second
    loader.set_epoch(0)
    again = [i for b in loader.batches() for i in b.indices]
    assert again == first


def test_tensor_iteration_labels_match_classes(folder):
    loader = gpufeed.Loader(folder, 16, shuffle=False, device="cpu",
                            transform=gpufeed.Convert(dtype="uint8"))
    total = 0
    for images, labels in loader:
        assert images.dtype == torch.uint8
        assert images.shape[1:] == (3, 16, 16)
        assert labels.dtype == torch.int64
        assert labels.shape == (images.shape[0],)
        assert all(0 <= int(x) < CLASSES for x in labels)
        total += images.shape[0]
    assert total == COUNT


def test_ranks_partition_the_dataset(folder):
    for partition in ("pad", "drop"):
        seen = []
        per_rank = []
        for rank in range(3):
            loader = gpufeed.Loader(folder, 4, seed=9, rank=rank, world_size=3,
                                    partition=partition, device="cpu")
            mine = [i for b in loader.batches() for i in b.indices]
            assert len(mine) == loader.num_samples
            per_rank.append(len(mine))
            seen.extend(mine)
            loader.close()
        assert len(set(per_rank)) == 1
        if partition == "pad":
            assert set(seen) == set(range(COUNT)) and len(seen) == 51
        else:
            assert len(seen) == 48 and len(set(seen)) == 48


def test_drop_last(folder):
    loader = gpufeed.Loader(folder, 8, drop_last=True, device="cpu")
    counts = [b.count for b in loader.batches()]
    assert counts == [8] * 6 and len(loader) == 6
