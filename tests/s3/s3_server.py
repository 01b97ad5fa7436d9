#!/usr/bin/env python3
"""moto's S3 server for the tests, on 127.0.0.1 at a free port, checking
every SigV4 signature (a test helper, not part of the library).

    s3_server.py start RUNDIR [BUCKET...] [--owner PID] [--no-auth] [--waitress]
        Starts moto_server with INITIAL_NO_AUTH_ACTION_COUNT set so that
        the first calls (made here) create an IAM user, a policy allowing
        s3:*, and its access key; from then on moto checks every
        signature (a wrong secret gets SignatureDoesNotMatch; moto 5.2).
        Creates the buckets with that key. --no-auth: moto checks no
        signature (moto 5.2 computes the canonical query of a ListObjectsV2
        prefix holding '/' with the '/' unencoded, where AWS's SigV4 and
        botocore encode it: it refuses boto3's own listing of "a/" when it
        checks; a listing under a prefix is tested against this server).
        --waitress: moto's app served by waitress (keep-alive connections,
        as S3; for benchmarks). Prints shell lines:
        GF_S3_ENDPOINT, GF_S3_PID, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY;
        writes them to RUNDIR/moto.env too. The server dies with the
        process that started this script (--owner PID) or on `stop`.
    s3_server.py upload DIR s3://BUCKET/PREFIX
        Uploads every file under DIR (the environment's key and endpoint).
    s3_server.py put s3://BUCKET/KEY FILE|-
        One object (- : an empty one, as a console's "folder/" marker).
    s3_server.py ls s3://BUCKET[/PREFIX]
        "KEY SIZE ETAG" a line for each object under PREFIX (the bucket
        listed whole and filtered here: see --no-auth).
    s3_server.py uploads s3://BUCKET
        "KEY UPLOAD_ID" a line for each multipart upload still open.
    s3_server.py stop RUNDIR
    s3_server.py check
        Exits 0 when moto and boto3 are importable, 77 otherwise.
"""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

# The calls made before moto checks signatures: create user, create
# policy, attach it, create the access key. moto counts each request.
SETUP_CALLS = 4


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def client(service, endpoint, key=None, secret=None):
    import boto3
    from botocore.config import Config
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=key or "setup", aws_secret_access_key=secret or "setup",
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


# moto's app under waitress (PyPI), which keeps connections alive as S3
# does; moto_server's own (werkzeug's development server) answers every
# request with "Connection: close", and a new connection a request behind
# a proxy with an added round trip is what a benchmark would then measure.
WAITRESS = """
import sys
from moto.server import DomainDispatcherApplication, create_backend_app
from waitress import serve
app = DomainDispatcherApplication(create_backend_app)
def logged(env, start):  # each request logged as moto_server's are
    q = env.get("QUERY_STRING")
    def sr(status, headers, exc=None):
        sys.stdout.write('127.0.0.1 - - "%s %s%s HTTP/1.1" %s -\\n' % (
            env["REQUEST_METHOD"], env.get("PATH_INFO", ""), "?" + q if q else "",
            status.split()[0]))
        sys.stdout.flush()
        return start(status, headers, exc) if exc else start(status, headers)
    return app(env, sr)
# poll(), not select(): a loader's 1,000 connections pass select's 1,024
# descriptors, and waitress then dies (ValueError in select).
serve(logged, host="127.0.0.1", port=int(sys.argv[1]), threads=32,
      connection_limit=4096, channel_timeout=300, asyncore_use_poll=True)
"""


def start(rundir, buckets, owner, auth=True, waitress=False):
    os.makedirs(rundir, exist_ok=True)
    port = free_port()
    env = dict(os.environ)
    env.pop("INITIAL_NO_AUTH_ACTION_COUNT", None)
    if auth:
        env["INITIAL_NO_AUTH_ACTION_COUNT"] = str(SETUP_CALLS)
    log = open(os.path.join(rundir, "moto.log"), "w")
    # The watcher: moto dies with the owner (the test) however it ends.
    cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    if waitress:
        cmd = [sys.executable, "-c", WAITRESS, str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    if owner:
        watch = ("while kill -0 %d 2>/dev/null && kill -0 %d 2>/dev/null; do sleep 1; done; "
                 "kill -TERM -%d 2>/dev/null" % (owner, proc.pid, proc.pid))
        subprocess.Popen(["bash", "-c", watch], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = "http://127.0.0.1:%d" % port
    for _ in range(300):
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
            break
        except Exception:
            if proc.poll() is not None:
                sys.exit("moto_server exited: see %s/moto.log" % rundir)
            time.sleep(0.1)
    else:
        sys.exit("moto_server did not answer on %s" % endpoint)
    iam = client("iam", endpoint)
    iam.create_user(UserName="gpufeed-test")
    arn = iam.create_policy(PolicyName="s3-all", PolicyDocument=(
        '{"Version":"2012-10-17","Statement":[{"Effect":"Allow",'
        '"Action":"s3:*","Resource":"*"}]}'))["Policy"]["Arn"]
    iam.attach_user_policy(UserName="gpufeed-test", PolicyArn=arn)
    k = iam.create_access_key(UserName="gpufeed-test")["AccessKey"]
    s3 = client("s3", endpoint, k["AccessKeyId"], k["SecretAccessKey"])
    for b in buckets:
        s3.create_bucket(Bucket=b)
    lines = ["GF_S3_ENDPOINT=%s" % endpoint, "GF_S3_PID=%d" % proc.pid,
             "AWS_ACCESS_KEY_ID=%s" % k["AccessKeyId"],
             "AWS_SECRET_ACCESS_KEY=%s" % k["SecretAccessKey"]]
    with open(os.path.join(rundir, "moto.env"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def upload(src, dest):
    assert dest.startswith("s3://")
    bucket, _, prefix = dest[5:].partition("/")
    s3 = client("s3", os.environ["GF_S3_ENDPOINT"], os.environ["AWS_ACCESS_KEY_ID"],
                os.environ["AWS_SECRET_ACCESS_KEY"])
    jobs = []
    for root, _, files in os.walk(src):
        for name in sorted(files):
            path = os.path.join(root, name)
            key = os.path.relpath(path, src)
            if prefix:
                key = prefix.rstrip("/") + "/" + key
            jobs.append((path, key))
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(8) as pool:
        for f in [pool.submit(s3.upload_file, p, bucket, k) for p, k in jobs]:
            f.result()
    print("uploaded %d objects to %s" % (len(jobs), dest))


def put(dest, path):
    """One object: FILE's bytes, or none ("-": a console's folder marker)."""
    bucket, _, key = dest[5:].partition("/")
    s3 = client("s3", os.environ["GF_S3_ENDPOINT"], os.environ["AWS_ACCESS_KEY_ID"],
                os.environ["AWS_SECRET_ACCESS_KEY"])
    body = b"" if path == "-" else open(path, "rb").read()
    s3.put_object(Bucket=bucket, Key=key, Body=body)


def _s3():
    return client("s3", os.environ["GF_S3_ENDPOINT"], os.environ["AWS_ACCESS_KEY_ID"],
                  os.environ["AWS_SECRET_ACCESS_KEY"])


def ls(where):
    bucket, _, prefix = where[5:].partition("/")
    for page in _s3().get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            if o["Key"].startswith(prefix):
                print(o["Key"], o["Size"], o["ETag"])


def uploads(where):
    bucket = where[5:].partition("/")[0]
    for u in _s3().list_multipart_uploads(Bucket=bucket).get("Uploads", []):
        print(u["Key"], u["UploadId"])


def stop(rundir):
    try:
        env = dict(l.strip().split("=", 1) for l in open(os.path.join(rundir, "moto.env")))
        os.killpg(int(env["GF_S3_PID"]), signal.SIGTERM)
    except (OSError, KeyError, ValueError):
        pass


def main():
    a = sys.argv[1:]
    if a and a[0] == "check":
        try:
            import boto3  # noqa: F401
            import moto.server  # noqa: F401
        except Exception as e:  # any import failure means: not here
            print("moto or boto3 missing (%s): pip install 'moto[server]' boto3, or run the suite with GPUFEED_WITH_S3=1" % e,
                  file=sys.stderr)
            sys.exit(77)
        return
    if len(a) >= 2 and a[0] == "start":
        owner = 0
        auth = "--no-auth" not in a
        if not auth:
            a.remove("--no-auth")
        waitress = "--waitress" in a
        if waitress:
            a.remove("--waitress")
        if "--owner" in a:
            i = a.index("--owner")
            owner = int(a[i + 1])
            del a[i:i + 2]
        start(a[1], a[2:], owner, auth, waitress)
    elif len(a) == 3 and a[0] == "upload":
        upload(a[1], a[2])
    elif len(a) == 3 and a[0] == "put":
        put(a[1], a[2])
    elif len(a) == 2 and a[0] == "ls":
        ls(a[1])
    elif len(a) == 2 and a[0] == "uploads":
        uploads(a[1])
    elif len(a) == 2 and a[0] == "stop":
        stop(a[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
