"""state_dict mid-epoch, a new loader, load_state_dict: the rest of the
epoch (and the next) is what the uninterrupted loader delivers."""

import io

import gpufeed
import pytest
import torch

from conftest import collect


def test_resume_mid_epoch_is_exact(varied, tmp_path):
    t = gpufeed.RandomResizedCrop(16, dtype="float32")
    ref = gpufeed.Loader(varied, 6, seed=11, device="cpu", transform=t)
    full = collect(ref)
    ref_next = collect(ref)  # the following epoch

    a = gpufeed.Loader(varied, 6, seed=11, device="cpu", transform=t)
    it = a.batches()
    head = [list(next(it).indices) for _ in range(3)]
    state = a.state_dict()
    del it
    a.close()
    # Through torch.save, as a checkpoint would.
    buf = io.BytesIO()
    torch.save({"loader": state}, buf)
    buf.seek(0)
    state = torch.load(buf)["loader"]

    b = gpufeed.Loader(varied, 6, seed=11, device="cpu", transform=t,
                       num_workers=1)
    b.load_state_dict(state)
    rest = collect(b)
    assert head == full[0][:3]
    assert rest[0] == full[0][3:]
    assert all(torch.equal(x, y) for x, y in zip(rest[1], full[1][3:]))
    after = collect(b)
    assert after[0] == ref_next[0]


def test_state_of_another_order_is_refused(varied):
    a = gpufeed.Loader(varied, 6, seed=1, device="cpu")
    state = a.state_dict()
    b = gpufeed.Loader(varied, 6, seed=2, device="cpu")
    with pytest.raises(gpufeed.StateError) as e:
        b.load_state_dict(state)
    assert "seed" in str(e.value)
    broken = dict(state)
    del broken["check"]
    with pytest.raises(gpufeed.StateError):
        a.load_state_dict(broken)
    broken = dict(state, position=3)
    with pytest.raises(gpufeed.StateError):
        a.load_state_dict(broken)  # the check no longer matches
