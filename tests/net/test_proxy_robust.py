"""netproxy under rude clients (run under ASan+UBSan in the sanitizer
build): a seeded storm of connections that send junk, half a head, a
request and leave mid-body, or pipeline many requests, while rules stall,
reset, truncate and flip some of them. It must stay up, serve a clean
request afterwards, close every connection, and exit 0 with no sanitizer
report (the proxy fixture checks that at teardown)."""
import os
import random
import socket
import time

import pytest


@pytest.fixture
def data(webroot):
    b = os.urandom(4 << 20)
    (webroot / "obj.bin").write_bytes(b)
    return b


def rude(port, rng):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(0.3)
    kind = rng.randrange(6)
    try:
        if kind == 0:
            s.sendall(rng.randbytes(rng.randrange(1, 5000)))
        elif kind == 1:
            s.sendall(b"GET /obj.bin HTTP/1.1\r\nHost: x\r\nRan")
        elif kind == 2:
            s.sendall(b"GET /obj.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(rng.randrange(1, 100000))
        elif kind == 3:
            s.sendall(b"GET /obj.bin HTTP/1.1\r\nHost: x\r\n\r\n" * 100)
            s.recv(1000)
        elif kind == 4:
            s.sendall(b"HEAD /obj.bin HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"GET /obj.bin HTTP/1.1\r\nHost: x\r\n"
                      b"Range: bytes=5-\r\n\r\n")
            s.recv(100)
        else:
            s.sendall(b"POST /obj.bin HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 10\r\n\r\n0123")
    except (socket.timeout, ConnectionError):
        pass
    if rng.randrange(2):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST on close
    s.close()


def test_storm(proxy, data):
    rng = random.Random(1234)
    proxy.add("stall after=100000 ms=200 prob=0.2 seed=1")
    proxy.add("reset after=3000 prob=0.1 seed=2")
    proxy.add("truncate after=70000 prob=0.1 seed=3")
    proxy.add("flip at=5 prob=0.2 seed=4")
    proxy.add("status 503 prob=0.1 seed=5")
    proxy.latency(2)
    socks = []
    for i in range(150):
        rude(proxy.port, rng)
        if i % 10 == 0:  # a few left open, abandoned later
            s = socket.create_connection(("127.0.0.1", proxy.port))
            s.sendall(b"GET /obj.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            socks.append(s)
    for s in socks:
        s.close()
    proxy.clear()
    proxy.latency(0)
    s = socket.create_connection(("127.0.0.1", proxy.port))
    s.sendall(b"GET /obj.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    s.settimeout(10)
    buf = b""
    while True:
        chunk = s.recv(1 << 16)
        if not chunk:
            break
        buf += chunk
    s.close()
    assert buf.partition(b"\r\n\r\n")[2] == data
    deadline = time.monotonic() + 5
    while proxy.stats()["active"] and time.monotonic() < deadline:
        time.sleep(0.05)
    st = proxy.stats()
    assert st["active"] == 0 and st["conns"] == 166
