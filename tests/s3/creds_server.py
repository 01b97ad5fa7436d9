#!/usr/bin/env python3
"""A container credentials endpoint and an EC2 instance metadata service for
tests/test_s3_creds.c, on 127.0.0.1 at a free port (a test helper, not part
of the library; the standard library only).

    creds_server.py PORTFILE LOGFILE AUTH_TOKEN

Writes the port to PORTFILE once listening (written whole, then renamed),
and one line a request to LOGFILE:

    METHOD PATH ttl=T tok=0|1 auth=none|ok|wrong accept=A

(T: the X-aws-ec2-metadata-token-ttl-seconds header or '-'; tok: whether an
X-aws-ec2-metadata-token header came; auth: the Authorization header
against AUTH_TOKEN; A: the Accept header or '-'). No secret is logged.
Exits when its standard input closes (the test's end, however it ends).

Routes (the C test holds the same documents and secrets):
  GET /ecs/creds         200 ECS_DOC when Authorization is AUTH_TOKEN and
                         Accept is application/json; else 401 (406)
  GET /ecs/status/N      N, with a body
  GET /ecs/doc/NAME      200 with DOCS[NAME]
  GET /ecs/bigstream     200 with 70 KiB and no Content-Length
  GET /ecs/redirect      302 to /ecs/creds
  GET /ecs/slow          200 ECS_DOC after 3 s
  /imds/MODE/latest/...  an instance metadata service; MODE:
    good      IMDSv2: PUT api/token (ttl 21600 wanted, else 400) gives
              METADATA_TOKEN; every GET must carry it (else 401); the role
              list is "test-role"; its document IMDS_DOC
    v1        the token PUT answers 403; a GET carrying a token gets 400
    v1-405    the same with 405
    token400  the token PUT answers 400
    norole    the role list answers 404
    emptyrole the role list is empty
    badrole   the role list is "../etc/passwd"
    baddoc    the role's document is not JSON
    failcode  the role's document is an IMDS error (Code, no keys)
    gone      the role's document answers 404
"""
import http.server
import os
import sys
import threading
import time

ECS_DOC = (
    '{"RoleArn":"arn:aws:iam::123456789012:role/ecs-task",'
    '"AccessKeyId":"ASIAECSKEYID0001",'
    '"SecretAccessKey":"ecsSECRETq7Zk/Wp+3xLm",'
    '"Token":"ecsSESSIONr8Yj/Vo+4wKn",'
    '"Expiration":"2026-11-28T06:00:00Z"}')
IMDS_DOC = (
    '{\n  "Code" : "Success",\n  "LastUpdated" : "2026-11-28T01:30:00Z",\n'
    '  "Type" : "AWS-HMAC",\n  "AccessKeyId" : "ASIAIMDSKEYID002",\n'
    '  "SecretAccessKey" : "imdsSECRETs9Xh/Un+5vJo",\n'
    '  "Token" : "imdsSESSIONt1Wg/Tm+6uIp",\n'
    '  "Expiration" : "2026-11-28T07:30:00Z"\n}')
METADATA_TOKEN = "imdsAPITOKENu2Vf-Sl7tHq=="
DOCS = {
    "malformed": '{"AccessKeyId":"ASIAECSKEYID0001","SecretAccessKey":',
    "nosecret": '{"AccessKeyId":"ASIAECSKEYID0001","Token":"ecsSESSIONr8Yj/Vo+4wKn"}',
    "big": '{"Pad":"' + "x" * (70 << 10) + '"}',
    "empty": "",
}
FAIL_DOC = ('{"Code":"AssumeRoleUnauthorizedAccess","Message":"EC2 cannot '
            'assume the role test-role.","LastUpdated":"2026-11-28T01:30:00Z"}')
LIST_PATH = "latest/meta-data/iam/security-credentials/"


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def note(self):
        auth = self.headers.get("Authorization")
        line = "%s %s ttl=%s tok=%d auth=%s accept=%s\n" % (
            self.command, self.path,
            self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "-"),
            "X-aws-ec2-metadata-token" in self.headers,
            "none" if auth is None else "ok" if auth == self.server.token else "wrong",
            self.headers.get("Accept", "-"))
        with self.server.log_lock:
            self.server.log.write(line)
            self.server.log.flush()

    def answer(self, status, body="", headers=()):
        data = body.encode()
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:
            pass

    def do_PUT(self):
        self.note()
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        parts = self.path.split("/", 3)  # '', 'imds', MODE, rest
        if len(parts) < 4 or parts[1] != "imds" or parts[3] != "latest/api/token":
            return self.answer(404, "no such route")
        mode = parts[2]
        if mode == "v1":
            return self.answer(403, "forbidden")
        if mode == "v1-405":
            return self.answer(405, "method not allowed")
        if mode == "token400":
            return self.answer(400, "bad request")
        if self.headers.get("X-aws-ec2-metadata-token-ttl-seconds") != "21600":
            return self.answer(400, "missing ttl")
        return self.answer(200, METADATA_TOKEN)

    def do_GET(self):
        self.note()
        if self.path.startswith("/ecs/"):
            return self.ecs(self.path[len("/ecs/"):])
        parts = self.path.split("/", 3)
        if len(parts) == 4 and parts[1] == "imds":
            return self.imds(parts[2], parts[3])
        return self.answer(404, "no such route")

    def ecs(self, route):
        if route.startswith("creds") or route == "slow":
            if route == "slow":
                time.sleep(3)
            if self.headers.get("Authorization") != self.server.token:
                return self.answer(401, '{"message":"not authorized"}')
            if self.headers.get("Accept") != "application/json":
                return self.answer(406, "accept")
            return self.answer(200, ECS_DOC)
        if route.startswith("status/"):
            return self.answer(int(route[len("status/"):]), "status body")
        if route.startswith("doc/"):
            return self.answer(200, DOCS[route[len("doc/"):]])
        if route == "bigstream":  # no Content-Length: ends at the close
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(70):
                    self.wfile.write(b"x" * 1024)
            except OSError:
                pass
            return
        if route == "redirect":
            return self.answer(302, "", [("Location", "/ecs/creds")])
        return self.answer(404, "no such route")

    def imds(self, mode, rest):
        token = self.headers.get("X-aws-ec2-metadata-token")
        if mode in ("v1", "v1-405"):
            if token is not None:
                return self.answer(400, "a token in IMDSv1")
        elif token != METADATA_TOKEN:
            return self.answer(401, "token")
        if rest == LIST_PATH:
            if mode == "norole":
                return self.answer(404, "not found")
            if mode == "emptyrole":
                return self.answer(200, "")
            if mode == "badrole":
                return self.answer(200, "../etc/passwd")
            return self.answer(200, "test-role")
        if rest == LIST_PATH + "test-role":
            if mode == "baddoc":
                return self.answer(200, '{"Code":"Success","AccessKeyId":')
            if mode == "failcode":
                return self.answer(200, FAIL_DOC)
            if mode == "gone":
                return self.answer(404, "not found")
            return self.answer(200, IMDS_DOC)
        return self.answer(404, "no such route")


def main():
    portfile, logfile, token = sys.argv[1:4]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.token = token
    server.log = open(logfile, "a")
    server.log_lock = threading.Lock()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(portfile + ".tmp", portfile)
    sys.stdin.read()  # until the test closes it
    os._exit(0)


if __name__ == "__main__":
    main()
