#!/usr/bin/env python3
"""A store of KEYS image files in CLASSES class folders of bucket "big",
for listing at scale (a benchmark helper, not part of the library):
ListObjectsV2 pages of 1,000 keys made on the fly (keys in order,
continuation tokens, IsTruncated), GET and HEAD of any listed key answered
with the bytes of file JPEG. Anonymous; path-style; 127.0.0.1 at a free
port (written to PORT_FILE).

    listing_server.py PORT_FILE KEYS CLASSES JPEG
Each request is logged to stderr, one line."""
import http.server
import os
import sys
import urllib.parse
from xml.sax.saxutils import escape

PORT_FILE, KEYS, CLASSES, JPEG = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                  sys.argv[4])
PER = (KEYS + CLASSES - 1) // CLASSES
PAGE = 1000


BODY = open(JPEG, "rb").read()
ETAG = '"0123456789abcdef0123456789abcdef"'


def key(i):
    return "class_%04d/img_%07d.jpg" % (i // PER, i)


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        sys.stderr.write("%s\n" % (fmt % a))

    def send(self, code, body, ctype, extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path in ("/big", "/big/") and q.get("list-type") == ["2"]:
            start = int(q.get("continuation-token", ["0"])[0])
            end = min(start + PAGE, KEYS)
            out = ['<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult '
                   'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>big</Name>'
                   '<Prefix></Prefix><KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys>'
                   '<IsTruncated>%s</IsTruncated>' % (end - start, PAGE,
                                                      "true" if end < KEYS else "false")]
            if end < KEYS:
                out.append("<NextContinuationToken>%d</NextContinuationToken>" % end)
            for i in range(start, end):
                out.append("<Contents><Key>%s</Key><LastModified>2026-11-28T00:00:00.000Z"
                           "</LastModified><ETag>&quot;0123456789abcdef0123456789abcdef"
                           "&quot;</ETag><Size>%d</Size><StorageClass>STANDARD"
                           "</StorageClass></Contents>" % (escape(key(i)), len(BODY)))
            out.append("</ListBucketResult>")
            return self.send(200, "".join(out).encode(), "application/xml")
        if u.path.startswith("/big/") and u.path.endswith(".jpg"):
            return self.send(200, BODY, "image/jpeg", [("ETag", ETAG)])
        self.send(404, b'<?xml version="1.0"?><Error><Code>NoSuchKey</Code>'
                  b'<Message>no such key</Message></Error>', "application/xml")


s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
os.rename(PORT_FILE + ".tmp", PORT_FILE)
s.serve_forever()
