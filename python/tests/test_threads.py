"""Threads: a consumer thread iterates while the main thread frees the
tensors it hands over (the views' deleters run on another thread than
the consumer), and several threads take turns on one loader."""

import queue
import threading

import gpufeed

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
