"""The README's one-line change, typed as a user types it: `import gpufeed`
alone, then `gpufeed.torch.DataLoader(...)` (PEP 562: gpufeed.torch is
imported on first use, and `import gpufeed` does not import torch)."""

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")


def _run(code):
    """Runs `code` in a fresh interpreter (this one has torch imported)."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                       capture_output=True, text=True, timeout=240,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_import_gpufeed_does_not_import_torch():
    out = _run("""
        import sys
        import gpufeed
        print("torch" in sys.modules, "gpufeed.torch" in sys.modules)
        """)
    assert out.split() == ["False", "False"]


def test_readme_one_line_change(folder):
    # The README's line with its own arguments (num_workers and pin_memory
    # are taken and mapped), on a torchvision ImageFolder with a Compose.
    out = _run(f"""
        import torch
        from torchvision import datasets, transforms
        import gpufeed

        train_set = datasets.ImageFolder({folder!r}, transforms.Compose([
            transforms.RandomResizedCrop(8), transforms.RandomHorizontalFlip(),
            transforms.ToTensor()]))
        sampler = torch.utils.data.RandomSampler(train_set)
        loader = gpufeed.torch.DataLoader(train_set, batch_size=16, sampler=sampler,
                                          num_workers=16, pin_memory=True)
        seen = 0
        for images, labels in loader:
            assert tuple(images.shape[1:]) == (3, 8, 8), images.shape
            seen += images.shape[0]
        print(seen, len(train_set), "torch" in dir(gpufeed))
        """)
    seen, total, listed = out.split()
    assert int(seen) == int(total) == 50
    assert listed == "True"


def test_unknown_attribute_still_raises():
    out = _run("""
        import gpufeed
        try:
            gpufeed.no_such_thing
        except AttributeError as e:
            print("AttributeError", e)
        """)
    assert out.startswith("AttributeError") and "no_such_thing" in out
