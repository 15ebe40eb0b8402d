#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Hostile HTTP clients for histd-exporter, and a scraper that times it.

http_attackers.py slowloris PORT ADDRESSES PER_ADDRESS
    PER_ADDRESS connections from each of ADDRESSES loopback addresses
    (127.0.0.2, 127.0.0.3, ...), each sending a request's header one byte a
    second; one dropped is opened again at once.
http_attackers.py idle PORT COUNT
    COUNT connections, each from a loopback address of its own (127.0.1.1,
    127.0.1.2, ...), sending nothing; one dropped is opened again at once.
http_attackers.py mute PORT COUNT
    As idle, but each connection sends its request's first byte at once and
    nothing more: the server's kernel hands it over at once, where an idle
    one waits for a first byte (TCP_DEFER_ACCEPT).
    Each prints "ready" once every connection is open, runs until killed,
    and on SIGTERM prints how many connections the server closed.
http_attackers.py scrape PORT SECONDS [PATH]
    GET PATH (default /metrics) from 127.0.0.1 again and again for SECONDS:
    one line per scrape, "STATUS MILLISECONDS" ("error MILLISECONDS" when it
    failed or took over 10 s).
"""
import resource
import signal
import socket
import sys
import time

REQUEST = b"GET /metrics HTTP/1.1\r\nHost: x\r\nUser-Agent: slow\r\n" + b"X-Pad: " + b"a" * 64


def loopback(i):
    """The i-th loopback address past 127.0.1.0."""
    return "127.%d.%d.%d" % (1 + i // 65000, (i // 250) % 250 + 1, i % 250 + 1)


def connect(port, source):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    return s


def gone(s):
    try:
        return s.recv(65536) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def hold(port, sources, drip, first=b""):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = len(sources) + 64
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))

    def opened(src):
        s = connect(port, src)
        if first:
            try:
                s.send(first)
            except OSError:
                pass  # closed already: seen as gone, and opened again
        return s

    conns = [[opened(src), 0, src] for src in sources]
    closed = 0
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("ready", flush=True)
    while not stop:
        for c in conns:
            if gone(c[0]):
                closed += 1
                c[0].close()
                c[0], c[1] = opened(c[2]), 0
            elif drip and c[1] < len(REQUEST):
                try:
                    c[0].send(REQUEST[c[1]:c[1] + 1])
                    c[1] += 1
                except OSError:
                    pass
        time.sleep(1 if drip else 0.2)
    print("closed", closed, flush=True)


def scrape(port, seconds, path):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.monotonic()
        status = "error"
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())
            head = s.recv(64)
            status = head.split(b" ")[1].decode() if head.startswith(b"HTTP/1.1 ") else "error"
            while s.recv(1 << 20):
                pass
            s.close()
        except OSError:
            status = "error"
        print(status, round((time.monotonic() - start) * 1000, 1), flush=True)
        time.sleep(0.2)


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "slowloris":
        n, per = int(sys.argv[3]), int(sys.argv[4])
        hold(port, ["127.0.0.%d" % (2 + a) for a in range(n) for _ in range(per)], True)
    elif mode == "idle":
        hold(port, [loopback(i) for i in range(int(sys.argv[3]))], False)
    elif mode == "mute":
        hold(port, [loopback(i) for i in range(int(sys.argv[3]))], False, REQUEST[:1])
    elif mode == "scrape":
        scrape(port, float(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "/metrics")


if __name__ == "__main__":
    main()
