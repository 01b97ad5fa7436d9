#!/usr/bin/env python3
"""Prints the botocore-signed cases of tests/test_s3_sigv4.c: each request
signed by botocore's S3SigV4Auth (the AWS SDK for Python's signer, an
implementation independent of gpufeed's), as C initialisers. How the
table in the test was made; not run by the tests (it needs botocore:
pip install botocore).

    python3 tests/s3/sigv4_vectors.py
"""
import datetime
import urllib.parse

import botocore.auth
import botocore.credentials
from botocore.awsrequest import AWSRequest

WHEN = datetime.datetime(2026, 11, 27, 23, 59, 58)
botocore.auth.get_current_datetime = lambda: WHEN

# name, key, secret, token, method, host, path (not encoded), query pairs,
# headers, payload hash
CASES = [
    ("key with spaces, plus, percent, tilde", "AKIDEXAMPLE", "secret/with+chars=", None,
     "GET", "127.0.0.1:9000", "/bucket/a b+c%d~e.jpg", [],
     [("Range", "bytes=0-99")], "UNSIGNED-PAYLOAD"),
    ("non-ASCII key and a session token", "ASIAEXAMPLE", "s3cr3t", "FQoGZXIvYXdzEXAMPLE//token+=",
     "GET", "bucket.s3.us-west-2.amazonaws.com", "/класс/фото 1.png", [],
     [("Range", "bytes=100-4195"), ("If-Match", '"9b2cf535f27731c974343645a3985328"')],
     "UNSIGNED-PAYLOAD"),
    ("a listing: prefix with '/', a continuation token, unsorted", "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", None,
     "GET", "localhost:5000", "/train-data", [("list-type", "2"), ("prefix", "imagenet/train/n01440764/"),
      ("continuation-token", "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="), ("delimiter", "/"),
      ("max-keys", "1000")],
     [], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("a key of ~, *, parentheses and a double slash", "AKIDEXAMPLE", "x", None,
     "HEAD", "s3.example.test", "/b/dir//x~(1)*'!.tar", [], [], "UNSIGNED-PAYLOAD"),
    ("a part upload: query names alone and values", "AKIDEXAMPLE", "x", None,
     "PUT", "127.0.0.1:9000", "/b/shard-000001.gfs", [("partNumber", "3"), ("uploadId", "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA")],
     [("Content-Length", "8388608")], "UNSIGNED-PAYLOAD"),
]


def c(s):
    return '"' + s.encode().decode('latin-1').encode('unicode_escape').decode().replace('"', '\\"') + '"' if s is not None else "NULL"


for (name, key, secret, token, method, host, path, query, headers, ph) in CASES:
    qs = "&".join(urllib.parse.quote(k, safe="-_.~") + "=" + urllib.parse.quote(v, safe="-_.~")
                  for k, v in query)
    url = "https://" + host + urllib.parse.quote(path, safe="/-_.~") + ("?" + qs if qs else "")
    req = AWSRequest(method=method, url=url, headers=dict(headers))
    req.headers["X-Amz-Content-SHA256"] = ph
    creds = botocore.credentials.Credentials(key, secret, token)
    auth = botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1")
    auth.add_auth(req)
    sig = req.headers["Authorization"].split("Signature=")[1]
    ph = req.headers["X-Amz-Content-SHA256"]  # what botocore signed
    print("    /* %s */" % name)
    print("    {%s, %s, %s, %s, %s, %s," % (c(key), c(secret), c(token), c(method), c(host), c(path)))
    print("     {%s}, %d," % (", ".join("{%s, %s}" % (c(k), c(v)) for k, v in query) or "{NULL, NULL}", len(query)))
    print("     {%s}, %d, %s," % (", ".join("{%s, %s}" % (c(k), c(v)) for k, v in headers) or "{NULL, NULL}", len(headers), c(ph)))
    print("     %s}," % c(sig))
