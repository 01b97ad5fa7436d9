#!/usr/bin/env python3
"""Packs an ImageFolder into WebDataset tar shards with the standard
library's tarfile (a writer no one here wrote), and writes each shard's
DALI v1.2 index beside it (index_shards.py), computed independently of
gpufeed.

Usage: pack_shards.py FOLDER OUT PER_SHARD [--no-index] [--format gnu|pax|ustar]

Sample i (the folder's files in sorted order) has key
"<class>/<stem>", members "<key>.jpg|png" (the file), "<key>.cls" (the class
index in sorted class order) and "<key>.txt". Prints one line per sample:
"<shard> <key> <label> <sha256 of the image>".
"""
import hashlib
import io
import os
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import index_shards  # noqa: E402


def main():
    folder, out, per = sys.argv[1], sys.argv[2], int(sys.argv[3])
    index = "--no-index" not in sys.argv
    fmt = tarfile.GNU_FORMAT
    if "--format" in sys.argv:
        fmt = {"gnu": tarfile.GNU_FORMAT, "pax": tarfile.PAX_FORMAT,
               "ustar": tarfile.USTAR_FORMAT}[sys.argv[sys.argv.index("--format") + 1]]
    classes = sorted(d for d in os.listdir(folder)
                     if os.path.isdir(os.path.join(folder, d)))
    files = []
    for c, cls in enumerate(classes):
        for f in sorted(os.listdir(os.path.join(folder, cls))):
            files.append((c, cls, f))
    os.makedirs(out, exist_ok=True)
    for s in range(0, len(files), per):
        name = os.path.join(out, "shard-%06d.tar" % (s // per))
        with tarfile.open(name, "w", format=fmt) as t:
            for c, cls, f in files[s:s + per]:
                stem, ext = os.path.splitext(f)
                key = "%s/%s" % (cls, stem)
                data = open(os.path.join(folder, cls, f), "rb").read()
                for field, payload in ((ext[1:].lower(), data),
                                       ("cls", b"%d" % c),
                                       ("txt", b"a picture of " + cls.encode())):
                    ti = tarfile.TarInfo("%s.%s" % (key, field))
                    ti.size = len(payload)
                    t.addfile(ti, io.BytesIO(payload))
                print(os.path.basename(name), key, c,
                      hashlib.sha256(data).hexdigest())
        if index:
            index_shards.index(name)


main()
