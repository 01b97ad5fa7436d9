"""Ctrl-C while next() waits for a slow batch raises KeyboardInterrupt
promptly (the wait is sliced and signals are checked between slices, with
the GIL released meanwhile), and the loader is usable afterwards."""

import os
import signal
import threading
import time

import gpufeed
import pytest

import pngdata

SIDE = 1200
BATCH = 48


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    """48 links to one 1200x1200 noise PNG: a batch takes one worker about
    a second to decode and resize."""
    root = tmp_path_factory.mktemp("slow")
    (root / "a").mkdir()
    first = root / "a" / "img000.png"
    first.write_bytes(pngdata.png_bytes(os.urandom(SIDE * SIDE * 3), SIDE, SIDE))
    for i in range(1, BATCH):
        os.link(first, root / "a" / ("img%03d.png" % i))
    return str(root)


def test_ctrl_c_interrupts_a_wait(slow):
    loader = gpufeed.Loader(slow, BATCH, num_workers=1, prefetch=1,
                            device="cpu", transform=gpufeed.RandomResizedCrop(8))
    sent = []
    ticks = []  # the tick thread's clock readings
    ticking = threading.Event()

    def interrupt():
        time.sleep(0.1)
        sent.append(time.monotonic())
        signal.raise_signal(signal.SIGINT)  # Python handles it on the main thread

    def tick():
        # Another Python thread runs while next() waits: the GIL is free.
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            ticks.append(time.monotonic())
            ticking.set()
            time.sleep(0.01)

    ticker = threading.Thread(target=tick)
    ticker.start()
    ticking.wait()
    timer = threading.Thread(target=interrupt)
    t0 = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        loader.next_batch()
    caught = time.monotonic()
    timer.join()
    ticker.join()
    assert loader.stats()["batches"] == 0, "the batch came before the signal"
    # Interrupted within a few slices, long before the batch was ready.
    assert caught - sent[0] < 0.5, caught - sent[0]
    # The tick thread ran during the wait (about 10 ticks in its 0.1 s; a
    # wait holding the GIL would leave none between the call and the catch).
    during = [t for t in ticks if t0 < t < caught]
    assert len(during) >= 2, (len(during), len(ticks))
    # Still usable: the same first batch comes, whole.
    b = loader.next_batch()
    assert b.index == 0 and b.count == BATCH
    assert time.monotonic() - t0 > 0.3
