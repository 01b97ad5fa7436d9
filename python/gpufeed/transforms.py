"""Transforms: what the loader makes of each batch (gf_transform; exact
arithmetic in docs/TRANSFORMS.md). mean/std are given in torchvision's
units (the image scaled to [0, 1]); the C library takes pixel units, so
they are multiplied by 255 here. Each transform's random choices are a
pure function of (seed, epoch, sample index); the seed is the loader's
unless one is given."""

__all__ = ["Transform", "RandomResizedCrop", "ResizeCenterCrop", "Resize",
           "CenterCrop", "RandomCrop", "Convert", "IMAGENET_MEAN",
           "IMAGENET_STD"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

# gf_out_dtype, gf_layout, gf_resize_mode
_DTYPES = {"uint8": 0, "u8": 0, "float32": 1, "f32": 1, "float": 1, "fp32": 1,
           "float16": 2, "f16": 2, "half": 2, "fp16": 2,
           "bfloat16": 3, "bf16": 3}
_LAYOUTS = {"NHWC": 0, "NCHW": 1}
_NONE, _RRC, _SHORTER_CENTER, _EXACT = 0, 1, 2, 3


def _config_error(msg):
    from .errors import ConfigError
    return ConfigError(msg)


def _dtype_code(dtype):
    if not isinstance(dtype, str):
        dtype = str(dtype)  # torch.bfloat16 -> "torch.bfloat16"
    key = dtype.lower()
    if key.startswith("torch."):
        key = key[len("torch."):]
    if key not in _DTYPES:
        raise _config_error("dtype %r: use uint8, float32, float16 or bfloat16"
                            % (dtype,))
    return _DTYPES[key]


def _size2(size, what="size"):
    if isinstance(size, int) and not isinstance(size, bool):
        h = w = size
    else:
        try:
            h, w = size
        except (TypeError, ValueError):
            raise _config_error("%s must be an int or (height, width), not %r"
                                % (what, size)) from None
    if not (isinstance(h, int) and isinstance(w, int)) or h <= 0 or w <= 0:
        raise _config_error("%s must be positive integers, not %r"
                            % (what, size))
    return h, w


def _channels(values, what):
    if values is None:
        return None
    try:
        vals = [float(v) for v in values]
    except TypeError:
        vals = [float(values)]
    if not 1 <= len(vals) <= 4:
        raise _config_error("%s takes 1 to 4 values, not %d" % (what, len(vals)))
    return vals


class Transform:
    """Base: output dtype, layout, normalisation and flip."""

    def __init__(self, *, dtype="float32", layout="NCHW", mean=None, std=None,
                 flip=False, seed=None):
        self.dtype = dtype
        self._dtype = _dtype_code(dtype)
        if layout not in _LAYOUTS:
            raise _config_error("layout %r: use 'NCHW' or 'NHWC'" % (layout,))
        self.layout = layout
        self.mean = _channels(mean, "mean")
        self.std = _channels(std, "std")
        if self.std is not None and any(s <= 0 for s in self.std):
            raise _config_error("std must be positive: %r" % (std,))
        if self._dtype == 0 and (self.mean is not None or self.std is not None):
            raise _config_error("mean/std need a float dtype (float32, float16, "
                                "bfloat16), not uint8")
        self.flip = bool(flip)
        self.seed = seed

    def _fields(self):
        return {}

    def to_c(self, loader_seed=0):
        """The gf_transform fields as a dict (C units)."""
        d = {"out_dtype": self._dtype, "layout": _LAYOUTS[self.layout],
             "hflip": int(self.flip),
             "seed": int(self.seed if self.seed is not None else loader_seed)}
        # One value applies to every channel.
        if self.mean is not None:
            m = self.mean * 4 if len(self.mean) == 1 else self.mean
            d["mean"] = [v * 255.0 for v in m]
        if self.std is not None:
            s = self.std * 4 if len(self.std) == 1 else self.std
            d["std"] = [v * 255.0 for v in s]
        d.update(self._fields())
        return d

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % (k, v) for k, v in vars(self).items()
            if not k.startswith("_")))


class RandomResizedCrop(Transform):
    """torchvision's RandomResizedCrop(size, scale, ratio) (+ flip)."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3), flip=True,
                 antialias=True, dtype="float32", layout="NCHW", mean=None,
                 std=None, seed=None):
        super().__init__(dtype=dtype, layout=layout, mean=mean, std=std,
                         flip=flip, seed=seed)
        self.size = _size2(size)
        self.scale = tuple(float(x) for x in scale)
        self.ratio = tuple(float(x) for x in ratio)
        if len(self.scale) != 2 or not 0 < self.scale[0] <= self.scale[1] <= 1:
            raise _config_error("scale must be (lo, hi) with 0 < lo <= hi <= 1, "
                                "not %r" % (scale,))
        if len(self.ratio) != 2 or not 0 < self.ratio[0] <= self.ratio[1]:
            raise _config_error("ratio must be (lo, hi) with 0 < lo <= hi, not "
                                "%r" % (ratio,))
        self.antialias = bool(antialias)

    def _fields(self):
        return {"resize": _RRC, "height": self.size[0], "width": self.size[1],
                "scale": list(self.scale), "ratio": list(self.ratio),
                "no_antialias": int(not self.antialias)}


class ResizeCenterCrop(Transform):
    """Evaluation: Resize(resize) (the shorter side) + CenterCrop(size);
    resize None: round(256 / 224 * height)."""

    def __init__(self, size=224, resize=None, antialias=True, flip=False,
                 dtype="float32", layout="NCHW", mean=None, std=None,
                 seed=None):
        super().__init__(dtype=dtype, layout=layout, mean=mean, std=std,
                         flip=flip, seed=seed)
        self.size = _size2(size)
        if resize is not None and (not isinstance(resize, int) or resize <= 0):
            raise _config_error("resize must be a positive int (the shorter "
                                "side), not %r" % (resize,))
        self.resize = resize
        self.antialias = bool(antialias)

    def _fields(self):
        return {"resize": _SHORTER_CENTER, "height": self.size[0],
                "width": self.size[1], "resize_size": self.resize or 0,
                "no_antialias": int(not self.antialias)}


class Resize(Transform):
    """Resize((height, width)) exactly."""

    def __init__(self, size, antialias=True, flip=False, dtype="float32",
                 layout="NCHW", mean=None, std=None, seed=None):
        super().__init__(dtype=dtype, layout=layout, mean=mean, std=std,
                         flip=flip, seed=seed)
        self.size = _size2(size)
        self.antialias = bool(antialias)

    def _fields(self):
        return {"resize": _EXACT, "height": self.size[0], "width": self.size[1],
                "no_antialias": int(not self.antialias)}


class CenterCrop(Transform):
    """A centered height x width window (zero-padded where the image is
    smaller)."""

    def __init__(self, size, flip=False, dtype="float32", layout="NCHW",
                 mean=None, std=None, seed=None):
        super().__init__(dtype=dtype, layout=layout, mean=mean, std=std,
                         flip=flip, seed=seed)
        self.size = _size2(size)

    def _fields(self):
        return {"resize": _NONE, "height": self.size[0], "width": self.size[1],
                "random_crop": 0}


class RandomCrop(Transform):
    """A random height x width window after `padding` zeros on each side."""

    def __init__(self, size, padding=0, flip=False, dtype="float32",
                 layout="NCHW", mean=None, std=None, seed=None):
        super().__init__(dtype=dtype, layout=layout, mean=mean, std=std,
                         flip=flip, seed=seed)
        self.size = _size2(size)
        if not isinstance(padding, int) or padding < 0:
            raise _config_error("padding must be an int >= 0, not %r"
                                % (padding,))
        self.padding = padding

    def _fields(self):
        return {"resize": _NONE, "height": self.size[0], "width": self.size[1],
                "random_crop": 1, "pad": self.padding}


class Convert(Transform):
    """No size change: dtype, layout, normalisation (and flip) only. The
    samples must share one size."""

    def __init__(self, dtype="float32", layout="NCHW", mean=None, std=None,
                 flip=False, seed=None):
        super().__init__(dtype=dtype, layout=layout, mean=mean, std=std,
                         flip=flip, seed=seed)
