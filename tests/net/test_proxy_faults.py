"""netproxy's rules, each seen from the client's side: injected statuses,
stalls, resets, truncation, a stripped Range, a changed ETag, a flipped
byte, delays; which requests a rule picks (path, method, nth, prob, times);
changing rules while it runs; kill and resume; chunked and close-delimited
bodies; pipelined requests. Clients: http.client and plain sockets."""
import http.client
import http.server
import os
import socket
import threading
import time

import pytest

import netfixture as nf

SIZE = 1 << 20


@pytest.fixture
def data(webroot):
    b = os.urandom(SIZE)
    (webroot / "obj.bin").write_bytes(b)
    (webroot / "other.bin").write_bytes(b[:1000])
    return b


def conn(px, timeout=10):
    return http.client.HTTPConnection("127.0.0.1", px.port, timeout=timeout)


def get(c, path="/obj.bin", rng=None, method="GET"):
    headers = {"Range": "bytes=" + rng} if rng else {}
    c.request(method, path, headers=headers)
    r = c.getresponse()
    return r, r.read()


def raw(port, path="/obj.bin", rng=None, timeout=5.0):
    """One request on a fresh socket, read until EOF, reset or timeout.
    Returns (head bytes, body bytes, how it ended, seconds to the end),
    how: "eof", "reset" or "timeout"."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(timeout)
    req = "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" % path
    if rng:
        req += "Range: bytes=%s\r\n" % rng
    s.sendall((req + "\r\n").encode())
    t0 = time.monotonic()
    buf = b""
    how = "eof"
    try:
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
    except ConnectionResetError:
        how = "reset"
    except socket.timeout:
        how = "timeout"
    s.close()
    head, _, body = buf.partition(b"\r\n\r\n")
    return head, body, how, time.monotonic() - t0


def header(head, name):
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == name.lower().encode():
            return v.strip().decode()
    return None


@pytest.mark.parametrize("code,extra", [(503, ""), (500, ""),
                                        (429, " retry-after=2"), (404, ""),
                                        (403, "")])
def test_status(nginx, proxy, data, code, extra):
    proxy.add("status %d path=/obj nth=2%s" % (code, extra))
    c = conn(proxy)
    r, body = get(c, rng="0-99")
    assert r.status == 206 and body == data[:100]
    r, body = get(c, rng="0-99")
    assert r.status == code
    assert b"injected %d" % code in body
    assert (r.getheader("Retry-After") == "2") == (code == 429)
    # The connection carries on: the next request on it is served.
    r, body = get(c, rng="100-199")
    assert r.status == 206 and body == data[100:200]
    r, body = get(c, method="HEAD")
    assert r.status == 200 and body == b""
    c.close()
    st = proxy.stats()
    assert (st["conns"], st["requests"], st["forwarded"]) == (1, 4, 3)
    assert st["status"] == 1 and st["fired"] == 1
    assert nginx.requests("/obj.bin", want=3) == 3


def test_status_close_and_head(nginx, proxy, data):
    proxy.add("status 503 close")
    c = conn(proxy)
    r, body = get(c, method="HEAD")
    assert r.status == 503 and body == b""
    assert r.getheader("Connection") == "close"
    assert r.getheader("Content-Length") == str(len("netproxy: injected 503\n"))
    c.close()
    head, body, how, _ = raw(proxy.port)
    assert head.startswith(b"HTTP/1.1 503 ") and how == "eof"
    assert nginx.requests("/obj.bin") == 0


def fired_pattern(proxy, n, path="/other.bin", method="GET"):
    c = conn(proxy)
    out = []
    for _ in range(n):
        r, _ = get(c, path, method=method)
        out.append(r.status == 503)
    c.close()
    return out


def test_which_requests(nginx, proxy, data):
    rid = proxy.add("status 503 path=/other nth=3")
    assert fired_pattern(proxy, 5) == [False, False, True, False, False]
    proxy.ctl("del %d" % rid)
    rid = proxy.add("status 503 path=/other times=2")
    assert fired_pattern(proxy, 4) == [True, True, False, False]
    proxy.ctl("del %d" % rid)
    proxy.add("status 503 path=/other every method=HEAD")
    assert fired_pattern(proxy, 2) == [False, False]
    assert fired_pattern(proxy, 2, method="HEAD") == [True, True]
    # Another path: untouched.
    assert fired_pattern(proxy, 2, path="/obj.bin") == [False, False]
    listing = proxy.ctl("rules")
    assert "status 503 path=/other method=HEAD seen=2 fired=2" in listing
    proxy.clear()
    assert proxy.ctl("rules") == ""


def test_prob_is_seeded(nginx, tmp_path, data):
    pats = []
    for i in range(2):
        with nf.Proxy(nginx, tmp_path / ("p%d" % i),
                      rules=["status 503 prob=0.5 seed=7"]) as px:
            pats.append(fired_pattern(px, 40))
            assert px.stats()["status"] == sum(pats[-1])
    assert pats[0] == pats[1]
    assert 8 <= sum(pats[0]) <= 32
    with nf.Proxy(nginx, tmp_path / "p3",
                  rules=["status 503 prob=0.5 seed=8"]) as px:
        assert fired_pattern(px, 40) != pats[0]
    with nf.Proxy(nginx, tmp_path / "p4", rules=["status 503 prob=0"]) as px:
        assert not any(fired_pattern(px, 10))


def test_bad_rules(proxy):
    for bad in ["", "explode", "status", "status 99", "flip", "flip at=x",
                "stall ms=soon", "reset prob=2", "delay", "etag value=",
                "status 503 nth=0", "truncate at=5", "status 503 path"]:
        with pytest.raises(nf.NetError):
            proxy.add(bad)
    for bad in ["del 99", "latency -1", "kill softly", "frobnicate"]:
        with pytest.raises(nf.NetError):
            proxy.ctl(bad)
    assert proxy.ctl("rules") == ""


def test_stall_then_resume(proxy, data):
    proxy.add("stall after=1000 ms=1500")
    s = socket.create_connection(("127.0.0.1", proxy.port))
    s.sendall(b"GET /obj.bin HTTP/1.1\r\nHost: x\r\n\r\n")
    s.settimeout(0.5)
    buf = b""
    t0 = time.monotonic()
    # The head and the first 1000 bytes come at once...
    while b"\r\n\r\n" not in buf or len(buf.partition(b"\r\n\r\n")[2]) < 1000:
        buf += s.recv(65536)
    head, _, body = buf.partition(b"\r\n\r\n")
    assert len(body) == 1000 and time.monotonic() - t0 < 0.5
    # ...then nothing for the stall...
    with pytest.raises(socket.timeout):
        s.recv(65536)
    # ...then the rest, intact.
    s.settimeout(10)
    while len(body) < SIZE:
        chunk = s.recv(1 << 16)
        assert chunk
        body += chunk
    assert time.monotonic() - t0 >= 1.45
    assert body == data
    s.close()
    assert proxy.stats()["stall"] == 1


def test_stall_forever(proxy, data):
    proxy.add("stall nth=1")
    proxy.add("stall after=4096 nth=2")
    head, body, how, _ = raw(proxy.port, timeout=1.0)
    assert (head, body, how) == (b"", b"", "timeout")
    head, body, how, _ = raw(proxy.port, timeout=1.0)
    assert head.startswith(b"HTTP/1.1 200") and how == "timeout"
    assert body == data[:4096]
    # The stalled connections end when their clients leave; the next one
    # is served.
    head, body, how, _ = raw(proxy.port)
    assert how == "eof" and body == data
    deadline = time.monotonic() + 2
    while proxy.stats()["active"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proxy.stats()["active"] == 0


def test_reset(proxy, data):
    proxy.add("reset nth=1")
    proxy.add("reset after=5000 nth=2")
    proxy.add("reset after=0 nth=3")
    head, body, how, _ = raw(proxy.port)
    assert (head, body, how) == (b"", b"", "reset")
    head, body, how, _ = raw(proxy.port)
    assert head.startswith(b"HTTP/1.1 200") and how == "reset"
    assert body == data[:5000]
    head, body, how, _ = raw(proxy.port, rng="100-")
    assert head.startswith(b"HTTP/1.1 206") and (body, how) == (b"", "reset")
    head, body, how, _ = raw(proxy.port)
    assert how == "eof" and body == data
    assert proxy.stats()["reset"] == 3


def test_truncate(proxy, data):
    proxy.add("truncate after=5000 nth=1")
    proxy.add("truncate nth=2")
    c = conn(proxy)
    c.request("GET", "/obj.bin")
    r = c.getresponse()
    assert r.status == 200 and r.getheader("Content-Length") == str(SIZE)
    with pytest.raises(http.client.IncompleteRead) as e:
        r.read()
    assert e.value.partial == data[:5000]
    c.close()
    head, body, how, _ = raw(proxy.port)
    assert (head, body, how) == (b"", b"", "eof")
    assert proxy.stats()["truncate"] == 2


def test_strip_range(nginx, proxy, data):
    proxy.add("strip-range path=/obj nth=1")
    c = conn(proxy)
    r, body = get(c, rng="10-19")
    assert r.status == 200 and body == data
    r, body = get(c, rng="10-19")
    assert r.status == 206 and body == data[10:20]
    assert nginx.requests("/obj.bin", want=2) == 2
    assert [e["range"] for e in nginx.log()] == [None, "bytes=10-19"]


def test_etag(nginx, proxy, data):
    c = conn(proxy)
    r, _ = get(c, rng="0-0")
    etag = r.getheader("ETag")
    assert etag.startswith('"') and etag.endswith('"')
    proxy.add("etag nth=1")
    proxy.add('etag value="v2" nth=2')
    r, _ = get(c, rng="0-0")
    assert r.getheader("ETag") == etag[:-1] + '-changed"'
    r, body = get(c, rng="1-1")
    assert r.getheader("ETag") == '"v2"' and body == data[1:2]
    r, _ = get(c, rng="0-0")
    assert r.getheader("ETag") == etag
    assert proxy.stats()["etag"] == 2


def test_flip(proxy, data):
    proxy.add("flip at=12345 nth=1")
    proxy.add("flip at=10 mask=0x01 nth=2")
    proxy.add("flip at=99999999 nth=3")
    c = conn(proxy)
    r, body = get(c)
    assert len(body) == SIZE
    diff = [i for i in range(SIZE) if body[i] != data[i]]
    assert diff == [12345] and body[12345] == data[12345] ^ 0xFF
    r, body = get(c, rng="1000-1999")
    want = bytearray(data[1000:2000])
    want[10] ^= 1
    assert r.status == 206 and body == bytes(want)
    r, body = get(c)  # past the end of the body: nothing to flip
    assert body == data
    r, body = get(c)
    assert body == data


def test_flip_and_cut_under_latency(proxy, data):
    proxy.latency(40)
    proxy.add("flip at=70000 nth=1")
    proxy.add("truncate after=300000 nth=1")
    c = conn(proxy)
    c.request("GET", "/obj.bin")
    r = c.getresponse()
    with pytest.raises(http.client.IncompleteRead) as e:
        r.read()
    want = bytearray(data[:300000])
    want[70000] ^= 0xFF
    assert e.value.partial == bytes(want)


def test_flip_at_the_cut(proxy, data):
    proxy.add("flip at=1000 nth=1")
    proxy.add("truncate after=1000 nth=1")
    head, body, how, _ = raw(proxy.port)
    assert how == "eof" and body == data[:1000]


def test_delay_with_status(proxy, data):
    proxy.add("status 503 nth=1")
    proxy.add("delay 150 nth=1")
    c = conn(proxy)
    t0 = time.monotonic()
    r, _ = get(c)
    assert r.status == 503 and time.monotonic() - t0 >= 0.14
    r, _ = get(c, rng="0-0")
    assert r.status == 206
    st = proxy.stats()
    assert (st["delay"], st["status"]) == (1, 1)


def test_kill_refuse_and_resume(proxy, data):
    c = conn(proxy)
    r, _ = get(c, rng="0-0")
    proxy.ctl("kill")
    assert proxy.stats()["state"] == "refuse"
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", proxy.port))
    with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected,
                        BrokenPipeError)):
        get(c, rng="0-0")
    c.close()
    proxy.ctl("resume")
    head, body, how, _ = raw(proxy.port)
    assert how == "eof" and body == data


def test_kill_hang_and_resume(proxy, data):
    proxy.ctl("kill hang")
    assert proxy.stats()["state"] == "hang"
    s = socket.create_connection(("127.0.0.1", proxy.port))  # the backlog
    s.sendall(b"GET /obj.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9\r\n\r\n")
    s.settimeout(0.5)
    with pytest.raises(socket.timeout):
        s.recv(100)
    proxy.ctl("resume")
    s.settimeout(10)
    buf = b""
    while not buf.endswith(data[:10]):
        chunk = s.recv(1000)
        assert chunk
        buf += chunk
    assert buf.startswith(b"HTTP/1.1 206")
    s.close()


def test_pipelined(proxy, data):
    proxy.add("status 503 nth=2")
    s = socket.create_connection(("127.0.0.1", proxy.port))
    reqs = b"".join(b"GET /obj.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=%d-%d\r\n\r\n"
                    % (i, i + 9) for i in (0, 10, 20))
    s.sendall(reqs)
    f = s.makefile("rb")
    got = []
    for _ in range(3):
        status = int(f.readline().split()[1])
        n = 0
        while True:
            line = f.readline()
            if line == b"\r\n":
                break
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":")[1])
        got.append((status, f.read(n)))
    s.close()
    assert got[0] == (206, data[0:10])
    assert got[1][0] == 503
    assert got[2] == (206, data[20:30])


class _Upstream(http.server.BaseHTTPRequestHandler):
    """Chunked and close-delimited bodies, which nginx's static files never
    use."""
    protocol_version = "HTTP/1.1"
    body = bytes(range(256)) * 400

    def do_GET(self):
        b = self.body
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("ETag", '"up"')
            self.end_headers()
            for i in range(0, len(b), 7000):
                part = b[i:i + 7000]
                self.wfile.write(b"%x;ext=1\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\nX-Trailer: t\r\n\r\n")
        else:
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b)
            self.close_connection = True

    def log_message(self, *a):
        pass


def dechunk(raw_body):
    """The data of a chunked body, the last chunk possibly cut short."""
    out = b""
    while raw_body:
        line, _, raw_body = raw_body.partition(b"\r\n")
        n = int(line.split(b";")[0], 16)
        if n == 0:
            break
        out += raw_body[:n]
        raw_body = raw_body[n + 2:]
    return out


@pytest.fixture
def upstream():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield "127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_chunked_and_until_close(upstream, tmp_path):
    nf.require_http()
    b = _Upstream.body
    with nf.Proxy(upstream, tmp_path / "px") as px:
        c = conn(px)
        for _ in range(2):  # twice on one connection: the framing is found
            r, body = get(c, "/chunked")
            assert body == b and r.getheader("ETag") == '"up"'
        px.add("flip at=20000 mask=0x80 nth=1")
        px.add("etag nth=1")
        r, body = get(c, "/chunked")
        want = bytearray(b)
        want[20000] ^= 0x80
        assert body == bytes(want) and r.getheader("ETag") == '"up-changed"'
        c.close()
        # The cut counts data bytes, not the chunks' framing.
        px.add("truncate after=15000 nth=1")
        head, body, how, _ = raw(px.port, "/chunked")
        assert how == "eof" and dechunk(body) == b[:15000]
        head, body, how, _ = raw(px.port, "/plain")
        assert how == "eof" and body == b
        assert px.stats()["responses"] == 5
