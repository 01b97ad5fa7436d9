#!/usr/bin/env python3
"""The webdataset library's own loader as the peer of gpufeed over tar shards
(bench/wds_bench.sh): webdataset.WebDataset with shard shuffling and a
shuffle buffer (shardshuffle=100, .shuffle(1000, initial=100), webdataset's
defaults for training), split by node and worker, the image (jpg, jpeg or
png) decoded by torchvision and RandomResizedCrop(SIZE) + flip applied, the
label from cls; a torch DataLoader of WORKERS workers. The same recipe as
../shared/peers/pytorch_wds.py, which writes it out with the standard
library where webdataset is missing.

usage: wds_peer.py SHARD_PATTERN [--workers N] [--batch N] [--epochs N]
                   [--size S]
Prints one line per epoch and a final JSON line.
"""
import argparse
import json
import os
import time

import torch
import webdataset as wds
from torch.utils.data import DataLoader
from torchvision.io import ImageReadMode, decode_jpeg, decode_png
try:
    from torchvision.transforms import v2
except ImportError:
    from torchvision import transforms as v2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shards")
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--size", type=int, default=224)
    a = ap.parse_args()
    aug = v2.Compose([v2.RandomResizedCrop(a.size, antialias=True),
                      v2.RandomHorizontalFlip()])

    def decode(sample):
        img, cls = sample
        t = torch.frombuffer(bytearray(img), dtype=torch.uint8)
        x = (decode_png(t, ImageReadMode.RGB) if img[:4] == b"\x89PNG"
             else decode_jpeg(t, mode=ImageReadMode.RGB))
        return aug(x), int(cls)

    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    best = 0.0
    for ep in range(a.epochs):
        ds = (wds.WebDataset(a.shards, shardshuffle=100, seed=ep,
                             nodesplitter=wds.split_by_node,
                             workersplitter=wds.split_by_worker)
              .shuffle(1000, initial=100)
              .to_tuple("jpg;jpeg;png", "cls")
              .map(decode))
        dl = DataLoader(ds, batch_size=a.batch, num_workers=a.workers,
                        pin_memory=cuda, drop_last=True,
                        prefetch_factor=4 if a.workers > 0 else None)
        t0 = time.perf_counter()
        n = 0
        for x, _ in dl:
            x = (x.to(dev, non_blocking=True).float() - mean) / std
            n += x.shape[0]
        if cuda:
            torch.cuda.synchronize()
        rate = n / (time.perf_counter() - t0)
        best = max(best, rate)
        print("epoch %d: %d images, %.0f images/s" % (ep + 1, n, rate),
              flush=True)
    print(json.dumps({"peer": "webdataset", "version": getattr(wds, "__version__", "?"),
                      "workers": a.workers, "batch": a.batch, "size": a.size,
                      "best_img_per_s": round(best)}))


if __name__ == "__main__":
    main()
