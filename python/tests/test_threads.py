"""Threads: a consumer thread iterates while the main thread frees the
tensors it hands over (the views' deleters run on another thread than
the consumer), several threads take turns on one loader, and the decode
workers' scheduling policy follows worker_sched."""

import os
import queue
import threading
import time

import gpufeed
import pytest

from conftest import COUNT


def test_iterate_in_thread_free_in_main(folder):
    loader = gpufeed.Loader(folder, 5, seed=4, device="cpu", prefetch=3,
                            transform=gpufeed.Convert(dtype="float32"))
    # At most: one batch queued, one the main thread holds, and the one
    # the consumer takes: prefetch 3.
    q = queue.Queue(maxsize=1)
    errors = []

    def consume():
        try:
            for epoch in range(20):
                loader.set_epoch(epoch)
                for images, labels in loader:
                    q.put((epoch, images, labels))
                    del images, labels
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            q.put(None)

    t = threading.Thread(target=consume)
    t.start()
    per_epoch = {}
    while True:
        item = q.get()
        if item is None:
            break
        epoch, images, labels = item
        assert images.shape == (5, 3, 16, 16)
        per_epoch[epoch] = per_epoch.get(epoch, 0) + images.shape[0]
        del item, images, labels  # freed here, on the main thread
    t.join()
    assert not errors, errors
    assert per_epoch == {e: COUNT for e in range(20)}
    assert loader.held_batches == 0


def test_threads_take_turns(folder):
    loader = gpufeed.Loader(folder, 2, seed=6, device="cpu", prefetch=4)
    got = []
    lock = threading.Lock()

    def worker():
        for _ in range(30):
            b = loader.next_batch()
            if b is None:
                continue
            with lock:
                got.append((b.epoch, b.index, tuple(b.indices)))
            b.release()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Every batch delivered once: no (epoch, index) twice.
    keys = [(e, i) for e, i, _ in got]
    assert len(keys) == len(set(keys))
    epoch0 = sorted(i for e, _, idx in got if e == 0 for i in idx)
    assert epoch0 == list(range(COUNT))
    assert loader.held_batches == 0
    s = loader.stats()
    assert s["batches"] == len(got)


def _new_thread_policies(before):
    """The scheduling policies of this process's threads not in before."""
    out = []
    for t in os.listdir("/proc/self/task"):
        if int(t) in before:
            continue
        try:
            out.append(os.sched_getscheduler(int(t)))
        except OSError:
            pass  # the thread ended meanwhile
    return out


@pytest.mark.parametrize("sched", ["batch", "normal"])
def test_worker_sched(folder, sched):
    before = {int(t) for t in os.listdir("/proc/self/task")}
    loader = gpufeed.Loader(folder, 5, device="cpu", num_workers=2,
                            worker_sched=sched)
    assert sum(b.count for b in loader.batches()) == COUNT
    # Each worker sets its policy as it starts; on a busy machine one may
    # start only after another has loaded the whole (small) epoch, so wait
    # for both. (io_uring's own worker threads may inherit the policy: at
    # least 2.) Under "normal" a worker that did not start yet would pass
    # anyway, but the one that loaded the epoch has started.
    deadline = time.monotonic() + 10
    while True:
        pol = _new_thread_policies(before)
        n = sum(p == os.SCHED_BATCH for p in pol)
        if sched != "batch" or n >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    loader.close()
    assert len(pol) >= 2
    assert n >= 2 if sched == "batch" else n == 0
