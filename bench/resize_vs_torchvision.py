#!/usr/bin/env python3
"""gpufeed's resize against torchvision's on the same image and window.

    python3 bench/resize_vs_torchvision.py BUILD_DIR IMAGES_DIR [--count N]

For up to N (default 36) PNG files of IMAGES_DIR (sorted), each read as RGB
uint8 by torchvision.io.read_image, two transforms are compared:
  rrc:  RandomResizedCrop(224) + flip: gpufeed chooses the window
        (gf_xform_window, printed by BUILD_DIR/bench/resize_ref) and
        torchvision applies that window: resized_crop(img, top, left, h, w,
        [224, 224], antialias=True), then hflip when flipped;
  eval: resize(img, 256, antialias=True) then center_crop(img, [224, 224]).
gpufeed's CPU reference and (when the device is there) its GPU kernel each
give a uint8 output and an f32 output normalised with ImageNet's mean/std;
the f32 one is converted back to pixel units (x * std + mean). Printed, per
transform: max and mean absolute difference in pixel units of
  u8  GPU vs CPU reference; ours vs torchvision (uint8 image resized by the
      v1 functional API, which resizes in float and rounds once); ours vs
      torchvision.transforms.v2 (torch's native uint8 path: fixed point
      with a uint8 intermediate, the arithmetic ours follows; when
      torchvision has v2, 0.16 and later);
  f32 GPU vs CPU reference; ours vs torchvision's uint8 recipe (resize the
      uint8 image, then convert); ours vs torchvision resizing the float
      image (no rounding: what the u8 step costs).
Exits 1 when GPU and CPU differ at all or ours and either torchvision uint8
output differ by more than 1 pixel unit anywhere; 0 otherwise.
Uses only APIs present in torchvision 0.14 to 0.26 (v1 functional; v2 where
present).
"""
import os
import subprocess
import sys
import tempfile

import torch
import torchvision.transforms.functional as F
from torchvision.io import ImageReadMode, read_image

try:  # torchvision 0.16 and later
    import torchvision.transforms.v2.functional as F2
except ImportError:
    F2 = None

MEAN = torch.tensor([123.675, 116.28, 103.53]).view(3, 1, 1)
STD = torch.tensor([58.395, 57.12, 57.375]).view(3, 1, 1)
OUT = 224


def load(path, shape, dtype):
    if not os.path.exists(path):
        return None
    t = torch.frombuffer(bytearray(open(path, "rb").read()), dtype=dtype)
    return t.reshape(shape).clone()


class Stat:
    def __init__(self):
        self.mx = 0.0
        self.sum = 0.0
        self.n = 0

    def add(self, a, b):
        d = (a.double() - b.double()).abs()
        self.mx = max(self.mx, float(d.max()))
        self.sum += float(d.sum())
        self.n += d.numel()

    def __str__(self):
        if not self.n:
            return "      n/a"
        return "max %6.3f mean %8.5f" % (self.mx, self.sum / self.n)


def main():
    args = sys.argv[1:]
    count = 36
    if "--count" in args:
        i = args.index("--count")
        count = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build, images = args
    tool = os.path.join(build, "bench", "resize_ref")
    # The folder and its subfolders (an ImageFolder from synth --sizes).
    files = sorted(os.path.relpath(os.path.join(r, f), images)
                   for r, _, fs in os.walk(images) for f in fs
                   if f.lower().endswith(".png"))
    files = files[::max(1, len(files) // count)][:count]
    if not files:
        print("no PNG files in %s" % images, file=sys.stderr)
        return 2
    names = ["u8 gpu-cpu", "u8 ours-tv", "u8 ours-tv2", "f32 gpu-cpu",
             "f32 ours-tv(u8)", "f32 ours-tv(float)"]
    stats = {m: {k: Stat() for k in names} for m in ("rrc", "eval")}
    with tempfile.TemporaryDirectory() as tmp:
        for idx, name in enumerate(files):
            img = read_image(os.path.join(images, name), ImageReadMode.RGB)
            c, h, w = img.shape
            raw = os.path.join(tmp, "img.raw")
            with open(raw, "wb") as f:
                f.write(img.permute(1, 2, 0).contiguous().numpy().tobytes())
            for mode in ("rrc", "eval"):
                for fn in ("cpu_u8.raw", "cpu_f32.raw", "gpu_u8.raw",
                           "gpu_f32.raw"):
                    p = os.path.join(tmp, fn)
                    if os.path.exists(p):
                        os.unlink(p)
                subprocess.run([tool, mode, str(OUT), str(OUT), "2024",
                                str(idx), str(h), str(w), raw, tmp],
                               check=True)
                y, x, wh, ww, rsh, rsw, offy, offx, flip = map(
                    int, open(os.path.join(tmp, "win.txt")).read().split())
                imgf = img.float()
                if mode == "rrc":
                    tv = F.resized_crop(img, y, x, wh, ww, [OUT, OUT],
                                        antialias=True)
                    tvf = F.resized_crop(imgf, y, x, wh, ww, [OUT, OUT],
                                         antialias=True)
                    tv2 = None if F2 is None else F2.resized_crop(
                        img, y, x, wh, ww, [OUT, OUT], antialias=True)
                    if flip:
                        tv, tvf = F.hflip(tv), F.hflip(tvf)
                        tv2 = None if tv2 is None else F2.horizontal_flip(tv2)
                else:
                    size = round(OUT * 256 / 224)
                    tv = F.center_crop(F.resize(img, size, antialias=True),
                                       [OUT, OUT])
                    tvf = F.center_crop(F.resize(imgf, size, antialias=True),
                                        [OUT, OUT])
                    tv2 = None if F2 is None else F2.center_crop(
                        F2.resize(img, [size], antialias=True), [OUT, OUT])
                s = stats[mode]
                cu8 = load(os.path.join(tmp, "cpu_u8.raw"), (OUT, OUT, 3),
                           torch.uint8).permute(2, 0, 1)
                gu8 = load(os.path.join(tmp, "gpu_u8.raw"), (OUT, OUT, 3),
                           torch.uint8)
                cf = load(os.path.join(tmp, "cpu_f32.raw"), (3, OUT, OUT),
                          torch.float32)
                gf = load(os.path.join(tmp, "gpu_f32.raw"), (3, OUT, OUT),
                          torch.float32)
                s["u8 ours-tv"].add(cu8, tv)
                if tv2 is not None:
                    s["u8 ours-tv2"].add(cu8, tv2)
                cpx = cf.double() * STD.double() + MEAN.double()
                s["f32 ours-tv(u8)"].add(cpx, tv)
                s["f32 ours-tv(float)"].add(cpx, tvf)
                if gu8 is not None:
                    s["u8 gpu-cpu"].add(gu8.permute(2, 0, 1), cu8)
                if gf is not None:
                    gpx = gf.double() * STD.double() + MEAN.double()
                    s["f32 gpu-cpu"].add(gpx, cpx)
    print("%d images from %s, 224x224, torch %s, torchvision %s" %
          (len(files), images, torch.__version__,
           __import__("torchvision").__version__))
    ok = True
    for mode in ("rrc", "eval"):
        for k in names:
            print("%-5s %-19s %s" % (mode, k, stats[mode][k]))
        if stats[mode]["u8 gpu-cpu"].n and stats[mode]["u8 gpu-cpu"].mx:
            ok = False
        if stats[mode]["f32 gpu-cpu"].n and stats[mode]["f32 gpu-cpu"].mx:
            ok = False
        if stats[mode]["u8 ours-tv"].mx > 1:
            ok = False
        if stats[mode]["u8 ours-tv2"].mx > 1:
            ok = False
    print("PASS" if ok else "FAIL: beyond the stated tolerance (GPU = CPU "
          "exactly; ours vs torchvision u8, v1 and v2, at most 1)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
