"""gpufeed.Loader and the gpufeed.torch adapter over s3:// (moto's server on
127.0.0.1 checking every SigV4 signature, started by tests/s3/s3_server.py
with the Python that has moto: GPUFEED_S3_PYTHON). A built dataset and an
image folder uploaded to the bucket give the batches their local copies
give; credentials come from the environment or from remote={"s3": ...};
an unsigned or wrongly signed request is refused by the store and said so
(its code, the s3:// object), with no secret in any message, repr or
state_dict. Skips without GPUFEED_S3_PYTHON unless GPUFEED_REQUIRE_S3=1."""

import os
import subprocess

import gpufeed
import pytest

from conftest import collect

SRC = os.environ.get("GPUFEED_SOURCE_DIR", "")
MOTO = os.path.join(SRC, "tests", "s3", "s3_server.py")


def _python():
    py = os.environ.get("GPUFEED_S3_PYTHON")
    if not py or subprocess.run([py, MOTO, "check"]).returncode != 0:
        if os.environ.get("GPUFEED_REQUIRE_S3") == "1":
            pytest.fail("GPUFEED_REQUIRE_S3=1 but no Python with moto "
                        "(GPUFEED_S3_PYTHON)")
        pytest.skip("no moto (GPUFEED_S3_PYTHON unset or without moto)")
    return py


@pytest.fixture(scope="module")
def bucket(tmp_path_factory):
    py = _python()
    tmp = tmp_path_factory.mktemp("s3")
    run = str(tmp / "moto")
    out = subprocess.run([py, MOTO, "start", run, "train", "imgs", "--owner",
                          str(os.getpid())], check=True, capture_output=True,
                         text=True).stdout
    env = dict(line.split("=", 1) for line in out.split())
    saved = {k: os.environ.get(k) for k in (
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3",
        "AWS_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE", "AWS_SESSION_TOKEN",
        "AWS_EC2_METADATA_DISABLED", "GF_S3_ENDPOINT")}
    os.environ.update(AWS_ACCESS_KEY_ID=env["AWS_ACCESS_KEY_ID"],
                      AWS_SECRET_ACCESS_KEY=env["AWS_SECRET_ACCESS_KEY"],
                      AWS_ENDPOINT_URL_S3=env["GF_S3_ENDPOINT"],
                      GF_S3_ENDPOINT=env["GF_S3_ENDPOINT"],
                      AWS_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true",
                      AWS_CONFIG_FILE="/dev/null",
                      AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        os.environ.pop(k, None)
    cli = os.environ["GPUFEED"]
    subprocess.run([cli, "synth", str(tmp / "src"), "--count", "45",
                    "--size", "16", "--classes", "4", "--quiet"],
                   check=True)
    subprocess.run([cli, "build", str(tmp / "src"), str(tmp / "ds"),
                    "--shard-size", "8K", "--quiet"], check=True)
    # The folder at a bucket's root: moto 5.2, checking signatures, refuses
    # a listing whose prefix holds '/' (tests/s3/s3_server.py says why).
    for d, p in (("src", "imgs"), ("ds", "train/sets/ds")):
        subprocess.run([py, MOTO, "upload", str(tmp / d), "s3://" + p],
                       check=True, capture_output=True)
    try:
        yield tmp, env
    finally:
        subprocess.run([py, MOTO, "stop", run])
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def same(a, b):
    assert a[0] == b[0]
    assert all((x == y).all() for x, y in zip(a[1], b[1]))
    assert all((x == y).all() for x, y in zip(a[2], b[2]))


def test_dataset_same_batches_as_local(bucket):
    tmp, _ = bucket
    kw = dict(seed=5, device="cpu")
    same(collect(gpufeed.Loader(str(tmp / "ds"), 8, **kw)),
         collect(gpufeed.Loader("s3://train/sets/ds", 8, **kw)))


def test_folder_same_batches_as_local(bucket):
    tmp, _ = bucket
    # A fixed output size: the folder is sized from its listing (no
    # header read), and gives what the local folder gives.
    kw = dict(seed=7, device="cpu", transform=gpufeed.Resize(12))
    local = gpufeed.Loader(str(tmp / "src"), 6, **kw)
    remote = gpufeed.Loader("s3://imgs", 6, **kw)
    assert remote.classes == local.classes == ["class_000", "class_001",
                                               "class_002", "class_003"]
    same(collect(local), collect(remote))


def test_gpu_mode_same_batches(bucket):
    """On the GPU (skipped without one; a failure under
    GPUFEED_REQUIRE_GPU=1): the dataset and the folder from the bucket give
    the device batches their local copies give (the dataset's, without a
    transform, also the CPU's)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        if os.environ.get("GPUFEED_REQUIRE_GPU") == "1":
            pytest.fail("GPUFEED_REQUIRE_GPU=1 but torch sees no CUDA device")
        pytest.skip("torch sees no CUDA device")
    tmp, _ = bucket
    for local, url, kw in (
            (str(tmp / "ds"), "s3://train/sets/ds", {}),
            (str(tmp / "src"), "s3://imgs", {"transform": gpufeed.Resize(12)})):
        kw = dict(kw, seed=3)
        remote = gpufeed.Loader(url, 8, device="cuda:0", **kw)
        assert remote.device == "cuda:0"
        got = collect(remote)
        assert all(x.device.type == "cuda" for x in got[1])
        same(collect(gpufeed.Loader(local, 8, device="cuda:0", **kw)), got)
        if "transform" not in kw:  # no resampling: the CPU's bytes too
            cpu = collect(gpufeed.Loader(url, 8, device="cpu", **kw))
            same(cpu, (got[0], [x.cpu() for x in got[1]],
                       [x.cpu() for x in got[2]]))


def test_torch_adapter(bucket):
    torch = pytest.importorskip("torch")
    import gpufeed.torch as gt
    tmp, _ = bucket
    n = 0
    for images, labels in gt.DataLoader("s3://train/sets/ds", batch_size=9,
                                        device="cpu", seed=1):
        assert isinstance(images, torch.Tensor) and labels.shape[0] == 9
        n += labels.shape[0]
    assert n == 45


def test_explicit_credentials(bucket, monkeypatch):
    _, env = bucket
    key, secret = env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    s3 = {"access_key_id": key, "secret_access_key": secret,
          "endpoint_url": env["GF_S3_ENDPOINT"], "region": "us-east-1"}
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3")
    loader = gpufeed.Loader("s3://train/sets/ds", 5, seed=1, device="cpu",
                            remote={"s3": s3})
    shown = repr(loader) + repr(loader.state_dict())
    assert "s3://train/sets/ds" in shown and secret not in shown
    assert sum(len(i) for i in collect(loader)[0]) == 45


def test_refusals_named_without_secrets(bucket, monkeypatch):
    _, env = bucket
    secret = env["AWS_SECRET_ACCESS_KEY"]
    # Unsigned: moto checks signatures, so the store refuses.
    with pytest.raises(gpufeed.Error) as e:
        gpufeed.Loader("s3://train/sets/ds", 5, device="cpu",
                       remote={"s3": {"anonymous": True}})
    assert "s3://train/sets/ds/index.gfi" in str(e.value)
    assert "HTTP 403" in str(e.value)
    # A wrong secret: refused (a HEAD's 403 has no body to say why).
    wrong = "WRONG" + secret[5:]
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", wrong)
    with pytest.raises(gpufeed.Error) as e:
        gpufeed.Loader("s3://imgs", 5, device="cpu")
    text = str(e.value) + repr(e.value)
    assert "HTTP 403" in text and "s3://imgs/index.gfi" in text
    assert wrong not in text and secret not in text
    with pytest.raises(gpufeed.ConfigError, match="addressing"):
        gpufeed.Loader("s3://train/sets/ds", 5, device="cpu",
                       remote={"s3": {"addressing": "sideways"}})
