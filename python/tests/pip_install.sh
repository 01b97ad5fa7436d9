#!/usr/bin/env bash
# The README's install command, checked: a throwaway virtual environment
# (with the system's site packages, for torch and numpy), then
#   pip install --no-build-isolation ./python
# offline, then gpufeed imported from outside the checkout and one batch
# loaded from a small PNG folder. Extra CMake arguments for the build:
# GPUFEED_CMAKE_ARGS (setup.py passes them on).
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${GPUFEED_PYTHON_EXE:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/pip" install --no-build-isolation --no-index ./python
# No build leftovers in the checkout.
rm -rf python/build python/*.egg-info
cd "$tmp"
"$tmp/venv/bin/python" - <<'PY'
import os, sys
import gpufeed
here = os.path.dirname(gpufeed.__file__)
assert here.startswith(sys.prefix), (here, sys.prefix)
assert os.path.exists(os.path.join(here, "_C.abi3.so"))
PY
"$tmp/venv/bin/python" - <<PY
import sys
sys.path.insert(0, "$OLDPWD/python/tests")
import tempfile, gpufeed, pngdata
root = pngdata.make_folder(tempfile.mkdtemp(dir="$tmp"), 6, 2)
with gpufeed.Loader(root, 4, device="cpu") as loader:
    b = loader.next_batch()
    assert b.count == 4 and len(loader) == 2
print("pip install ./python: gpufeed", gpufeed.__version__, "from", gpufeed.__file__)
PY
