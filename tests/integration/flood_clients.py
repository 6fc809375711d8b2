#!/usr/bin/env python3
"""A hostile local user: floods healthd sockets with connections and holds them.

For each socket given, opens --per-socket connections: a third idle, a third with half a line, a
third with thousands of requests whose answers are never read. Prints one line
"ready pid=P opened=N refused=R" (refused: answered busy or closed by the server) once they are
open, then keeps knocking (connect, ping, close) at every socket until killed.
"""
import argparse
import errno
import os
import resource
import socket
import sys
import time

UNREAD = b'{"v":1,"type":"status"}\n' * 2000


def open_one(path, mode):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.setblocking(False)
    try:
        if mode == 1:
            s.send(b'{"v":1,"ty')
        elif mode == 2:
            s.send(UNREAD)
    except OSError:
        pass  # refused and closed already
    return s


def refused(s):
    try:
        data = s.recv(512, socket.MSG_PEEK)
    except BlockingIOError:
        return False  # held: nothing to read yet
    except OSError:
        return True  # reset by the server
    return not data or b'"busy"' in data


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-socket", type=int, default=2100)
    parser.add_argument("sockets", nargs="+")
    args = parser.parse_args()
    # A user may raise their own soft limit to the hard one: an attacker would.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    held = []
    for path in args.sockets:
        for i in range(args.per_socket):
            held.append(open_one(path, i % 3))
    # Each daemon accepts in order: once a connection opened after all of these is answered (busy,
    # by now), every one of them has been let in or turned away.
    for path in args.sockets:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(60)
        probe.connect(path)
        try:
            probe.send(b'{"v":1,"type":"ping"}\n')
            probe.recv(512)
        except (BrokenPipeError, ConnectionResetError):
            pass  # turned away: accepted all the same
        probe.close()
    n_refused = sum(1 for s in held if refused(s))
    print("ready pid=%d opened=%d refused=%d" % (os.getpid(), len(held), n_refused), flush=True)
    while True:
        for path in args.sockets:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                s.send(b'{"v":1,"type":"ping"}\n')
                s.close()
            except OSError as e:
                if e.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ECONNREFUSED, errno.EAGAIN):
                    print("flood: %s: %s" % (path, e), file=sys.stderr, flush=True)
        time.sleep(0.002)


if __name__ == "__main__":
    main()
