"""Tar shards' JPEG files on the GPU's JPEG engines (needs torch with CUDA;
skipped without it, a failure with GPUFEED_REQUIRE_GPU=1; needs the CLI,
$GPUFEED). One shard written here: 24 samples, each a JPEG (4:2:0, 40 to
200 pixels a side) and its label, and one JPEG cut in its entropy-coded
data and closed with an end marker (which the engines would decode
without a word). Under gpu_decode "auto" and the skip policy:
- unverified, each JPEG is decoded on the CPU the first time, read to its
  end (the stats count the verdicts), and the good ones go to the engines
  in the next epoch; the cut one fails and is decoded on the CPU again,
  which refuses it again;
- after `gpufeed index --verify`, the 24 go to the engines and the cut one
  to the CPU, which refuses it: every good sample once, that one never;
- an image changed after --verify in the same way (its size kept) is
  decoded on the CPU and skipped, never handed on as the engines' garbage;
  the others still go to the engines."""

import io
import os
import subprocess
import tarfile

import gpufeed
import pytest

torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")

if not torch.cuda.is_available():
    if os.environ.get("GPUFEED_REQUIRE_GPU") == "1":
        pytest.fail("GPUFEED_REQUIRE_GPU=1 but torch sees no CUDA device",
                    pytrace=False)
    pytest.skip("torch sees no CUDA device", allow_module_level=True)

N = 24
BAD_LABEL = 99


def _jpeg(k):
    side_h, side_w = 40 + (k * 37) % 161, 40 + (k * 53) % 161
    img = Image.new("RGB", (side_w, side_h), (k * 9 % 256, 128, 200 - k))
    # Some texture, so that the entropy-coded data is not trivial.
    px = img.load()
    for y in range(0, side_h, 3):
        for x in range(0, side_w, 5):
            px[x, y] = ((x * y + k) % 256, (x + k) % 256, y % 256)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=90, subsampling=2)
    return buf.getvalue()


def _cut(data):
    """The same length, cut at two thirds and closed with an end marker,
    padded and closed again (the loader wants the file to end in one)."""
    keep = len(data) * 2 // 3
    return data[:keep] + b"\xff\xd9" + b"\x00" * (len(data) - keep - 4) + \
        b"\xff\xd9"


def _add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


@pytest.fixture()
def shard(tmp_path):
    path = tmp_path / "train-0.tar"
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
        for k in range(N):
            _add(t, "k%03d.jpg" % k, _jpeg(k))
            _add(t, "k%03d.cls" % k, b"%d" % k)
            if k == 10:
                _add(t, "zz.jpg", _cut(_jpeg(7)))
                _add(t, "zz.cls", b"%d" % BAD_LABEL)
    return path


def _epochs(path, n):
    with gpufeed.Loader(str(path), 5, device="cuda:0", seed=3,
                        on_error="skip",
                        transform=gpufeed.Resize(64)) as ld:
        labels = []
        for _ in range(n):
            labels.append(sorted(b for x in ld.batches() for b in x.label_list))
        return labels, ld.stats()


def _epoch(path):
    with gpufeed.Loader(str(path), 5, device="cuda:0", seed=3,
                        on_error="skip",
                        transform=gpufeed.Resize(64)) as ld:
        labels = []
        for b in ld.batches():
            labels.extend(b.label_list)
        return sorted(labels), ld.stats()


def _verify(path):
    cli = os.environ.get("GPUFEED")
    if not cli:
        pytest.skip("GPUFEED (the gpufeed CLI) is not set")
    r = subprocess.run([cli, "index", "--verify", "--force", str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r


def test_only_verified_bytes_reach_the_engines(shard):
    epochs, st = _epochs(shard, 2)
    if st["jpeg_gpu_backend"] == "":
        pytest.skip("no JPEG engines here: " + st["jpeg_gpu_why"])
    assert epochs == [list(range(N))] * 2
    assert st["skipped"] == 2
    # Unverified: each image judged by a CPU decode read whole in the first
    # epoch, the good ones on the engines in the second (the loader may run
    # ahead into a third: counts, not sets); the cut one failed each time
    # and never went to the engines.
    assert N <= st["jpeg_checked"] < 2 * N
    assert st["jpeg_check_failed"] >= 2
    assert st["jpeg_gpu_decoded"] >= N - 2
    assert st["jpeg_gpu_refused"] == 0

    r = _verify(shard)
    assert "member 'zz.jpg'" in r.stderr
    assert "%d images decoded and summed, 1 did not" % N in r.stdout
    labels, st = _epoch(shard)
    if st["jpeg_gpu_backend"] == "":
        pytest.skip("no JPEG engines here: " + st["jpeg_gpu_why"])
    assert labels == list(range(N))
    assert st["skipped"] == 1
    # The engines may decline an image at its header (then the CPU's),
    # and the loader may run ahead into the next epoch: counts, not sets.
    # Unverified, none went there; verified, all but a few.
    assert st["jpeg_gpu_decoded"] >= N - 2
    assert st["jpeg_cpu_decoded"] <= 2
    assert st["jpeg_gpu_refused"] == 0  # zz.jpg never went there
    assert st["jpeg_checked"] == 0  # the shard's sums vouch now

    # k005.jpg cut the same way after --verify, its size kept.
    with tarfile.open(shard) as t:
        m = t.getmember("k005.jpg")
    with open(shard, "r+b") as f:
        f.seek(m.offset_data)
        data = f.read(m.size)
        f.seek(m.offset_data)
        f.write(_cut(data))
    labels, st = _epoch(shard)
    assert labels == [k for k in range(N) if k != 5]
    assert st["skipped"] == 2
    assert st["jpeg_gpu_decoded"] >= N - 3
    assert st["jpeg_gpu_refused"] == 0  # k005.jpg never went there
