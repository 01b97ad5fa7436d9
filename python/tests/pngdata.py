"""Test data: PNG folders written here (zlib + struct, no image library), in
the ImageFolder convention (one sub-folder a class)."""

import os
import struct
import zlib


def png_bytes(pixels, height, width, channels=3):
    """An 8-bit PNG of `pixels` (bytes, HWC)."""
    color = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    rows = b"".join(b"\x00" + pixels[y * width * channels:(y + 1) * width * channels]
                    for y in range(height))

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data +
                struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" +
            chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b""))


def image_pixels(i, height, width, channels=3):
    """Sample i's pixels: a pattern that differs from sample to sample."""
    return bytes(((i * 31 + y * 7 + x * 3 + c * 11) & 0xFF)
                 for y in range(height) for x in range(width)
                 for c in range(channels))


def make_folder(root, count, classes=3, size=(16, 16), sizes=None):
    """count PNGs spread over `classes` class folders; file i is
    c{i % classes}/img{i:05d}.png. sizes: a function i -> (h, w)."""
    os.makedirs(root, exist_ok=True)
    for c in range(classes):
        os.makedirs(os.path.join(root, "class%d" % c), exist_ok=True)
    for i in range(count):
        h, w = sizes(i) if sizes else size
        path = os.path.join(root, "class%d" % (i % classes), "img%05d.png" % i)
        with open(path, "wb") as f:
            f.write(png_bytes(image_pixels(i, h, w), h, w))
    return root
