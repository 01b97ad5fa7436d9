"""What a training script asks before its first epoch: len, num_samples,
classes, class_to_idx, sample_path, plan, stats, device, version."""

import os

import gpufeed
import pytest

from conftest import CLASSES, COUNT


def test_metadata(folder):
    loader = gpufeed.Loader(folder, 8, device="cpu", drop_last=False)
    assert len(loader) == 7 and loader.num_samples == COUNT
    assert loader.classes == ["class%d" % c for c in range(CLASSES)]
    assert loader.class_to_idx == {"class%d" % c: c for c in range(CLASSES)}
    paths = [loader.sample_path(i) for i in range(COUNT)]
    assert sorted(paths) == paths  # listing order: class folder, then name
    assert all(os.path.isfile(os.path.join(folder, p)) for p in paths)
    # Labels agree with the class folder of each sample's path.
    for b in loader.batches():
        for i, lab in zip(b.indices, b.label_list):
            assert paths[i].split("/")[0] == loader.classes[lab]
    with pytest.raises(gpufeed.ConfigError):
        loader.sample_path(COUNT)
    assert loader.device == "cpu"
    assert gpufeed.__version__.count(".") == 2


def test_source_as_path(folder):
    import pathlib
    loader = gpufeed.Loader(pathlib.Path(folder), 10, device="cpu")
    assert len(loader) == 5
    assert repr(loader).startswith("gpufeed.Loader(")


def test_plan_and_stats(folder):
    loader = gpufeed.Loader(folder, 8, device="cpu", num_workers=2,
                            cache_bytes="1M",
                            transform=gpufeed.Convert(dtype="float16"))
    plan = loader.plan()
    assert "pinned staging slots" in plan and "cache" in plan
    for _ in loader.batches():
        pass
    st = loader.stats()
    assert st["threads"] == 2
    assert st["batches"] == 7
    assert st["decode"]["samples"] == COUNT
    assert st["cache_budget"] == 1 << 20
    assert st["device"] == -1 and st["io_backend"] in ("io_uring", "pread")
    assert isinstance(st["tuning"], str)


def test_parse_bytes():
    p = gpufeed.parse_bytes
    assert p(5) == 5 and p("8G") == 8 << 30 and p("512M") == 512 << 20
    assert p("1.5G") == 3 << 29 and p("64KiB") == 64 << 10 and p("2gb") == 2 << 30
    with pytest.raises(gpufeed.ConfigError):
        p("8X")


def test_distributed_defaults(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert gpufeed.distributed_defaults() == (0, 1, None)
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert gpufeed.distributed_defaults() == (3, 4, 1)


def test_rank_world_from_environment(folder, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    loader = gpufeed.Loader(folder, 5, device="cpu")
    assert loader.num_samples == COUNT // 2
    st = loader.state_dict()
    assert st["rank"] == 1 and st["world"] == 2
