#!/usr/bin/env python3
"""A container credentials endpoint for the CLI's S3 tests (a test helper,
not part of the library; the standard library only): serves the keys of
the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) as ECS does, to
requests carrying the authorization token TOKEN, with an Expiration
EXPIRES_IN seconds after each request, and counts the requests.

    ecs_creds.py PORTFILE COUNTFILE TOKEN EXPIRES_IN

Writes the port to PORTFILE once listening, the number of good requests
to COUNTFILE after each. Exits when its standard input closes."""
import datetime
import http.server
import json
import os
import sys
import threading

port_file, count_file, token, expires_in = sys.argv[1:5]
key, secret = os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
count = 0
lock = threading.Lock()


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        global count
        if self.path != "/creds" or self.headers.get("Authorization") != token:
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        until = datetime.datetime.now(datetime.timezone.utc) + \
            datetime.timedelta(seconds=int(expires_in))
        body = json.dumps({"AccessKeyId": key, "SecretAccessKey": secret,
                           "Token": "", "Expiration": until.strftime("%Y-%m-%dT%H:%M:%SZ")})
        body = json.dumps({k: v for k, v in json.loads(body).items() if v}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        with lock:
            count += 1
            with open(count_file + ".tmp", "w") as f:
                f.write("%d\n" % count)
            os.replace(count_file + ".tmp", count_file)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.replace(port_file + ".tmp", port_file)
threading.Thread(target=srv.serve_forever, daemon=True).start()
sys.stdin.read()
