"""bench/train_torch.py in its CPU smoke mode: each feed trains two steps of
a ResNet-18 on small images and prints its JSON line; --check delivers every
sample once an epoch, alone and as two ranks (gloo, DistributedDataParallel)."""

import json
import os
import socket
import struct
import subprocess
import sys
import zlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "train_torch.py")
COUNT = 27   # not a multiple of the batch (4): a partial last batch; world 2 pads one


def _png(path, h, w, seed):
    rows = b"".join(b"\x00" + bytes((y * 3 + x * 5 + c * 70 + seed * 9) & 0xFF
                                    for x in range(w) for c in range(3)) for y in range(h))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("train_pngs")
    for i in range(COUNT):
        d = root / f"c{i % 2}"
        d.mkdir(exist_ok=True)
        _png(d / f"{i:03d}.png", 30 + i % 9, 34 + i % 7, i)
    return str(root)


SMOKE = ["--device", "cpu", "--model", "resnet18", "--size", "32", "--batch", "4",
         "--threads", "1"]


def _run(args, env=None, timeout=300):
    p = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True,
                       env=env, timeout=timeout)
    return p.returncode, [json.loads(line) for line in p.stdout.splitlines()
                          if line.startswith("{")], p.stderr


def test_each_feed_trains(folder):
    rc, lines, err = _run(["--source", folder, "--feed", "synthetic,gpufeed,dataloader,dlpack",
                           "--steps", "2", "--warmup", "1"] + SMOKE)
    assert rc == 0, err
    assert [d["feed"] for d in lines] == ["synthetic", "gpufeed", "dataloader", "dlpack"]
    for d in lines:
        assert d["wait"] == "sleep"
        assert d["steps"] == 2 and d["img_per_s"] > 0 and d["world"] == 1
        assert 0 <= d["gpu_data_wait_pct"] <= 100 and 0 <= d["host_data_wait_pct"] <= 100
        # each measured step's next(), in microseconds, under the wall time
        assert 0 < d["host_next_us_p50"] <= d["host_next_us_p99"]
        assert d["host_next_us_p99"] < 1e6 * d["steps"] * d["step_ms"] / 1e3
    assert "vs_synthetic" not in lines[0]
    for d in lines[1:]:
        assert d["vs_synthetic"] == pytest.approx(d["img_per_s"] / lines[0]["img_per_s"],
                                                  rel=0.05)   # both rounded


def test_dlpack_feed_and_spin_wait():
    """The dlpack feed (torch's own part of a handoff) needs no source; --wait
    spin is reported. The feed's tensors are imported from capsules each
    step: they view the synthetic batch, and training on them works."""
    rc, lines, err = _run(["--feed", "dlpack", "--wait", "spin", "--steps", "2",
                           "--warmup", "1"] + SMOKE)
    assert rc == 0, err
    (d,) = lines
    assert d["feed"] == "dlpack" and d["wait"] == "spin" and d["source"] is None
    assert d["steps"] == 2 and d["img_per_s"] > 0 and d["host_next_us_p50"] > 0
    rc, _, err = _run(["--feed", "dlpack", "--check"] + SMOKE)
    assert rc != 0 and "--check needs a real feed" in err


def test_check_one_rank(folder):
    for feed in ("gpufeed", "dataloader"):
        rc, lines, err = _run(["--source", folder, "--feed", feed, "--check", "--epochs", "2"]
                              + SMOKE)
        assert rc == 0, err
        (d,) = lines
        assert d["check"] is True and d["samples"] == COUNT
        assert [e["delivered"] for e in d["epochs"]] == [COUNT, COUNT]


@pytest.fixture(scope="module")
def jpeg_folder(tmp_path_factory):
    """A folder of JPEG files (torchvision's encoder), two classes."""
    tio = pytest.importorskip("torchvision.io")
    root = tmp_path_factory.mktemp("train_jpegs")
    g = torch.Generator().manual_seed(5)
    for i in range(COUNT):
        d = root / f"c{i % 2}"
        d.mkdir(exist_ok=True)
        x = torch.randint(0, 256, (3, 30 + i % 9, 34 + i % 7), generator=g,
                          dtype=torch.uint8)
        with open(d / f"{i:03d}.jpg", "wb") as f:
            f.write(bytes(tio.encode_jpeg(x, quality=90).tolist()))
    return str(root)


def test_check_jpeg_folder(jpeg_folder):
    """Both feeds take a folder of JPEG files: every sample once an epoch."""
    for feed in ("gpufeed", "dataloader"):
        rc, lines, err = _run(["--source", jpeg_folder, "--feed", feed, "--check",
                               "--epochs", "2"] + SMOKE)
        assert rc == 0, err
        (d,) = lines
        assert d["check"] is True and d["samples"] == COUNT
        assert [e["delivered"] for e in d["epochs"]] == [COUNT, COUNT]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ranks(world, args, timeout=300):
    """train_torch.py as `world` ranks of one job (what torchrun starts)."""
    port = str(_free_port())
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port, OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen(
            [sys.executable, SCRIPT] + args + SMOKE, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=timeout) for p in procs]
    assert [p.returncode for p in procs] == [0] * world, "".join(o[1] for o in outs)
    (d,) = [json.loads(line) for line in outs[0][0].splitlines() if line.startswith("{")]
    assert all(o[0].strip() == "" for o in outs[1:])   # only rank 0 prints
    return d


def test_check_two_ranks_ddp(folder, tmp_path):
    d = _ranks(2, ["--source", folder, "--feed", "gpufeed", "--check", "--epochs", "2"])
    assert d["check"] is True and d["world"] == 2
    for e in d["epochs"]:
        assert e["delivered"] == COUNT + 1 and e["missing"] == 0 and e["repeats"] == 1


@pytest.mark.parametrize("new_world", [2, 1])
def test_resume_two_ranks_into(folder, tmp_path, new_world):
    """A 2-rank job stopped after 2 steps (a checkpoint), resumed by a job of
    2 ranks (exact resume) or 1 (elastic): the interrupted epoch, both
    jobs together, delivers every sample once (with the old job's padding
    when the world size is the same), the next epoch is a fresh one."""
    state = str(tmp_path / "state.json")
    common = ["--source", folder, "--feed", "gpufeed", "--check", "--epochs", "2"]
    d = _ranks(2, common + ["--stop-after", "2", "--save", state])
    assert d["check"] is True and d["stopped_after"] == 2
    assert d["state_epoch"] == 0 and d["state_position"] == 2 * 2 * 4   # steps x world x batch
    with open(state) as f:
        saved = json.load(f)
    assert saved["world"] == 2 and sum(len(r) for r in saved["delivered"]) == 16
    d = _ranks(new_world, common + ["--resume", state]) if new_world > 1 else \
        _run(common + ["--resume", state] + SMOKE)[1][0]
    assert d["check"] is True, d
    assert d["world"] == new_world and d["resumed_from_world"] == 2
    first, second = d["epochs"]
    assert first["epoch"] == 0 and first["missing"] == 0
    assert first["repeats"] == (1 if new_world == 2 else 0)   # an elastic rest is not padded
    assert first["delivered"] == COUNT + first["repeats"]
    pad = -(-COUNT // new_world) * new_world - COUNT
    assert second["epoch"] == 1 and second["delivered"] == COUNT + pad and second["ok"]


def test_check_catches_a_lost_sample():
    """The exactly-once check itself fails on a missing or a repeated sample."""
    sys.path.insert(0, os.path.dirname(SCRIPT))
    try:
        import train_torch
    finally:
        sys.path.pop(0)
    ok, _ = train_torch.check_epochs([[[0, 1, 2]], [[3, 4, 5]]], 6, 2)
    assert ok
    ok, rep = train_torch.check_epochs([[[0, 1, 2]], [[3, 4, 4]]], 6, 2)
    assert not ok and rep[0]["missing"] == 1
    ok, rep = train_torch.check_epochs([[[0, 1, 2, 3]], [[4, 0, 1, 2]]], 5, 2)
    assert not ok and rep[0]["repeats"] == 3 and rep[0]["padding"] == 1
    ok, _ = train_torch.check_epochs([[[0, 1, 2]], [[3, 4, 0]]], 5, 2)   # one pad
    assert ok
    # a resumed epoch counts the interrupted job's deliveries with the new job's
    before = {"world": 2, "delivered": [[0, 2], [1, 3]]}
    ok, _ = train_torch.check_epochs([[[4, 5, 6]]], 7, 1, 0, before)
    assert ok
    ok, rep = train_torch.check_epochs([[[4, 5]]], 7, 1, 0, before)      # 6 lost
    assert not ok and rep[0]["missing"] == 1
    ok, rep = train_torch.check_epochs([[[4, 5, 6, 0]]], 7, 1, 0, before)  # elastic: no pad
    assert not ok and rep[0]["repeats"] == 1
