#!/usr/bin/env python3
"""A webhook endpoint on 127.0.0.1 for healthd's [notify] tests.

Usage: webhook_server.py record FILE --port-file PORTFILE
       webhook_server.py blackhole --port-file PORTFILE

record:    answers every POST with 200 "ok" and appends its body to FILE, one line each (a body that
           is not one line of JSON is written as a JSON string, so FILE stays one document a line).
blackhole: accepts every connection, reads nothing, answers nothing, and keeps it open: a hung
           endpoint, which only the client's own timeout gets it away from.
Listens on a free port and writes it to PORTFILE once it listens (written then renamed: a reader
never sees half a number). Runs until killed.
"""
import argparse
import http.server
import json
import os
import socket
import sys


class Recorder(http.server.BaseHTTPRequestHandler):
    out = None

    def log_message(self, fmt, *args):  # quiet: the test reads FILE
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, 1 << 20)).decode("utf-8", "replace")
        try:
            line = json.dumps(json.loads(body), ensure_ascii=False)
        except ValueError:
            line = json.dumps(body)
        with open(self.out, "a", encoding="utf-8") as f:
            f.write(line + "\n")
        reply = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


def write_port(path, port):
    with open(path + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(path + ".tmp", path)


def blackhole(port_file):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    write_port(port_file, s.getsockname()[1])
    held = []
    while True:
        conn, _ = s.accept()
        held.append(conn)  # never read, never answered, never closed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["record", "blackhole"])
    p.add_argument("file", nargs="?")
    p.add_argument("--port-file", required=True)
    a = p.parse_args()
    if a.mode == "blackhole":
        return blackhole(a.port_file)
    if not a.file:
        sys.exit("record needs FILE")
    Recorder.out = a.file
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    write_port(a.port_file, server.server_address[1])
    server.serve_forever()


if __name__ == "__main__":
    main()
