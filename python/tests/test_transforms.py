"""Transforms reach the C library as asked: shapes, dtypes, layouts, the
mean/std units (torchvision's [0, 1] scale -> pixel units), and the
random ones reproducible from their seed."""

import gpufeed
import pytest
import torch

import pngdata


def _first(source, transform, n=4, **kw):
    loader = gpufeed.Loader(source, n, shuffle=False, device="cpu",
                            transform=transform, **kw)
    b = loader.next_batch()
    return torch.from_dlpack(b.images).clone(), list(b.indices)


def _pixels(i, h=16, w=16):
    """Sample file i's pixels as a [3, h, w] uint8 tensor (CHW)."""
    raw = pngdata.image_pixels(i, h, w)
    return torch.tensor(list(raw), dtype=torch.uint8).reshape(h, w, 3).permute(2, 0, 1)


def _file_index(folder, loader_index):
    loader = gpufeed.Loader(folder, 1, shuffle=False, device="cpu")
    name = loader.sample_path(loader_index)
    return int(name.split("img")[1][:5])


def test_convert_mean_std_in_torchvision_units(folder):
    mean, std = (0.5, 0.25, 0.125), (0.5, 0.2, 0.1)
    out, idx = _first(folder, gpufeed.Convert(dtype="float32", mean=mean, std=std))
    assert out.shape == (4, 3, 16, 16) and out.dtype == torch.float32
    for k in range(4):
        px = _pixels(_file_index(folder, idx[k])).float() / 255.0
        want = (px - torch.tensor(mean).view(3, 1, 1)) / torch.tensor(std).view(3, 1, 1)
        assert torch.allclose(out[k], want, atol=1e-4), k


def test_uint8_nhwc_is_the_pixels(folder):
    out, idx = _first(folder, gpufeed.Convert(dtype="uint8", layout="NHWC"))
    assert out.shape == (4, 16, 16, 3) and out.dtype == torch.uint8
    for k in range(4):
        assert torch.equal(out[k].permute(2, 0, 1), _pixels(_file_index(folder, idx[k])))


@pytest.mark.parametrize("dtype, torch_dtype", [
    ("float16", torch.float16), ("bfloat16", torch.bfloat16),
    (torch.bfloat16, torch.bfloat16), ("bf16", torch.bfloat16)])
def test_half_dtypes(folder, dtype, torch_dtype):
    out, idx = _first(folder, gpufeed.Convert(dtype=dtype))
    assert out.dtype == torch_dtype
    px = _pixels(_file_index(folder, idx[0])).float()
    assert torch.allclose(out[0].float(), px, rtol=1e-2, atol=0.5)


def test_sizes(varied):
    cases = [(gpufeed.RandomResizedCrop(12), (12, 12)),
             (gpufeed.RandomResizedCrop((10, 14)), (10, 14)),
             (gpufeed.ResizeCenterCrop(16, resize=18), (16, 16)),
             (gpufeed.Resize((9, 11)), (9, 11)),
             (gpufeed.CenterCrop(10), (10, 10)),
             (gpufeed.RandomCrop(12, padding=2, flip=True), (12, 12))]
    for t, hw in cases:
        out, _ = _first(varied, t)
        assert tuple(out.shape) == (4, 3) + hw, t


def test_random_resized_crop_reproducible(varied):
    t = gpufeed.RandomResizedCrop(16, dtype="float32", mean=gpufeed.IMAGENET_MEAN,
                                  std=gpufeed.IMAGENET_STD)
    a, _ = _first(varied, t, n=8, seed=3)
    b, _ = _first(varied, t, n=8, seed=3, num_workers=1)
    assert torch.equal(a, b)
    c, _ = _first(varied, gpufeed.RandomResizedCrop(16, dtype="float32", mean=gpufeed.IMAGENET_MEAN,
                                                    std=gpufeed.IMAGENET_STD, seed=99), n=8, seed=3)
    assert not torch.equal(a, c)


def test_ragged_batch_without_transform(varied):
    loader = gpufeed.Loader(varied, 4, shuffle=False, device="cpu")
    b = loader.next_batch()
    with pytest.raises(BufferError):
        b.images.__dlpack__()
    assert torch.from_dlpack(b.labels).shape == (4,)
