"""pytest fixtures of the network tests (netfixture.py):

    def test_x(nginx, proxy): ...     # nginx serving `webroot`, proxy before it
    def test_y(webroot, nginx): ...   # write files into webroot first

Each test gets its own nginx (a free port) and proxy, stopped after it.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netfixture as nf  # noqa: E402


@pytest.fixture
def webroot(tmp_path):
    d = tmp_path / "root"
    d.mkdir()
    return d


@pytest.fixture
def nginx(webroot, tmp_path):
    nf.require_http()
    with nf.Nginx(webroot, tmp_path / "nginx") as ng:
        yield ng


@pytest.fixture
def proxy(nginx, tmp_path):
    with nf.Proxy(nginx, tmp_path / "proxy") as px:
        yield px
