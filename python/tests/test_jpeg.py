"""A folder of JPEG files (mixed with a PNG) read by gpufeed.Loader in host
mode under RandomResizedCrop: every sample once an epoch in the asked
shape and dtype, the JPEG statistics in loader.stats(), jpeg_scale=False
reaching the C config (no reduced scale used) and giving the same batches
every run. The JPEG files come from `gpufeed synth --format jpeg` (the CLI
the build made, $GPUFEED); the test skips without it."""

import os
import subprocess

import gpufeed
import pytest
import torch

import pngdata

COUNT = 36


@pytest.fixture(scope="module")
def jpeg_folder(tmp_path_factory):
    cli = os.environ.get("GPUFEED")
    if not cli or not os.access(cli, os.X_OK):
        pytest.skip("GPUFEED (the gpufeed CLI) is not set")
    root = str(tmp_path_factory.mktemp("jpeg"))
    subprocess.run([cli, "synth", root, "--format", "jpeg", "--quality", "90",
                    "--count", str(COUNT), "--sizes", "60-300", "--classes",
                    "3", "--quiet"], check=True)
    # One PNG among them: a mixed folder.
    with open(os.path.join(root, "class_000", "zz_one.png"), "wb") as f:
        f.write(pngdata.png_bytes(pngdata.image_pixels(7, 40, 50), 40, 50))
    return root


def test_rrc_reads_every_jpeg_once(jpeg_folder):
    loader = gpufeed.Loader(
        jpeg_folder, 8, device="cpu", seed=3, num_workers=2, channels=3,
        transform=gpufeed.RandomResizedCrop(32, dtype="float16",
                                            mean=gpufeed.IMAGENET_MEAN,
                                            std=gpufeed.IMAGENET_STD))
    assert loader.num_samples == COUNT + 1
    loader.set_epoch(0)
    n = 0
    for images, labels in loader:
        assert images.shape[1:] == (3, 32, 32)
        assert images.dtype == torch.float16
        assert torch.isfinite(images.float()).all()
        n += images.shape[0]
    del images, labels  # the last batch back to the loader
    assert n == COUNT + 1
    loader.set_epoch(1)
    seen = []
    for b in loader.batches():
        seen.extend(int(i) for i in b.indices)
        b.release()
    assert sorted(seen) == list(range(COUNT + 1))
    st = loader.stats()
    assert len(st["jpeg_decoded"]) == 4
    assert sum(st["jpeg_decoded"]) >= 2 * COUNT
    # Windows and reduced scales: fewer pixels decoded than the images hold.
    assert 0 < st["jpeg_pixels_decoded"] < st["jpeg_pixels_full"]
    assert sum(st["jpeg_decoded"][1:]) > 0


def test_jpeg_scale_off(jpeg_folder):
    def batches(scale):
        loader = gpufeed.Loader(
            jpeg_folder, 8, device="cpu", seed=5, jpeg_scale=scale, channels=3,
            transform=gpufeed.RandomResizedCrop(32, dtype="uint8"))
        out = [torch.from_dlpack(b.images).clone() for b in loader.batches()]
        return out, loader.stats()

    off, st_off = batches(False)
    off2, _ = batches(False)
    on, st_on = batches(True)
    assert sum(st_off["jpeg_decoded"][1:]) == 0
    assert sum(st_on["jpeg_decoded"][1:]) > 0
    assert all(torch.equal(a, b) for a, b in zip(off, off2))
    assert len(on) == len(off)
    # Close, not equal: the DCT-scaled windows (docs/TRANSFORMS.md).
    diff = torch.cat([(a.int() - b.int()).abs().flatten()
                      for a, b in zip(on, off)]).float()
    assert 0 < diff.mean().item() < 8
