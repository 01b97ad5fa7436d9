"""WebDataset tar shards through gpufeed.Loader(source=..., shards={...})
and gpufeed.torch.DataLoader in host mode: shards written here with the
standard library's tarfile, each sample a solid gray image (PNG or JPEG)
whose value encodes its number k, its label k * 3 + 1 in "<key>.cls" and a
caption in "<key>.txt". Checked: every sample once an epoch with the label
of its own pixels, by a brace pattern and by a "::" list; label "none";
index "require" without ".idx" files failing create, named; the shards=
dict's keys and values refused with errors naming them. Streaming mode
(index "stream"): every sample once an epoch, an order fixed by the seed,
shards dealt to ranks whole, shuffle, shuffle_bytes and threads reaching
the C library, resume, no len(), the torch adapter, other fields, and its
options refused, named."""

import io
import os
import re
import tarfile

import pytest

torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")
import gpufeed  # noqa: E402

SHARDS = 3
PER_SHARD = 12
COUNT = SHARDS * PER_SHARD
STEP = 7  # pixel value of sample k: k * STEP (JPEG keeps it within +-2)
BATCH = 5


def _key(k):
    return "s%d/k%03d" % (k // PER_SHARD, k)


def _label(k):
    return k * 3 + 1


def _image_member(k):
    """(extension, bytes) of sample k's 8x8 gray image: PNG for even k,
    JPEG for odd."""
    img = Image.new("L", (8, 8), k * STEP)
    buf = io.BytesIO()
    if k % 2 == 0:
        img.save(buf, format="PNG")
        return "png", buf.getvalue()
    img.save(buf, format="JPEG", quality=95)
    return "jpg", buf.getvalue()


def _add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def shard_dir(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("shards"))
    for s in range(SHARDS):
        path = os.path.join(root, "train-%06d.tar" % s)
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for k in range(s * PER_SHARD, (s + 1) * PER_SHARD):
                ext, data = _image_member(k)
                _add(tar, "%s.%s" % (_key(k), ext), data)
                _add(tar, "%s.cls" % _key(k), b"%d" % _label(k))
                _add(tar, "%s.txt" % _key(k), b"caption of sample %d" % k)
    return root


def _brace(root):
    return os.path.join(root, "train-{000000..%06d}.tar" % (SHARDS - 1))


def _list(root):
    return "::".join(os.path.join(root, "train-%06d.tar" % s)
                     for s in range(SHARDS))


def _number(pixels):
    """Sample k from its image's pixels (a tensor of one sample)."""
    v = pixels.float()
    assert float(v.max() - v.min()) <= 4, "not a solid image"
    return int(round(float(v.mean()) / STEP))


def _epoch(loader):
    """One epoch as {k: (label, key)}, failing on a sample seen twice."""
    seen = {}
    for b in loader.batches():
        images = torch.from_dlpack(b.images)
        labels = torch.from_dlpack(b.labels)
        for j, i in enumerate(b.indices):
            k = _number(images[j])
            assert k not in seen, "sample %d delivered twice" % k
            seen[k] = (int(labels[j]), loader.sample_path(int(i)))
        del images, labels
        b.release()
    return seen


def _check_all(seen, labels=True):
    assert sorted(seen) == list(range(COUNT))
    for k, (label, key) in seen.items():
        assert key == _key(k)
        assert label == (_label(k) if labels else -1), (k, label)


@pytest.mark.parametrize("spec", [_brace, _list], ids=["brace", "list"])
def test_every_sample_once_with_its_label(shard_dir, spec):
    with gpufeed.Loader(spec(shard_dir), BATCH, device="cpu", seed=5,
                        channels=1, num_workers=2,
                        shards={"label": "cls"}) as loader:
        assert loader.num_samples == COUNT
        for epoch in range(2):
            loader.set_epoch(epoch)
            _check_all(_epoch(loader))


def test_every_option_accepted(shard_dir):
    shards = {"index": "scan", "image_fields": ("png", "jpg"),
              "label": "auto", "threads": 2, "index_bytes": "1M"}
    with gpufeed.Loader(_brace(shard_dir), BATCH, device="cpu",
                        channels=1, shards=shards) as loader:
        _check_all(_epoch(loader))
    # image_fields reaches the C config: JPEG samples have no image field
    # left, skipped under the skip policy.
    with gpufeed.Loader(_brace(shard_dir), BATCH, device="cpu", channels=1,
                        on_error="skip",
                        shards={"image_fields": ["png"]}) as loader:
        seen = _epoch(loader)
        assert sorted(seen) == list(range(0, COUNT, 2))


def test_label_none(shard_dir):
    with gpufeed.Loader(_list(shard_dir), BATCH, device="cpu", channels=1,
                        shards={"label": "none"}) as loader:
        _check_all(_epoch(loader), labels=False)


def test_index_require_names_the_missing_index(shard_dir):
    with pytest.raises(gpufeed.Error) as e:
        gpufeed.Loader(_brace(shard_dir), BATCH, device="cpu",
                       shards={"index": "require"})
    assert re.search(r"train-00000[0-2]\.idx", str(e.value)), str(e.value)


def test_bad_options_named(shard_dir):
    src = _brace(shard_dir)
    with pytest.raises(gpufeed.ConfigError, match="no option 'labels'"):
        gpufeed.Loader(src, BATCH, device="cpu", shards={"labels": "cls"})
    with pytest.raises(ValueError,
                       match="'auto', 'require', 'scan' or 'stream'"):
        gpufeed.Loader(src, BATCH, device="cpu", shards={"index": "always"})
    with pytest.raises(gpufeed.ConfigError, match="'auto', 'require', "):
        gpufeed.Loader(src, BATCH, device="cpu", shards={"index": 1})
    with pytest.raises(gpufeed.ConfigError, match="shards must be a dict"):
        gpufeed.Loader(src, BATCH, device="cpu", shards="scan")
    with pytest.raises(gpufeed.ConfigError, match="image_fields"):
        gpufeed.Loader(src, BATCH, device="cpu",
                       shards={"image_fields": []})
    with pytest.raises(gpufeed.ConfigError, match="image_fields"):
        gpufeed.Loader(src, BATCH, device="cpu",
                       shards={"image_fields": ["png", 3]})
    with pytest.raises(gpufeed.ConfigError, match="label"):
        gpufeed.Loader(src, BATCH, device="cpu", shards={"label": 1})
    with pytest.raises(gpufeed.ConfigError, match=r"threads"):
        gpufeed.Loader(src, BATCH, device="cpu", shards={"threads": -1})
    with pytest.raises(gpufeed.ConfigError, match="index_bytes"):
        gpufeed.Loader(src, BATCH, device="cpu",
                       shards={"index_bytes": "lots"})
    # What only the C library checks comes back named.
    with pytest.raises(gpufeed.Error, match="lower-case"):
        gpufeed.Loader(src, BATCH, device="cpu", shards={"label": "Cls"})


def test_c_config_table(shard_dir):
    """The extension's own checks of the "shards" dict (C field names)."""
    cfg = {"source": _brace(shard_dir), "batch_size": BATCH,
           "device": gpufeed._C.DEVICE_CPU}
    with pytest.raises(gpufeed.ConfigError, match="shards has no field 'x'"):
        gpufeed._C.Core(dict(cfg, shards={"x": 1}))
    with pytest.raises(gpufeed.ConfigError, match="shards must be a dict"):
        gpufeed._C.Core(dict(cfg, shards=3))
    with pytest.raises(gpufeed.ConfigError, match="label must be a str"):
        gpufeed._C.Core(dict(cfg, shards={"label": 3}))
    with pytest.raises(gpufeed.Error, match="index"):
        gpufeed._C.Core(dict(cfg, shards={"index": 7}))
    core = gpufeed._C.Core(dict(cfg, shards={"index": 2, "label": "none"}))
    core.close()
    core = gpufeed._C.Core(dict(cfg, shards=None))
    core.close()


def test_torch_adapter_same_labels(shard_dir):
    import gpufeed.torch as gft

    dl = gft.DataLoader(_brace(shard_dir), batch_size=BATCH, shuffle=True,
                        device="cpu", channels=1, seed=2,
                        shards={"label": "cls", "index": "auto"})
    for epoch in range(2):
        dl.set_epoch(epoch)
        seen = {}
        for images, labels in dl:
            for j in range(images.shape[0]):
                k = _number(images[j])
                assert k not in seen
                seen[k] = int(labels[j])
        assert seen == {k: _label(k) for k in range(COUNT)}
    dl.close()


# ---- other fields handed with each batch (shards={"fields": ...}) --------

FIELD_COUNT = 24
BIG = 5  # its caption is 3,000 bytes: over a field_bytes of 2,048


def _caption(k):
    """Sample k's caption: of a length from k; sample 7's is not UTF-8."""
    if k == BIG:
        return b"c" * 3000
    text = ("caption %d " % k).encode() + b"x" * ((k * 41) % 200)
    return text + b"\xff" if k == 7 else text


def _meta(k):
    """Sample k's json, for even k only (odd samples have none)."""
    return b'{"k": %d}' % k if k % 2 == 0 else None


@pytest.fixture(scope="module")
def field_dir(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("fields"))
    for s in range(2):
        path = os.path.join(root, "f-%d.tar" % s)
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for k in range(s * 12, (s + 1) * 12):
                key = "d/k%03d" % k
                ext, data = _image_member(k)
                if k % 3 == 0:  # the caption first: the extent starts there
                    _add(tar, key + ".txt", _caption(k))
                _add(tar, "%s.%s" % (key, ext), data)
                _add(tar, key + ".cls", b"%d" % _label(k))
                if k % 3:
                    _add(tar, key + ".txt", _caption(k))
                if _meta(k) is not None:
                    _add(tar, key + ".json", _meta(k))
    return os.path.join(root, "f-{0..1}.tar")


def _want_txt(k):
    # "txt" comes as str: UTF-8, what is not replaced by U+FFFD.
    return _caption(k).decode("utf-8", errors="replace")


def _check_fields(images, labels, fields, seen):
    assert set(fields) == {"txt", "json"}
    for j in range(images.shape[0]):
        k = _number(images[j])
        assert int(labels[j]) == _label(k)
        assert fields["txt"][j] == _want_txt(k), k
        assert fields["json"][j] == _meta(k), k
        assert k not in seen
        seen.add(k)


def test_fields_with_each_batch(field_dir):
    with gpufeed.Loader(field_dir, BATCH, device="cpu", seed=3, channels=1,
                        num_workers=3, cache_bytes=1 << 20,
                        shards={"fields": ["txt", "json"]}) as loader:
        assert loader.field_names == ("txt", "json")
        for epoch in range(2):  # the second from the cache
            seen = set()
            for item in loader:
                assert len(item) == 3
                _check_fields(*item, seen)
            assert seen == set(range(FIELD_COUNT))
        assert loader.stats()["cache_hits"] >= FIELD_COUNT
        # Batch objects: the same dict.
        seen = set()
        for b in loader.batches():
            _check_fields(torch.from_dlpack(b.images),
                          torch.from_dlpack(b.labels), b.fields, seen)
            b.release()
        assert seen == set(range(FIELD_COUNT))


def test_no_fields_no_change(field_dir):
    with gpufeed.Loader(field_dir, BATCH, device="cpu", channels=1) as loader:
        assert loader.field_names == ()
        for item in loader:
            assert len(item) == 2
        b = loader.next_batch()
        assert b.fields == {}


def test_field_over_its_bound(field_dir):
    opts = {"fields": "txt;json", "field_bytes": "2K"}
    # Skip policy: that sample skipped, every other one with its fields.
    with gpufeed.Loader(field_dir, BATCH, device="cpu", seed=1, channels=1,
                        on_error="skip", shards=opts) as loader:
        seen = set()
        for images, labels, fields in loader:
            _check_fields(images, labels, fields, seen)
        assert seen == set(range(FIELD_COUNT)) - {BIG}
        assert loader.stats()["skipped"] == 1
    # Fail policy: named (shard, key, field, sizes).
    with gpufeed.Loader(field_dir, BATCH, device="cpu", channels=1,
                        shards=opts) as loader:
        with pytest.raises(gpufeed.Error,
                           match=r"f-0\.tar.*'d/k005'.*field 'txt' is 3000 "
                                 r"bytes, more than field_bytes \(2048\)"):
            for _ in loader:
                pass


def test_fields_torch_adapter(field_dir):
    import gpufeed.torch as gft

    dl = gft.DataLoader(field_dir, batch_size=BATCH, device="cpu",
                        channels=1, shards={"fields": ["txt", "json"]})
    seen = set()
    for images, labels, fields in dl:
        _check_fields(images, labels, fields, seen)
    assert seen == set(range(FIELD_COUNT))
    dl.close()
    dl = gft.DataLoader(field_dir, batch_size=BATCH, device="cpu",
                        channels=1, return_indices=True,
                        shards={"fields": ["txt", "json"]})
    seen = set()
    for images, labels, fields, indices in dl:
        assert indices.dtype == torch.int64
        _check_fields(images, labels, fields, seen)
    assert seen == set(range(FIELD_COUNT))
    dl.close()


def test_bad_field_options_named(field_dir):
    with pytest.raises(gpufeed.ConfigError, match="fields"):
        gpufeed.Loader(field_dir, BATCH, device="cpu", shards={"fields": 3})
    with pytest.raises(gpufeed.ConfigError, match="field_bytes"):
        gpufeed.Loader(field_dir, BATCH, device="cpu",
                       shards={"field_bytes": "lots"})
    # What only the C library checks comes back named.
    with pytest.raises(gpufeed.Error, match="empty field name"):
        gpufeed.Loader(field_dir, BATCH, device="cpu",
                       shards={"fields": "txt;;json"})
    with pytest.raises(gpufeed.Error, match="twice"):
        gpufeed.Loader(field_dir, BATCH, device="cpu",
                       shards={"fields": ["txt", "txt"]})


# ---- streaming mode (shards={"index": "stream"}) --------------------------

# The shuffle buffer and the lanes' places are sized before any sample is
# read: max_sample_bytes bounds a sample's encoded and decoded bytes.
STREAM = dict(device="cpu", channels=1, max_sample_bytes="4K")


def _stream(root, batch=BATCH, shards=None, **kw):
    opts = dict(STREAM, **kw)
    return gpufeed.Loader(_brace(root), batch,
                          shards=dict({"index": "stream", "label": "cls"},
                                      **(shards or {})), **opts)


def _stream_epoch(loader):
    """One epoch as the list of sample numbers in delivery order, each
    checked against its label and its index ((shard << 40) + its number in
    the shard)."""
    order = []
    for b in loader.batches():
        images = torch.from_dlpack(b.images)
        labels = torch.from_dlpack(b.labels)
        for j, i in enumerate(b.indices):
            k = _number(images[j])
            assert int(labels[j]) == _label(k), k
            assert (i >> 40, i & ((1 << 40) - 1)) == divmod(k, PER_SHARD), k
            order.append(k)
        del images, labels
        b.release()
    return order


def _each_once(order):
    assert sorted(order) == list(range(COUNT)), order


def _shard_runs(order):
    """True when each shard's samples come together, in the shard's order
    (no shuffle buffer mixed them)."""
    runs = [order[i:i + PER_SHARD] for i in range(0, COUNT, PER_SHARD)]
    return all(r == list(range(r[0], r[0] + PER_SHARD)) for r in runs)


def test_stream_every_sample_once(shard_dir):
    with _stream(shard_dir, seed=5, num_workers=2,
                 shards={"threads": 2, "shuffle": 20}) as loader:
        epochs = []
        for epoch in range(2):
            loader.set_epoch(epoch)
            epochs.append(_stream_epoch(loader))
            _each_once(epochs[-1])
        assert epochs[0] != epochs[1]
        # Without set_epoch, the next iteration runs the next epoch.
        _each_once(_stream_epoch(loader))


def test_stream_batch_over_epoch(shard_dir):
    """A batch larger than the whole epoch under drop_last: each epoch ends
    with no batch (its length is known only at its end), as a DataLoader
    over an IterableDataset does; the next epoch still comes."""
    with _stream(shard_dir, batch=COUNT + 1, drop_last=True) as loader:
        for _ in range(2):
            assert list(loader.batches()) == []
    with _stream(shard_dir, batch=COUNT + 1) as loader:
        _each_once(_stream_epoch(loader))


def test_stream_no_len(shard_dir):
    with _stream(shard_dir) as loader:
        with pytest.raises(TypeError, match="streaming mode: an epoch's "
                                            "length is known only at its end"):
            len(loader)
        assert loader.num_samples is None
        assert loader  # truth is not len()'s
        _each_once(_stream_epoch(loader))
        with pytest.raises(TypeError):
            len(loader)
    # Indexed shards keep theirs.
    with gpufeed.Loader(_brace(shard_dir), BATCH, device="cpu", channels=1,
                        shards={"index": "scan"}) as loader:
        assert (loader.num_samples, len(loader)) == (COUNT, -(-COUNT // BATCH))
        assert loader


def test_stream_order_from_seed(shard_dir):
    """The same seed gives the same order whatever the decode threads;
    another seed another order."""
    orders = {}
    for seed, workers in ((5, 1), (5, 3), (6, 2)):
        with _stream(shard_dir, seed=seed, num_workers=workers) as loader:
            orders[seed, workers] = _stream_epoch(loader)
    assert orders[5, 1] == orders[5, 3]
    assert orders[5, 1] != orders[6, 2]
    _each_once(orders[6, 2])


def test_stream_options_reach_c(shard_dir):
    """shuffle, shuffle_bytes and threads change the order as stream.h
    says."""
    # Sequential: the shards in order, no buffer; one lane: 0, 1, 2 ...
    with _stream(shard_dir, shuffle=False, shards={"threads": 1}) as loader:
        assert _stream_epoch(loader) == list(range(COUNT))
    # Three lanes: merged round robin.
    with _stream(shard_dir, shuffle=False, shards={"threads": 3}) as loader:
        assert _stream_epoch(loader) == [s * PER_SHARD + n
                                         for n in range(PER_SHARD)
                                         for s in range(SHARDS)]
    # Shuffled, one lane: the buffer mixes the samples; a buffer of one
    # sample (shuffle 1) or of one byte leaves them in their shards' order.
    with _stream(shard_dir, seed=1, shards={"threads": 1}) as loader:
        assert not _shard_runs(_stream_epoch(loader))
    for opts in ({"shuffle": 1}, {"shuffle_bytes": 1}):
        with _stream(shard_dir, seed=1,
                     shards=dict(opts, threads=1)) as loader:
            order = _stream_epoch(loader)
            _each_once(order)
            assert _shard_runs(order), (opts, order)
    # Every key at once, sizes as strings.
    with _stream(shard_dir, seed=1, shards={"threads": 2, "shuffle": 8,
                                            "shuffle_bytes": "64K",
                                            "image_fields": ["png", "jpg"]}) \
            as loader:
        _each_once(_stream_epoch(loader))


def test_stream_ranks_take_whole_shards(shard_dir):
    seen = []
    for rank in range(SHARDS):
        with _stream(shard_dir, seed=4, rank=rank,
                     world_size=SHARDS) as loader:
            order = _stream_epoch(loader)
        assert len({k // PER_SHARD for k in order}) == 1, order
        seen += order
    _each_once(seen)


def test_stream_resume(shard_dir):
    with _stream(shard_dir, seed=3, shards={"shuffle": 10}) as loader:
        it = loader.batches()
        for _ in range(2):
            next(it).release()
        state = loader.state_dict()
        rest = _stream_epoch(loader)
    with _stream(shard_dir, seed=3, shards={"shuffle": 10}) as loader:
        loader.load_state_dict(state)
        assert _stream_epoch(loader) == rest
    assert len(rest) == COUNT - 2 * BATCH


def test_stream_torch_adapter(shard_dir):
    import gpufeed.torch as gft

    dl = gft.DataLoader(_brace(shard_dir), batch_size=BATCH, shuffle=True,
                        seed=2, **dict(STREAM, shards={"index": "stream",
                                                       "label": "cls"}))
    with pytest.raises(TypeError, match="streaming mode"):
        len(dl)
    assert dl
    orders = []
    for epoch in range(2):
        order = []
        for images, labels in dl:
            for j in range(images.shape[0]):
                k = _number(images[j])
                assert int(labels[j]) == _label(k)
                order.append(k)
        _each_once(order)
        orders.append(order)
    assert orders[0] != orders[1]
    dl.close()
    dl = gft.DataLoader(_brace(shard_dir), batch_size=BATCH,
                        return_indices=True,
                        **dict(STREAM, shards={"index": "stream"}))
    order = []
    for images, labels, indices in dl:
        assert indices.dtype == torch.int64
        order += [int(i >> 40) * PER_SHARD + int(i & 0xFFFF)
                  for i in indices]
    _each_once(order)
    dl.close()


def test_stream_fields(field_dir):
    with gpufeed.Loader(field_dir, BATCH, seed=3, on_error="skip",
                        shards={"index": "stream", "fields": ["txt", "json"],
                                "field_bytes": "2K"}, **STREAM) as loader:
        assert loader.field_names == ("txt", "json")
        seen = set()
        for images, labels, fields in loader:
            _check_fields(images, labels, fields, seen)
        assert seen == set(range(FIELD_COUNT)) - {BIG}


def test_stream_bad_options(shard_dir):
    src = _brace(shard_dir)
    for bad in (-1, 0, 2.5, "10", True):
        with pytest.raises(gpufeed.ConfigError,
                           match=r"shards\['shuffle'\] must be an int >= 1"):
            gpufeed.Loader(src, BATCH, shards={"index": "stream",
                                               "shuffle": bad}, **STREAM)
    for bad in (-1, 0, "lots", 1.5, False):
        with pytest.raises(gpufeed.ConfigError,
                           match=r"shards\['shuffle_bytes'\]"):
            gpufeed.Loader(src, BATCH, shards={"index": "stream",
                                               "shuffle_bytes": bad},
                           **STREAM)
    for key, v in (("shuffle", 10), ("shuffle_bytes", "1M")):
        with pytest.raises(gpufeed.ConfigError,
                           match=r"shards\['%s'\] is for streaming mode"
                                 % key):
            gpufeed.Loader(src, BATCH, shards={key: v}, **STREAM)
    with pytest.raises(gpufeed.ConfigError, match="'stream'"):
        gpufeed.Loader(src, BATCH, shards={"index": "streaming"}, **STREAM)
    # What only the C library checks comes back as the package's errors,
    # its sentence kept.
    with pytest.raises(gpufeed.ConfigError,
                       match="cache_bytes is for random access"):
        gpufeed.Loader(src, BATCH, cache_bytes="1M",
                       shards={"index": "stream"}, **STREAM)
    with pytest.raises(gpufeed.ConfigError,
                       match="streaming mode sizes its buffers"):
        gpufeed.Loader(src, BATCH, device="cpu",
                       shards={"index": "stream"})
    with pytest.raises(gpufeed.ConfigError,
                       match="3 shards cannot feed 4 ranks"):
        gpufeed.Loader(src, BATCH, rank=0, world_size=4,
                       shards={"index": "stream"}, **STREAM)


def test_stream_c_config_table(shard_dir):
    """shuffle and shuffle_bytes reach gf_shards_config: C's own check of
    them with another index answers."""
    cfg = {"source": _brace(shard_dir), "batch_size": BATCH,
           "device": gpufeed._C.DEVICE_CPU, "max_sample_bytes": 4096}
    for key in ("shuffle", "shuffle_bytes"):
        with pytest.raises(gpufeed.ConfigError,
                           match="shuffle and shuffle_bytes are for "
                                 "streaming mode"):
            gpufeed._C.Core(dict(cfg, shards={"index": 0, key: 5}))
    with pytest.raises(gpufeed.ConfigError, match="shuffle is out of range"):
        gpufeed._C.Core(dict(cfg, shards={"index": 3, "shuffle": 1 << 32}))
    core = gpufeed._C.Core(dict(cfg, shards={"index": 3, "shuffle": 7,
                                             "shuffle_bytes": 1 << 20}))
    assert core.epoch_size() == (0, 0)
    core.close()
