#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Hostile and careless clients for the load test, held until killed.

stuck_clients.py SOCKET HIST_FILE N_HIST_FDS

- N_HIST_FDS open fds on HIST_FILE, each having read one byte (so that each
  open rendered, or shared, the table's text) and then left open;
- a silent client on the control socket: connects, sends two bytes of a
  frame's four-byte header and nothing more;
- a trickling client: sends a valid request one byte a second.

histd drops the socket clients at its whole-request deadline; they come
back at once, so that one of each is stuck at any time. Prints "ready" once
everything is in place.
"""
import json
import os
import socket
import struct
import sys
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.setblocking(False)
    return s


def frame(obj):
    body = json.dumps(obj).encode()
    return struct.pack("<I", len(body)) + body


def alive(s):
    """False once histd has closed its end (it dropped us)."""
    try:
        return s.recv(65536) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def main():
    sock_path, hist, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    fds = []
    for _ in range(n):
        fd = os.open(hist, os.O_RDONLY)
        os.read(fd, 1)
        fds.append(fd)
    request = frame({"op": "list"})
    silent = trickler = None
    sent = 0
    print("ready", flush=True)
    while True:
        if silent is None or not alive(silent):
            silent = connect(sock_path)
            silent.send(request[:2])
        if trickler is None or not alive(trickler) or sent == len(request):
            trickler, sent = connect(sock_path), 0
        try:
            trickler.send(request[sent:sent + 1])
            sent += 1
        except OSError:
            trickler = None
        time.sleep(1)


if __name__ == "__main__":
    try:
        main()
    except (ConnectionRefusedError, FileNotFoundError) as e:
        # histd is down (a restart in progress): the test starts us again.
        print(f"stuck_clients: {e}", file=sys.stderr)
        sys.exit(1)
