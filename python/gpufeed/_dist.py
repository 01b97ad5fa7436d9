"""Rank, world size and local rank from the environment a job runs in."""

import os
import sys

__all__ = ["distributed_defaults"]


def _env_int(name):
    v = os.environ.get(name)
    if v is None or v.strip() == "":
        return None
    try:
        return int(v)
    except ValueError:
        from .errors import ConfigError
        raise ConfigError("environment variable %s=%r is not an integer"
                          % (name, v)) from None


def distributed_defaults():
    """(rank, world_size, local_rank or None): from torch.distributed when
    it is initialised, else the RANK / WORLD_SIZE / LOCAL_RANK environment
    variables (torchrun's), else (0, 1, None). torch is not imported for
    this: if the program has not imported it, it cannot have initialised a
    process group."""
    local = _env_int("LOCAL_RANK")
    torch = sys.modules.get("torch")
    if torch is not None:
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size(), local
    rank = _env_int("RANK")
    world = _env_int("WORLD_SIZE")
    return (rank if rank is not None else 0,
            world if world is not None else 1, local)
