#!/usr/bin/env python3
"""WebDataset interop, the webdataset library's side (PyPI webdataset,
imported by the python running this; tests/cli_wds_interop.sh).

  interop.py write DIR   shards written by webdataset's own ShardWriter
                         (DIR/wds-%06d.tar) and by GNU tar (DIR/gnu.tar,
                         DIR/pax.tar: long names, a dotted folder, upper-case
                         extensions, a link, a name without a dot, metadata)
  interop.py read SHARD...   what webdataset's reader yields, one JSON line
                         a sample: key, fields (sorted), the cls label (-1
                         without), the image field (jpg, jpeg or png; null
                         without one, or with two) and the image's
                         zlib.crc32
"""
import json
import os
import struct
import subprocess
import sys
import zlib

import webdataset as wds

IMAGE_FIELDS = ("jpg", "jpeg", "png")


def png(v, w=6, h=5):
    """A gray PNG of w x h pixels of value v (stdlib only)."""
    raw = b"".join(b"\0" + bytes([v % 256]) * w for _ in range(h))

    def chunk(t, d):
        c = struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
        return struct.pack(">I", len(d)) + t + d + c
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def write(out):
    os.makedirs(out, exist_ok=True)
    with wds.ShardWriter(os.path.join(out, "wds-%06d.tar"), maxcount=7, verbose=0) as sink:
        for k in range(20):
            key = ("dir.v%d/k%04d" % (k % 2, k)) if k % 3 == 0 else "s%04d" % k
            sample = {"__key__": key, "png": png(k), "cls": str(k % 5).encode(),
                      "txt": ("caption %d" % k).encode(), "json": json.dumps({"k": k}).encode()}
            if k == 4:
                sample["seg.png"] = png(200)  # a field with a dot in it
            sink.write(sample)
    # GNU tar: a tree written member by member in a chosen order.
    tree = os.path.join(out, "tree")
    names = []

    def put(name, data):
        p = os.path.join(tree, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        names.append(name)
    deep = "d" * 60 + "/" + "e" * 60
    put(deep + "/long%s.png" % ("x" * 30), png(50))
    put(deep + "/long%s.cls" % ("x" * 30), b"3")
    put("up/a1.JPG", b"\xff\xd8\xff\xe0not really a jpeg")  # upper-case ext
    put("up/a1.CLS", b" 4\n")
    put("noext/README", b"no dot: dropped")
    put("__meta__/info.txt", b"metadata: dropped")
    put("v.1/b2.png", png(60))
    put("v.1/b2.cls", b"1")
    put("v.1/b2.seg.png", png(61))
    os.symlink("b2.png", os.path.join(tree, "v.1/b3.png"))
    names.append("v.1/b3.png")
    put("c3.png", png(70))
    put("c3.txt", b"no label")
    subprocess.run(["tar", "--format=gnu", "-cf", os.path.join(out, "gnu.tar"),
                    "-C", tree, "--no-recursion"] + names, check=True)
    put("pax\u00e9/k\u00e9.png", png(80))
    put("pax\u00e9/k\u00e9.cls", b"2")
    subprocess.run(["tar", "--format=pax", "-cf", os.path.join(out, "pax.tar"),
                    "-C", tree, "--no-recursion",
                    "pax\u00e9/k\u00e9.png", "pax\u00e9/k\u00e9.cls", deep + "/long%s.png" % ("x" * 30)],
                   check=True)


def read(shards):
    ds = wds.WebDataset(shards, shardshuffle=False, empty_check=False)
    for s in ds:
        fields = sorted(k for k in s if not k.startswith("__"))
        imgs = [f for f in fields if f in IMAGE_FIELDS]
        label = -1
        if "cls" in s:
            label = int(s["cls"])
        img = imgs[0] if len(imgs) == 1 else None
        print(json.dumps({"key": s["__key__"], "fields": fields, "label": label,
                          "image_field": img,
                          "image_crc32": zlib.crc32(s[img]) if img else None}))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    elif sys.argv[1] == "read":
        read(sys.argv[2:])
    else:
        sys.exit("usage: interop.py write DIR | read SHARD...")
