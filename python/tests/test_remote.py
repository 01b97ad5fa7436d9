"""gpufeed.Loader over HTTP: a dataset built by the CLI and served by a
private nginx (tests/net/netfixture.py) gives the batches the local copy
gives; the Loader's repr, its state_dict and the exception of a failing
read (RemoteError, through netproxy) hold no credential of the URL.
Skips without nginx unless GPUFEED_REQUIRE_HTTP=1."""

import os
import subprocess
import sys

import gpufeed
import pytest

from conftest import collect

sys.path.insert(0, os.path.join(os.environ.get("GPUFEED_SOURCE_DIR", ""),
                                "tests", "net"))
import netfixture as nf  # noqa: E402

SECRETS = ("agent007", "PASSW0RD", "T0KEN")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    nf.require_http()
    tmp = tmp_path_factory.mktemp("remote")
    cli = os.environ["GPUFEED"]
    subprocess.run([cli, "synth", str(tmp / "src"), "--count", "30",
                    "--size", "16", "--quiet"], check=True)
    (tmp / "root").mkdir()
    subprocess.run([cli, "build", str(tmp / "src"), str(tmp / "root" / "ds"),
                    "--shard-size", "8K", "--quiet"], check=True)
    with nf.Nginx(tmp / "root", tmp / "ng") as ng, \
            nf.Proxy(ng, tmp / "px") as px:
        yield str(tmp / "root" / "ds"), ng, px


def secret_url(px):
    return "http://agent007:PASSW0RD@127.0.0.1:%d/ds?token=T0KEN" % px.port


def test_same_batches_as_local(served):
    local, ng, px = served
    want = collect(gpufeed.Loader(local, 7, seed=3, device="cpu"))
    got = collect(gpufeed.Loader(ng.url + "/ds", 7, seed=3, device="cpu"))
    assert want[0] == got[0]
    assert all((a == b).all() for a, b in zip(want[1], got[1]))
    assert all((a == b).all() for a, b in zip(want[2], got[2]))
    # Through the proxy, with credentials in the URL (nginx ignores them).
    got = collect(gpufeed.Loader(secret_url(px), 7, seed=3, device="cpu"))
    assert want[0] == got[0]


def test_no_secret_in_repr_state_or_error(served):
    _, _, px = served
    loader = gpufeed.Loader(secret_url(px), 5, seed=1, device="cpu")
    shown = repr(loader) + repr(loader.state_dict())
    assert "127.0.0.1:%d/ds" % px.port in shown
    for s in SECRETS:
        assert s not in shown
    del loader
    # The loader reads ahead from create on, so the fault is there first:
    # the shards' reads fail at create (their headers) or in batches().
    px.clear()
    px.add("status 503 method=GET path=/ds/shard-")
    try:
        with pytest.raises(gpufeed.RemoteError) as e:
            failing = gpufeed.Loader(secret_url(px), 5, seed=1, device="cpu",
                                     remote={"max_attempts": 2, "retry_ms": 2000})
            for b in failing.batches():
                b.release()
    finally:
        px.clear()
    err = e.value
    assert err.name == "GF_EREMOTE" and "HTTP 503" in err.message
    text = str(err) + err.file + repr(err)
    assert "/ds/shard-" in text
    for s in SECRETS:
        assert s not in text
