#!/usr/bin/env python3
"""Writes each tar shard's DALI v1.2 index beside it ("x.tar" -> "x.idx"),
computed with the standard library's tarfile (independently of gpufeed):
one line a sample, groups "<ext> <data offset> <size> <path>", the key
being the path up to the first '.' of its last component.

Usage: index_shards.py SHARD.tar...
"""
import sys
import tarfile


def index(name):
    lines, cur, ckey = [], [], None
    with tarfile.open(name) as t:
        for m in t.getmembers():
            if not m.isfile():
                continue
            base = m.name.rsplit("/", 1)[-1]
            if "." not in base:
                continue
            k = m.name[: len(m.name) - len(base)] + base.split(".", 1)[0]
            ext = base.split(".", 1)[1]
            if k != ckey and cur:
                lines.append(" ".join(cur))
                cur = []
            ckey = k
            cur += [ext, str(m.offset_data), str(m.size), m.name]
    if cur:
        lines.append(" ".join(cur))
    out = name[:-4] + ".idx" if name.endswith(".tar") else name + ".idx"
    with open(out, "w") as f:
        f.write("v1.2 %d\n" % len(lines))
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    for a in sys.argv[1:]:
        index(a)
