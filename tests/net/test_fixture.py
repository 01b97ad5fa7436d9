"""The Python side of the fixtures (netfixture.py, conftest.py): Nginx's
URLs, TLS with its CA (and the refusal without it), the access log as
records, two servers at once, and Proxy's start, counters and clean stop."""
import http.client
import os
import socket
import ssl

import pytest

import netfixture as nf


def test_nginx_and_log(webroot, nginx):
    (webroot / "a.bin").write_bytes(b"0123456789" * 100)
    c = http.client.HTTPConnection("127.0.0.1", nginx.port, timeout=10)
    c.request("GET", "/a.bin", headers={"Range": "bytes=10-19"})
    r = c.getresponse()
    assert (r.status, r.read()) == (206, b"0123456789")
    assert r.getheader("Content-Range") == "bytes 10-19/1000"
    c.request("GET", "/a.bin")
    r = c.getresponse()
    assert (r.status, len(r.read())) == (200, 1000)
    c.close()
    assert nginx.requests("/a.bin", want=2) == 2
    log = nginx.log()
    assert [(e["method"], e["path"], e["range"], e["status"], e["body_bytes"])
            for e in log] == [("GET", "/a.bin", "bytes=10-19", 206, 10),
                              ("GET", "/a.bin", None, 200, 1000)]
    assert log[0]["connection"] == log[1]["connection"]
    assert [e["connection_requests"] for e in log] == [1, 2]
    assert nginx.url == "http://127.0.0.1:%d" % nginx.port


def test_tls(webroot, tmp_path):
    nf.require_http()
    (webroot / "a.bin").write_bytes(b"x" * 5000)
    with nf.Nginx(webroot, tmp_path / "ng", tls=True) as ng:
        ctx = ssl.create_default_context(cafile=ng.ca)
        c = http.client.HTTPSConnection("127.0.0.1", ng.tls_port, context=ctx,
                                        timeout=10)
        c.request("GET", "/a.bin", headers={"Range": "bytes=0-99"})
        r = c.getresponse()
        assert (r.status, r.read()) == (206, b"x" * 100)
        c.close()
        c = http.client.HTTPSConnection("127.0.0.1", ng.tls_port, timeout=10,
                                        context=ssl.create_default_context())
        with pytest.raises(ssl.SSLCertVerificationError):
            c.request("GET", "/a.bin")
        c.close()
    # Stopped: its port refuses.
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", ng.port), timeout=2)


def test_two_at_once(webroot, tmp_path):
    nf.require_http()
    with nf.Nginx(webroot, tmp_path / "a") as a, \
            nf.Nginx(webroot, tmp_path / "b") as b:
        assert a.port != b.port and a.sock != b.sock


def test_proxy_fixture(webroot, nginx, proxy, tmp_path):
    (webroot / "a.bin").write_bytes(os.urandom(10000))
    st = proxy.stats()
    assert st["state"] == "up" and st["requests"] == 0
    c = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    c.request("GET", "/a.bin")
    assert c.getresponse().read() == (webroot / "a.bin").read_bytes()
    c.close()
    st = proxy.stats()
    assert (st["requests"], st["forwarded"], st["responses"]) == (1, 1, 1)
    assert st["bytes_down"] > 10000 and st["bytes_up"] > 0
    # Through nginx's TCP port instead of its unix socket.
    with nf.Proxy(nginx, tmp_path / "tcp", tcp=True, latency_ms=5) as px:
        assert px.stats()["latency_ms"] == 5
        c = http.client.HTTPConnection("127.0.0.1", px.port, timeout=10)
        c.request("GET", "/a.bin")
        assert c.getresponse().status == 200
        c.close()
    with pytest.raises(nf.NetError):
        nf.Proxy(nginx, tmp_path / "bad", rules=["nonsense"]).start()
