"""GPU mode (needs torch with CUDA; skipped without it, a failure with
GPUFEED_REQUIRE_GPU=1): exactly-once, zero-copy on the device, the stream
race (a tensor freed in Python while a kernel that reads it is queued must
not see its memory reused by the loader running ahead), torch's allocator
untouched by gpufeed's pool, device memory back after close()."""

import gc
import os

import gpufeed
import pytest

torch = pytest.importorskip("torch")

if not torch.cuda.is_available():
    if os.environ.get("GPUFEED_REQUIRE_GPU") == "1":
        pytest.fail("GPUFEED_REQUIRE_GPU=1 but torch sees no CUDA device",
                    pytrace=False)
    pytest.skip("torch sees no CUDA device", allow_module_level=True)

from conftest import COUNT  # noqa: E402


def _loader(source, device="cuda:0", **kw):
    kw.setdefault("transform", gpufeed.Convert(dtype="float32"))
    kw.setdefault("seed", 5)
    return gpufeed.Loader(source, 8, device=device, **kw)


def test_exactly_once_on_the_device(folder):
    loader = _loader(folder)
    assert loader.device == "cuda:0"
    for epoch in range(2):
        loader.set_epoch(epoch)
        seen = []
        for b in loader.batches():
            seen.extend(b.indices)
            labels = torch.from_dlpack(b.labels)
            assert labels.device.type == "cuda"
            assert labels.cpu().tolist() == list(b.label_list)
            del labels
        assert sorted(seen) == list(range(COUNT))


def test_tensors_are_the_device_batch(folder):
    loader = _loader(folder)
    b = loader.next_batch(stream=torch.cuda.current_stream().cuda_stream or 1)
    assert b.on_device
    images = torch.from_dlpack(b.images)
    labels = torch.from_dlpack(b.labels)
    assert images.device == torch.device("cuda", 0)
    assert images.data_ptr() == b.images_ptr
    assert labels.data_ptr() == b.labels.data_ptr
    assert b.images.__dlpack_device__() == (2, 0)
    for s in (None, 1, 2, -1, torch.cuda.Stream().cuda_stream):
        cap = b.images.__dlpack__(stream=s, max_version=(1, 0))
        assert "dltensor_versioned" in repr(cap)
        del cap
    with pytest.raises(ValueError):
        b.images.__dlpack__(stream=0)
    extra = [torch.cuda.Stream() for _ in range(4)]
    with pytest.raises(BufferError):
        for s in extra:  # more streams than gpufeed tracks
            b.images.__dlpack__(stream=s.cuda_stream)


def test_iteration_gives_cpu_equal_batches(folder):
    want = [(x.clone(), y.clone())
            for x, y in _loader(folder, device="cpu", shuffle=False)]
    got = [(x.cpu(), y.cpu()) for x, y in _loader(folder, shuffle=False)]
    assert len(want) == len(got) == 7
    for (a, la), (b, lb) in zip(want, got):
        assert torch.equal(a, b) and torch.equal(la, lb)


@pytest.mark.parametrize("which", ["side", "default"])
def test_tensor_freed_while_a_kernel_reads_it(folder, which):
    """The loader runs ahead (prefetch 2, so batch k's memory is batch
    k+2's) while each batch is read only by a copy queued behind a long
    sleep on the consumer stream, and the tensor is freed in Python right
    after. Every copy must see its own batch: on a stream of the test's,
    and on torch's default stream (the legacy default stream, whose release
    event the loader's worker records)."""
    want = [x.clone() for x, _ in _loader(folder, device="cpu", shuffle=False)]
    loader = _loader(folder, shuffle=False, prefetch=2, num_workers=2)
    stream = torch.cuda.Stream() if which == "side" else torch.cuda.default_stream()
    copies = []
    with torch.cuda.stream(stream):
        for images, labels in loader:
            torch.cuda._sleep(100_000_000)  # tens of ms of GPU time
            out = torch.empty_like(images)
            out.copy_(images, non_blocking=True)  # queued behind the sleep
            copies.append(out)
            del images, labels  # freed now; the copy has not run yet
    stream.synchronize()
    assert len(copies) == len(want)
    for k, (a, b) in enumerate(zip(want, copies)):
        assert torch.equal(a, b.cpu()), "batch %d was overwritten" % k


@pytest.mark.parametrize("how", ["Loader", "DataLoader", "DataLoader+indices"])
def test_each_batch_on_the_stream_current_at_its_next(folder, how):
    """The first batch is taken on the default stream, the others under
    another one, where a long sleep queues ahead of the batch's only read:
    each batch must be handed to (and given back on) the stream current at
    its own next(), not the one current when the iteration began."""
    import gpufeed.torch as gft

    def make(device, **kw):
        if how == "Loader":
            return _loader(folder, device=device, shuffle=False, **kw)
        return gft.DataLoader(folder, batch_size=8, device=device, seed=5,
                              transform=gpufeed.Convert(dtype="float32"),
                              return_indices=how.endswith("indices"), **kw)

    want = [b[0].clone() for b in make("cpu")]
    loader = make("cuda:0", prefetch=2, num_workers=2)
    streams = [torch.cuda.default_stream(), torch.cuda.Stream()]
    it = iter(loader)
    copies = []
    while True:
        with torch.cuda.stream(streams[min(len(copies), 1)]):
            batch = next(it, None)
            if batch is None:
                break
            torch.cuda._sleep(100_000_000)  # tens of ms of GPU time
            out = torch.empty_like(batch[0])
            out.copy_(batch[0], non_blocking=True)  # queued behind the sleep
            copies.append(out)
            del batch  # freed now; the copy has not run yet
    torch.cuda.synchronize()
    assert len(copies) == len(want)
    for k, (a, b) in enumerate(zip(want, copies)):
        assert torch.equal(a, b.cpu()), "batch %d was overwritten" % k


def test_torch_allocator_untouched(folder):
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    loader = _loader(folder, prefetch=3)
    held = [torch.from_dlpack(loader.next_batch().images) for _ in range(3)]
    assert torch.cuda.memory_allocated() == before
    assert loader.stats()["device_pool_reserved"] > 0
    del held
    loader.close()


def test_device_memory_back_after_close(folder):
    # A first loader loads gpufeed's kernels into the context (they stay
    # loaded, as torch's do): measure from after that.
    # The torch operations the test makes (clone, equal) are run once too:
    # their kernels load lazily into device memory (tens of MB) and torch's
    # allocator keeps what it reserves, so torch's own reservation is
    # taken out of each reading.
    with _loader(folder) as warm:
        images, labels = next(iter(warm))
        kept = images.clone()
        assert torch.equal(images, kept)
        del images, labels, kept
    gc.collect()
    torch.cuda.synchronize()

    def free():
        return torch.cuda.mem_get_info()[0] + torch.cuda.memory_reserved()

    free0 = free()
    pool = 256 << 20
    tolerance = 2 << 20

    # No tensor alive at close(): the memory is back at once.
    loader = _loader(folder, device_pool_bytes=pool)
    for images, labels in loader:
        pass
    assert free0 - free() >= pool  # the pool is seen
    del images, labels
    loader.close()
    torch.cuda.synchronize()
    assert abs(free() - free0) <= tolerance

    # A tensor alive at close(): it stays valid, and the memory goes with it.
    loader = _loader(folder, device_pool_bytes=pool)
    images, labels = next(iter(loader))
    kept = images.clone()
    loader.close()
    del loader
    gc.collect()
    assert free0 - free() >= pool
    assert torch.equal(images, kept)
    del images, labels
    gc.collect()
    torch.cuda.synchronize()
    assert abs(free() - free0) <= tolerance
