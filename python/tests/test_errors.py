"""Errors carry the C error's name, file, sample and message; bad arguments
are ConfigError (a ValueError) naming the argument."""

import errno
import os
import shutil

import gpufeed
import pytest

import pngdata


@pytest.fixture()
def corrupt(tmp_path, folder):
    root = str(tmp_path / "bad")
    shutil.copytree(folder, root)
    victim = os.path.join(root, "class1", "img00004.png")
    with open(victim, "r+b") as f:
        data = bytearray(f.read())
        # Damage the compressed pixels (past the header the loader sizes
        # the file from), keeping the length.
        for i in range(60, len(data) - 20):
            data[i] ^= 0x5A
        f.seek(0)
        f.write(data)
    return root, "class1/img00004.png"


def test_corrupt_png_names_file_and_sample(corrupt):
    root, rel = corrupt
    loader = gpufeed.Loader(root, 10, shuffle=False, device="cpu")
    bad_index = [loader.sample_path(i) for i in range(50)].index(rel)
    with pytest.raises(gpufeed.CorruptSampleError) as e:
        for b in loader.batches():
            b.release()
    err = e.value
    assert isinstance(err, gpufeed.Error)
    assert err.name == "GF_EDECODE" and err.code == -1005
    assert err.file.endswith(rel)
    assert err.sample == bad_index
    assert rel in str(err)
    # The loader goes on after the failed batch.
    rest = [b.index for b in loader.batches()]
    assert rest and rest[0] == bad_index // 10 + 1


def test_skip_policy_counts(corrupt):
    root, rel = corrupt
    loader = gpufeed.Loader(root, 10, device="cpu", on_error="skip")
    seen = [i for b in loader.batches() for i in b.indices]
    assert len(seen) == 49
    st = loader.stats()
    assert st["skipped"] == 1 and rel in st["last_skip_reason"]


def test_missing_source(tmp_path):
    with pytest.raises(gpufeed.Error) as e:
        gpufeed.Loader(str(tmp_path / "nope"), 4, device="cpu")
    assert isinstance(e.value, gpufeed.IOError_)
    assert isinstance(e.value, OSError) and e.value.errno == errno.ENOENT
    assert "nope" in str(e.value)


def test_not_a_png_is_named(tmp_path):
    root = tmp_path / "notpng" / "c0"
    root.mkdir(parents=True)
    (root / "a.png").write_bytes(pngdata.png_bytes(bytes(48), 4, 4))
    (root / "b.png").write_bytes(b"this is not a png at all")
    with pytest.raises(gpufeed.Error) as e:
        gpufeed.Loader(str(tmp_path / "notpng"), 2, device="cpu")
    assert "b.png" in str(e.value)


@pytest.mark.parametrize("kwargs, word", [
    ({"batch_size": 0}, "batch_size"),
    ({"order": "random"}, "order"),
    ({"partition": "even"}, "partition"),
    ({"on_error": "ignore"}, "on_error"),
    ({"io": "aio"}, "io"),
    ({"cache_bytes": "lots"}, "cache_bytes"),
    ({"cache_bytes": -1}, "cache_bytes"),
    ({"device": "tpu"}, "device"),
    ({"device": -3}, "device"),
    ({"rank": 2, "world_size": 2}, "rank"),
    ({"world_size": 0}, "world_size"),
    ({"num_workers": -1}, "num_workers"),
    ({"transform": "resize"}, "transform"),
    ({"seed": -1}, "seed"),
    ({"limits": {"max_widht": 3}}, "max_widht"),
    ({"channels": 2.5}, "channels"),
    ({"worker_sched": "idle"}, "worker_sched"),
])
def test_bad_arguments(folder, kwargs, word):
    kwargs = dict(kwargs)
    bs = kwargs.pop("batch_size", 4)
    with pytest.raises(gpufeed.ConfigError) as e:
        gpufeed.Loader(folder, bs, **kwargs)
    assert isinstance(e.value, ValueError)
    assert word in str(e.value)


def test_bad_config_from_the_c_library(folder):
    # A value only the C checks refuse: channels 2.
    with pytest.raises(gpufeed.ConfigError) as e:
        gpufeed.Loader(folder, 4, device="cpu", channels=2)
    assert "channels" in str(e.value) and e.value.name == "EINVAL"


@pytest.mark.parametrize("make, word", [
    (lambda: gpufeed.RandomResizedCrop(0), "size"),
    (lambda: gpufeed.RandomResizedCrop(8, scale=(0.5, 0.1)), "scale"),
    (lambda: gpufeed.Resize((4,)), "size"),
    (lambda: gpufeed.Convert(dtype="int7"), "dtype"),
    (lambda: gpufeed.Convert(layout="CHW"), "layout"),
    (lambda: gpufeed.Convert(dtype="uint8", mean=(0.5,)), "mean"),
    (lambda: gpufeed.Convert(std=(0.0,)), "std"),
    (lambda: gpufeed.RandomCrop(8, padding=-1), "padding"),
])
def test_bad_transform_arguments(make, word):
    with pytest.raises(gpufeed.ConfigError) as e:
        make()
    assert word in str(e.value)
