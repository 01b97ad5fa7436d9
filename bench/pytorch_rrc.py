#!/usr/bin/env python3
"""The PyTorch DataLoader peer of `gpufeed bench SRC --rrc 224 --dtype f16
--layout nchw --mean ... --std ...`: the usual training input pipeline on a
folder of PNG files of any size.

Worker processes read each file, decode it with torchvision's libpng binding
(decode_png, RGB), apply RandomResizedCrop(224, antialias=True) and
RandomHorizontalFlip (torchvision.transforms.v2; the v1 transforms where v2
is missing, as in old torchvision), and the DataLoader collates them into
pinned batches; the main process copies each batch to the GPU
(non_blocking), converts it to half and normalises it with ImageNet's mean
and std (pixel units), as gpufeed does there. Every image is decoded whole
(decode_png has no window decode).

usage: pytorch_rrc.py DIR [--workers N] [--batch N] [--epochs N] [--size N]
                      [--device cuda|cpu] [--limit N]
Prints one line per epoch and a final JSON line (images/s of the best epoch
in "best_img_per_s"). --device cpu (or no CUDA) runs it without a GPU, for
a smoke test; --limit N uses the first N files only.
"""
import argparse
import json
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset
from torchvision.io import ImageReadMode, decode_png, read_file

try:  # torchvision >= 0.15 (stable from 0.17): the transforms used today
    from torchvision.transforms import v2 as T

    TRANSFORMS = "v2"
except ImportError:  # older torchvision: the same transforms, v1
    from torchvision import transforms as T

    TRANSFORMS = "v1"

# ImageNet's normalisation in pixel units (0..255), as given to gpufeed
# bench --mean 123.675,116.28,103.53 --std 58.395,57.12,57.375.
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


class PngFolder(Dataset):
    def __init__(self, files, size):
        self.files = files
        self.tf = T.Compose([
            T.RandomResizedCrop(size, antialias=True),
            T.RandomHorizontalFlip(),
        ])

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        x = decode_png(read_file(self.files[i]), mode=ImageReadMode.RGB)
        return self.tf(x), i


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args()
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(a.dir)
                   for f in fs if f.lower().endswith(".png"))
    if a.limit:
        files = files[:a.limit]
    if len(files) < a.batch:
        raise SystemExit(f"pytorch_rrc: {len(files)} files, fewer than a batch of {a.batch}")
    cuda = a.device == "cuda" and torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    dl = DataLoader(PngFolder(files, a.size), batch_size=a.batch, shuffle=True,
                    num_workers=a.workers, pin_memory=cuda, drop_last=True,
                    persistent_workers=a.workers > 0,
                    prefetch_factor=4 if a.workers else None)
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1).half()
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1).half()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    best, epochs = 0.0, []
    for ep in range(a.epochs):
        sync()
        t0, n = time.perf_counter(), 0
        for x, _ in dl:
            x = x.to(dev, non_blocking=True)
            y = (x.half() - mean) / std
            assert y.shape == (x.shape[0], 3, a.size, a.size) and y.dtype == torch.float16
            n += x.shape[0]
        sync()
        dt = time.perf_counter() - t0
        best = max(best, n / dt)
        epochs.append(round(n / dt, 1))
        print(f"epoch {ep}: {n / dt:.0f} img/s ({n} images in {dt:.2f} s)", flush=True)
    print(json.dumps({"peer": "pytorch-dataloader-rrc", "transforms": TRANSFORMS,
                      "torch": torch.__version__, "device": dev.type,
                      "workers": a.workers, "batch": a.batch, "size": a.size,
                      "images": len(files), "epoch_img_per_s": epochs,
                      "best_img_per_s": round(best)}))


if __name__ == "__main__":
    main()
