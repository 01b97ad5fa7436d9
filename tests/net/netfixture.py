"""nginx and netproxy for Python tests (docs/TESTING.md).

    import netfixture as nf
    nf.require_http()                    # skip, or fail under GPUFEED_REQUIRE_HTTP=1
    with nf.Nginx(root, rundir, tls=True) as ng, nf.Proxy(ng, rundir2) as px:
        px.add("status 503 path=/shard nth=2")
        ... requests to px.url, ng.url, ng.tls_url (trusting ng.ca) ...
        px.stats()["requests"], ng.requests("/shard")

tests/net/conftest.py turns these into pytest fixtures (nginx, proxy);
another folder's tests can put tests/net on sys.path and import this
module. Only the standard library is used.
"""
import os
import signal
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NGINX_SH = os.path.join(HERE, "nginx.sh")


class NetError(RuntimeError):
    pass


def netproxy_path():
    """The netproxy binary: $GPUFEED_NETPROXY (ctest sets it), else
    $GPUFEED_BINARY_DIR/tests/netproxy."""
    p = os.environ.get("GPUFEED_NETPROXY")
    if not p and os.environ.get("GPUFEED_BINARY_DIR"):
        p = os.path.join(os.environ["GPUFEED_BINARY_DIR"], "tests", "netproxy")
    if not p or not os.access(p, os.X_OK):
        raise NetError("netproxy not found (set GPUFEED_NETPROXY or "
                       "GPUFEED_BINARY_DIR to a build tree)")
    return p


def missing():
    """Why the network tests cannot run here, or None."""
    r = subprocess.run(["bash", NGINX_SH, "check"], stdout=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        return r.stdout.strip() or "nginx cannot be run"
    return None


def require_http():
    """Skips the calling test (pytest) when nginx is missing, or fails it
    when GPUFEED_REQUIRE_HTTP=1."""
    import pytest
    why = missing()
    if why:
        if os.environ.get("GPUFEED_REQUIRE_HTTP") == "1":
            pytest.fail("GPUFEED_REQUIRE_HTTP=1 but " + why, pytrace=False)
        pytest.skip(why)


def _parse_env(text):
    env = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            env[k] = v
    return env


class Nginx:
    """A private nginx serving root read-only (tests/net/nginx.sh).

    After start(): url, port, sock (its unix socket), access_log,
    error_log, rundir, pid; with tls=True also tls_url, tls_port and ca
    (the CA file a client must trust); with h2c=True h2c_url."""

    def __init__(self, root, rundir, tls=False, h2c=False, workers=1):
        self.root, self.rundir = str(root), str(rundir)
        self.tls, self.h2c, self.workers = tls, h2c, workers
        self.env = None

    def start(self):
        args = ["bash", NGINX_SH, "start", self.root, self.rundir,
                "--owner", str(os.getpid()), "--workers", str(self.workers)]
        if self.tls:
            args.append("--tls")
        if self.h2c:
            args.append("--h2c")
        r = subprocess.run(args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise NetError("nginx did not start: " + r.stderr)
        e = self.env = _parse_env(r.stdout)
        self.url, self.port = e["GF_NGINX_URL"], int(e["GF_NGINX_PORT"])
        self.sock = e["GF_NGINX_SOCK"]
        self.access_log = e["GF_NGINX_ACCESS_LOG"]
        self.error_log = e["GF_NGINX_ERROR_LOG"]
        self.pid = int(e["GF_NGINX_PID"])
        if self.tls:
            self.tls_url = e["GF_NGINX_TLS_URL"]
            self.tls_port = int(e["GF_NGINX_TLS_PORT"])
            self.ca = e["GF_NGINX_CA"]
        if self.h2c:
            self.h2c_url = e["GF_NGINX_H2C_URL"]
        return self

    def stop(self):
        if self.env is None:
            return
        subprocess.run(["bash", NGINX_SH, "stop", self.rundir], check=True)
        self.env = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def log(self):
        """The access log as dicts: msec, request, method, path, range
        (None when absent), status, body_bytes, bytes_sent, connection,
        connection_requests, request_time."""
        out = []
        with open(self.access_log) as f:
            for line in f:
                p = line.rstrip("\n").split("\t")
                if len(p) < 9:
                    continue
                parts = p[1].split(" ")
                out.append(dict(
                    msec=float(p[0]), request=p[1], method=parts[0],
                    path=parts[1] if len(parts) > 1 else "",
                    range=None if p[2] == "-" else p[2], status=int(p[3]),
                    body_bytes=int(p[4]), bytes_sent=int(p[5]),
                    connection=int(p[6]), connection_requests=int(p[7]),
                    request_time=float(p[8])))
        return out

    def requests(self, text, want=None, timeout=1.0):
        """Logged requests whose request line contains text. nginx logs
        just after answering: with want, waits up to timeout for that
        many."""
        deadline = time.monotonic() + timeout
        while True:
            n = sum(1 for e in self.log() if text in e["request"])
            if want is None or n >= want or time.monotonic() > deadline:
                return n
            time.sleep(0.02)


class Proxy:
    """netproxy in front of upstream: an Nginx (through its unix socket
    unless tcp=True), or "HOST:PORT" / "unix:PATH". After start(): url,
    port, control_port, pid.

    stop() fails (NetError) when the proxy did not exit 0 on SIGTERM or
    printed a sanitizer report: a test that used it then fails too."""

    def __init__(self, upstream, rundir, latency_ms=0, rules=(), args=(),
                 tcp=False, verbose=False):
        if isinstance(upstream, Nginx):
            upstream = ("127.0.0.1:%d" % upstream.port if tcp
                        else "unix:" + upstream.sock)
        self.upstream, self.rundir = upstream, str(rundir)
        self.latency_ms, self.rules, self.args = latency_ms, rules, args
        self.verbose = verbose
        self.proc = None

    def start(self):
        os.makedirs(self.rundir, exist_ok=True)
        pf = os.path.join(self.rundir, "proxy.env")
        self.err_path = os.path.join(self.rundir, "proxy.err")
        if os.path.exists(pf):
            os.unlink(pf)
        args = [netproxy_path(), "--upstream", self.upstream, "--port-file",
                pf, "--die-with-parent", "--latency", str(self.latency_ms)]
        for r in self.rules:
            args += ["--rule", r]
        if self.verbose:
            args.append("-v")
        args += list(self.args)
        with open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                         stderr=err)
        deadline = time.monotonic() + 10
        while not os.path.exists(pf):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                raise NetError("netproxy did not start: " + self.stderr())
            time.sleep(0.02)
        with open(pf) as f:
            e = _parse_env(f.read())
        self.url, self.port = e["GF_PROXY_URL"], int(e["GF_PROXY_PORT"])
        self.control_port = int(e["GF_PROXY_CONTROL_PORT"])
        self.pid = int(e["GF_PROXY_PID"])
        return self

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def stop(self):
        if self.proc is None:
            return
        p, self.proc = self.proc, None
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise NetError("netproxy ignored SIGTERM")
        err = self.stderr()
        if rc != 0 or "Sanitizer" in err or "runtime error" in err:
            raise NetError("netproxy exited %d:\n%s" % (rc, err))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def ctl(self, command):
        """Sends one control command; returns the reply after "ok" (raises
        NetError on "err ...")."""
        with socket.create_connection(("127.0.0.1", self.control_port),
                                      timeout=10) as s:
            s.sendall(command.encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        reply = buf.decode().strip()
        if not reply.startswith("ok"):
            raise NetError("netproxy %r: %s" % (command, reply))
        return reply[2:].strip()

    def add(self, rule):
        """Adds a rule (docs/TESTING.md); returns its id."""
        return int(self.ctl("add " + rule))

    def clear(self):
        self.ctl("clear")

    def latency(self, ms):
        self.ctl("latency %d" % ms)

    def stats(self):
        """The counters, as a dict of ints (state: "up", "hang" or
        "refuse")."""
        out = {}
        for kv in self.ctl("stats").split():
            k, _, v = kv.partition("=")
            out[k] = int(v) if v.lstrip("-").isdigit() else v
        return out
