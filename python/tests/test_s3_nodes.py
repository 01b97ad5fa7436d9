"""Two simulated nodes reading one s3:// dataset and one s3:// image folder:
`torchrun --nnodes 2 --nproc-per-node 2` twice on this machine (gloo, host
mode; where torchrun does not start, as with Debian 12's torch 1.13 on
Python 3.11, each rank is started with the environment torchrun gives it), each node with its own disk cache folder, each rank with its own
fault proxy in front of moto's server (checking signatures), so that the
proxy's log (netproxy -v: each request with its Range) is that rank's
requests (s3_nodes_worker.py does the reading).

  - epoch 0: every sample delivered exactly once across the four ranks, and
    no byte of a shard (dataset, block order) and no image (folder) fetched
    by two ranks in the epoch: every GET of a rank's proxy log while epoch 0
    ran is for a sample the rank delivers in epoch 0 or in epoch 1 (the
    loader reads ahead into epoch 1 before it is closed; the workers keep
    the read-ahead at its least, the batches in flight, so that it cannot
    reach epoch 2, 64 samples a rank further on), and each node fetched
    what its ranks delivered;
  - each rank stops after two batches of epoch 1 and saves its state; a new
    job of the same size resumes from them: epoch 1 exactly once;
  - a job of two ranks resumes from rank 0's state (elastic): the rest of
    epoch 1 exactly once.
Skips without moto (GPUFEED_S3_PYTHON), netproxy (GPUFEED_NETPROXY) or
torch.distributed, unless GPUFEED_REQUIRE_S3=1."""

import collections
import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from test_s3 import MOTO, _python

torch = pytest.importorskip("torch")
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "s3_nodes_worker.py")
COUNT = 256  # 4 ranks x 16 batches of 4: no padding, no partial batch


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    py = _python()
    proxy = os.environ.get("GPUFEED_NETPROXY") or os.path.join(
        os.environ.get("GPUFEED_BINARY_DIR", ""), "tests", "netproxy")
    if not os.access(proxy, os.X_OK):
        if os.environ.get("GPUFEED_REQUIRE_S3") == "1":
            pytest.fail("no netproxy (GPUFEED_NETPROXY, GPUFEED_BINARY_DIR)")
        pytest.skip("no netproxy (GPUFEED_NETPROXY, GPUFEED_BINARY_DIR)")
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available")
    tmp = tmp_path_factory.mktemp("nodes")
    run = str(tmp / "moto")
    out = subprocess.run([py, MOTO, "start", run, "train", "imgs", "--owner",
                          str(os.getpid())], check=True, capture_output=True,
                         text=True).stdout
    env = dict(line.split("=", 1) for line in out.split())
    cli = os.environ["GPUFEED"]
    subprocess.run([cli, "synth", str(tmp / "src"), "--count", str(COUNT),
                    "--size", "16", "--classes", "4", "--quiet"], check=True)
    subprocess.run([cli, "build", str(tmp / "src"), str(tmp / "ds"),
                    "--shard-size", "4K", "--quiet"], check=True)
    up = dict(os.environ, **env)
    for d, dest in (("src", "s3://imgs"), ("ds", "s3://train/ds")):
        subprocess.run([py, MOTO, "upload", str(tmp / d), dest], check=True,
                       capture_output=True, env=up)
    procs, urls, logs = [], [], []
    for r in range(4):
        pf, lf = tmp / ("proxy%d.env" % r), tmp / ("proxy%d.log" % r)
        p = subprocess.Popen([proxy, "--upstream", env["GF_S3_ENDPOINT"][7:],
                              "--port-file", str(pf), "-v"],
                             stdout=subprocess.DEVNULL, stderr=open(lf, "w"))
        procs.append(p)
        for _ in range(200):
            if pf.exists() and "GF_PROXY_URL" in pf.read_text():
                break
            time.sleep(0.05)
        urls.append(re.search(r"GF_PROXY_URL=(\S+)", pf.read_text()).group(1))
        logs.append(lf)
    base = dict(os.environ, AWS_ACCESS_KEY_ID=env["AWS_ACCESS_KEY_ID"],
                AWS_SECRET_ACCESS_KEY=env["AWS_SECRET_ACCESS_KEY"],
                AWS_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true",
                AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null",
                S3_PROXIES=",".join(urls), OMP_NUM_THREADS="1")
    base.pop("AWS_PROFILE", None)
    _job.torchrun = _torchrun_works()
    try:
        yield tmp, base, logs
    finally:
        for p in procs:
            p.kill()
        subprocess.run([py, MOTO, "stop", run])


def _torchrun_works():
    """Whether this torch's torchrun starts (Debian 12's torch 1.13 on
    Python 3.11 fails in its own argument handling)."""
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
                        "--nproc_per_node", "1", "-m", "this"],
                       capture_output=True, text=True, timeout=120)
    return r.returncode == 0


def _job(tmp, base, url, kind, mode, nodes, out):
    """A job of `nodes` nodes of 2 ranks, all at once: torchrun once a node,
    or, where torchrun does not start, each rank with the environment
    torchrun gives it. Waits for them."""
    port = _free_port()
    procs = []
    torchrun = _job.torchrun
    for node in range(nodes):
        env = dict(base, NODE_CACHE=str(tmp / ("cache-%s-node%d" % (kind, node))))
        args = [WORKER, url, str(out), mode, kind]
        if torchrun:
            cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(nodes),
                   "--nproc_per_node", "2", "--node_rank", str(node),
                   "--master_addr", "127.0.0.1", "--master_port", str(port)] + args
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
            continue
        for local in range(2):
            renv = dict(env, RANK=str(2 * node + local), LOCAL_RANK=str(local),
                        WORLD_SIZE=str(2 * nodes), LOCAL_WORLD_SIZE="2",
                        GROUP_RANK=str(node), MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=str(port))
            procs.append(subprocess.Popen([sys.executable] + args, env=renv,
                                          stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
    for p in procs:
        text = p.communicate(timeout=240)[0]
        assert p.returncode == 0, text[-3000:]
    ranks = 2 * nodes
    return [json.load(open(out / ("rank%d.%s.json" % (r, mode)))) for r in range(ranks)]


def _once(lists, n):
    c = collections.Counter(i for l in lists for i in l)
    assert sorted(c) == list(range(n)), "missing: %s" % sorted(set(range(n)) - set(c))
    assert max(c.values()) == 1, "twice: %s" % [i for i, k in c.items() if k > 1]


def _gets(log, start, end):
    """The object GETs of lines [start, end) of a proxy's log: (path, first,
    last); last -1 for a whole object. A shard's header (its first 64
    bytes), the index and listing pages are left out: metadata every node
    reads."""
    out = []
    for line in open(log).read().splitlines()[start:end]:
        m = re.search(r": GET (\S+) range=(\S+):", line)
        if not m or "index.gfi" in m.group(1) or "list-type" in m.group(1):
            continue
        rng = m.group(2)
        a, b = (0, -1) if rng == "-" else map(int, rng.split("=")[1].split("-"))
        if m.group(1).endswith(".gfs") and (a, b) == (0, 63):
            continue
        out.append((m.group(1), a, b))
    return out


def _records(tmp):
    """Sample index -> (shard file, offset, length, source path)."""
    r = subprocess.run([os.environ["GPUFEED"], "inspect", str(tmp / "ds"), "--json",
                        "--samples", str(COUNT)], check=True, capture_output=True,
                       text=True)
    return {x["index"]: (x["shard_file"], x["offset"], x["length"], x["source"])
            for x in json.loads(r.stdout)["records"]}


@pytest.mark.parametrize("kind,url", [("dataset", "s3://train/ds"),
                                      ("folder", "s3://imgs")])
def test_two_nodes(cluster, kind, url):
    tmp, base, logs = cluster
    out = tmp / ("out-" + kind)
    out.mkdir()
    recs = _records(tmp)  # the folder's files in its order, as the build's
    marks = [sum(1 for _ in open(l)) for l in logs]
    r0 = _job(tmp, base, url, kind, "epoch0", 2, out)
    ends = [sum(1 for _ in open(l)) for l in logs]
    _once([r["indices"] for r in r0], COUNT)
    # Checkpoint mid-epoch 1, resume the same size: epoch 1 exactly once.
    stop = _job(tmp, base, url, kind, "stop", 2, out)
    resume = _job(tmp, base, url, kind, "resume", 2, out)
    _once([s["indices"] + r["indices"] for s, r in zip(stop, resume)], COUNT)
    # Epoch 0's requests: each rank fetched only what it delivers in epoch 0
    # or reads ahead for epoch 1, so no byte was fetched for two ranks in
    # one epoch; and what each node delivered in epoch 0 was fetched by it.
    for r in range(4):
        mine = set(r0[r]["indices"]) | set(stop[r]["indices"]) | set(resume[r]["indices"])
        gets = _gets(logs[r], marks[r], ends[r])
        for path, a, b in gets:
            if kind == "folder":
                hit = [i for i, x in recs.items() if path.endswith("/" + x[3])]
                assert len(hit) == 1, path
            else:
                shard = path.rsplit("/", 1)[1]
                hit = [i for i, x in recs.items() if x[0] == shard and
                       x[1] <= b and a < x[1] + x[2]]
                assert hit, (path, a, b)
            for i in hit:
                assert i in mine, "rank %d fetched %s bytes %d-%d: sample %d is " \
                    "rank %s's in epoch 0" % (r, path, a, b, i,
                                              [k for k in range(4) if i in r0[k]["indices"]])
    for node in range(2):
        fetched = set()
        for r in (2 * node, 2 * node + 1):
            for path, a, b in _gets(logs[r], marks[r], ends[r]):
                for i, x in recs.items():
                    if (kind == "folder" and path.endswith("/" + x[3])) or \
                            (kind == "dataset" and path.endswith("/" + x[0]) and
                             x[1] <= b and a < x[1] + x[2]):
                        fetched.add(i)
        wanted = set(r0[2 * node]["indices"]) | set(r0[2 * node + 1]["indices"])
        assert wanted <= fetched, "node %d: not fetched: %s" % (node, sorted(wanted - fetched))
    # Elastic: two ranks take over from the four's checkpoint.
    el = _job(tmp, base, url, kind, "elastic", 1, out)
    before = [i for x in stop for i in x["indices"]]
    _once([before] + [r["indices"] for r in el], COUNT)
