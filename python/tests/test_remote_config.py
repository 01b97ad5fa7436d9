"""The remote= option (gf_remote_config) reaches the C config: accepted
names pass through (a local source ignores them), unknown names and bad
values are refused, and the C side checks what Python cannot."""

import pytest

import gpufeed


def test_remote_options_accepted(folder):
    remote = {"tls_verify": True, "max_attempts": 3, "retry_ms": 5000,
              "connect_timeout_ms": 2000, "stall_ms": 3000,
              "max_connections": 8, "fetch_requests": 32,
              "fetch_threads": 2, "fetch_bytes": "64M", "cache_dir": None,
              "cache_dir_bytes": "1G", "ca_file": None}
    with gpufeed.Loader(folder, 10, device="cpu", remote=remote) as loader:
        assert loader.next_batch().count == 10
        st = loader.stats()
        # A local source: no remote figures.
        assert st["remote"] == "" and st["fetch_requests"] == 0


def test_remote_unknown_option(folder):
    with pytest.raises(gpufeed.ConfigError, match="no option 'retries'"):
        gpufeed.Loader(folder, 10, device="cpu", remote={"retries": 3})


def test_remote_bad_values(folder):
    with pytest.raises(gpufeed.ConfigError):
        gpufeed.Loader(folder, 10, device="cpu", remote={"max_attempts": -1})
    with pytest.raises(gpufeed.ConfigError):
        gpufeed.Loader(folder, 10, device="cpu", remote="fast")
    # Range checks are the C library's: named in the error.
    with pytest.raises(gpufeed.Error, match="max_attempts"):
        gpufeed.Loader(folder, 10, device="cpu", remote={"max_attempts": 1000})
    with pytest.raises(gpufeed.Error, match="fetch_threads"):
        gpufeed.Loader(folder, 10, device="cpu", remote={"fetch_threads": 65})


def test_unknown_scheme_named_without_the_rest(tmp_path):
    secret = "user:s3cr3t@host/x?token=abc"
    with pytest.raises(gpufeed.Error) as e:
        gpufeed.Loader("ftp://" + secret, 10, device="cpu")
    assert "ftp://" in str(e.value)
    assert "s3cr3t" not in str(e.value) and "abc" not in str(e.value)
