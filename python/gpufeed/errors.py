"""gpufeed's exceptions: one class per kind of failure, each carrying the C
error's code, name, file, sample and message (gf_last_error()).

    Error                       every gpufeed failure
      CorruptSampleError        a bad sample or file content: GF_ECORRUPT,
                                GF_ETRUNCATED, GF_EDECODE, GF_ELIMIT,
                                GF_ESHAPE
      SourceError               the source is not usable: GF_EFORMAT,
                                GF_EVERSION, GF_EBADSOURCE
      ConfigError (ValueError)  a bad argument or config field: -EINVAL,
                                -ERANGE, GF_EUNSUPPORTED
        StateError              a resume state that does not fit: GF_ESTATE
      OutOfMemoryError (MemoryError)  -ENOMEM, GF_EDEVOOM
      DeviceError               GF_ECUDA, GF_ENODEVICE
      BusyError                 -EBUSY: the program holds every batch the
                                loader can lend (free some tensors)
      RemoteError               a server refused or failed a request
                                (GF_EREMOTE, after the retries), answered
                                other than asked (GF_EREPLY), or the object
                                changed while it was read (GF_ECHANGED)
      IOError_ (OSError)        any other negated errno from the system
                                (-ENOENT, -EACCES, -EIO, ...); .errno is set

``e.code`` is the negative C status, ``e.name`` its symbolic name
("GF_ECORRUPT", "ENOENT"), ``e.file`` the file concerned ("" when none),
``e.sample`` the sample index or None, ``e.message`` the C library's
sentence. ``str(e)`` is the message followed by the name.
"""

import errno as _errno

__all__ = ["Error", "CorruptSampleError", "SourceError", "ConfigError",
           "StateError", "OutOfMemoryError", "DeviceError", "BusyError",
           "RemoteError", "IOError_", "error_class"]


class Error(Exception):
    """A gpufeed failure (see the module's docstring for the subclasses)."""

    def __init__(self, message, code=-_errno.EINVAL, name=None, file="",
                 sample=None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.name = name if name is not None else _err_name(code)
        self.file = file
        self.sample = sample

    def __str__(self):
        return "%s [%s]" % (self.message, self.name)


class CorruptSampleError(Error):
    pass


class SourceError(Error):
    pass


class ConfigError(Error, ValueError):
    pass


class StateError(ConfigError):
    pass


class OutOfMemoryError(Error, MemoryError):
    pass


class DeviceError(Error):
    pass


class BusyError(Error):
    pass


class RemoteError(Error):
    pass


class IOError_(Error, OSError):
    def __init__(self, message, code=-_errno.EIO, name=None, file="",
                 sample=None):
        Error.__init__(self, message, code, name, file, sample)
        self.errno = -code
        self.strerror = message
        self.filename = file or None


_BY_NAME = {
    "GF_ECORRUPT": CorruptSampleError, "GF_ETRUNCATED": CorruptSampleError,
    "GF_EDECODE": CorruptSampleError, "GF_ELIMIT": CorruptSampleError,
    "GF_ESHAPE": CorruptSampleError,
    "GF_EFORMAT": SourceError, "GF_EVERSION": SourceError,
    "GF_EBADSOURCE": SourceError,
    "GF_EUNSUPPORTED": ConfigError, "EINVAL": ConfigError,
    "ERANGE": ConfigError,
    "GF_ESTATE": StateError,
    "ENOMEM": OutOfMemoryError, "GF_EDEVOOM": OutOfMemoryError,
    "GF_ECUDA": DeviceError, "GF_ENODEVICE": DeviceError,
    "EBUSY": BusyError,
    "GF_EREMOTE": RemoteError, "GF_EREPLY": RemoteError,
    "GF_ECHANGED": RemoteError,
    "GF_EINTERNAL": Error, "GF_EEPOCHEND": Error,
}


def _err_name(code):
    try:
        from . import _C
        return _C.err_name(code)
    except ImportError:  # pragma: no cover - only without the extension
        return str(code)


def error_class(code, name=None):
    """The exception class for C status `code` (negative)."""
    name = name or _err_name(code)
    cls = _BY_NAME.get(name)
    if cls is not None:
        return cls
    if -1000 < code < 0:
        return IOError_
    return Error


def _make(code, name, path, message, sample):
    """The factory the extension raises through."""
    cls = error_class(code, name)
    return cls(message, code=code, name=name, file=path, sample=sample)
