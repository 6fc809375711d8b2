#!/usr/bin/env python3
"""A small stand-in for the EC2 instance metadata service (IMDSv2), for healthd's tests.

Usage: imds_server.py DIR [--port N] [--port-file FILE]

IMDSv2 as EC2 serves it: PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds gives a
token; every GET must carry it in X-aws-ec2-metadata-token (else 401). A GET of
/latest/meta-data/PATH answers the file DIR/PATH (200), or 404 when there is no such file, so a
test changes the scenario by writing or removing files, e.g.
    DIR/events/maintenance/scheduled    JSON list of events
    DIR/spot/instance-action            {"action": "terminate", "time": "..."}
    DIR/instance-type                   p5.48xlarge
A path prefix before /latest/ picks a subdirectory: /n2/latest/meta-data/X reads DIR/n2/X, so one
server serves every node of the test cluster. A file DIR[/prefix]/.down makes it answer 503.
Port 0 (default) picks a free port; --port-file receives it once the server listens.
"""
import argparse
import http.server
import os
import secrets
import sys

TOKENS = set()


class Handler(http.server.BaseHTTPRequestHandler):
    root = "."

    def log_message(self, fmt, *args):  # quiet: tests read their own output
        pass

    def split(self):
        path = self.path.split("?", 1)[0]
        at = path.find("/latest/")
        if at < 0:
            return None, None
        prefix = path[:at].strip("/")
        if ".." in path:
            return None, None
        return os.path.join(self.root, prefix) if prefix else self.root, path[at + len("/latest/"):]

    def answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        base, rest = self.split()
        if base is None or rest != "api/token":
            return self.answer(404)
        if os.path.exists(os.path.join(base, ".down")):
            return self.answer(503)
        if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.answer(400, b"missing X-aws-ec2-metadata-token-ttl-seconds")
        token = secrets.token_hex(16)
        TOKENS.add(token)
        self.answer(200, token.encode())

    def do_GET(self):
        base, rest = self.split()
        if base is None or not rest.startswith("meta-data/"):
            return self.answer(404)
        if os.path.exists(os.path.join(base, ".down")):
            return self.answer(503)
        if self.headers.get("X-aws-ec2-metadata-token") not in TOKENS:
            return self.answer(401)
        file = os.path.join(base, rest[len("meta-data/"):])
        if not os.path.isfile(file):
            return self.answer(404)
        with open(file, "rb") as f:
            self.answer(200, f.read())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    a = p.parse_args()
    Handler.root = a.dir
    server = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(server.server_address[1]))
        os.rename(tmp, a.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
