"""Shared fixtures: small PNG folders made once a session."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import pngdata  # noqa: E402

COUNT = 50
CLASSES = 3


@pytest.fixture(scope="session")
def folder(tmp_path_factory):
    """50 PNGs of 16x16 RGB in 3 class folders."""
    return pngdata.make_folder(str(tmp_path_factory.mktemp("png")), COUNT,
                               CLASSES)


@pytest.fixture(scope="session")
def varied(tmp_path_factory):
    """40 PNGs of varied sizes (20..47 x 18..41)."""
    return pngdata.make_folder(
        str(tmp_path_factory.mktemp("varied")), 40, 4,
        sizes=lambda i: (20 + (i * 7) % 28, 18 + (i * 5) % 24))


def collect(loader):
    """One epoch as lists: indices per batch, images, labels (copies)."""
    idx, imgs, labels = [], [], []
    for b in loader.batches():
        idx.append(list(b.indices))
        import torch
        imgs.append(torch.from_dlpack(b.images).clone())
        labels.append(torch.from_dlpack(b.labels).clone())
    return idx, imgs, labels
