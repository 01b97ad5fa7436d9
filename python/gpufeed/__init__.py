"""gpufeed: an input pipeline that keeps GPUs fed with training data.

    loader = gpufeed.Loader("/data/train", batch_size=256, seed=0,
                            transform=gpufeed.RandomResizedCrop(224))
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for images, labels in loader:
            ...

The C library does the work (gpufeed._C); this package shapes it.
"""

from . import _C
from . import errors as _errors
from ._dist import distributed_defaults
from .errors import (BusyError, ConfigError, CorruptSampleError, DeviceError,
                     Error, IOError_, OutOfMemoryError, RemoteError,
                     SourceError, StateError)
from .loader import Loader, parse_bytes
from .transforms import (IMAGENET_MEAN, IMAGENET_STD, CenterCrop, Convert,
                         RandomCrop, RandomResizedCrop, Resize,
                         ResizeCenterCrop, Transform)

_C._set_error_factory(_errors._make)

__version__ = _C.version
Batch = _C.Batch


def __getattr__(name):
    """`gpufeed.torch` after a plain `import gpufeed` (PEP 562): the adapter
    is the one module that imports torch, so it is imported on first use,
    not by `import gpufeed`."""
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"torch"})

__all__ = ["Loader", "Batch", "Transform", "RandomResizedCrop",
           "ResizeCenterCrop", "Resize", "CenterCrop", "RandomCrop", "Convert",
           "IMAGENET_MEAN", "IMAGENET_STD", "Error", "CorruptSampleError",
           "SourceError", "ConfigError", "StateError", "OutOfMemoryError",
           "DeviceError", "BusyError", "RemoteError", "IOError_",
           "distributed_defaults",
           "parse_bytes", "__version__"]
