#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Activation of the k-th trigger on one event, split:
# the write of the k-th `hist:keys=common_pid` trigger (each with its own
# filter, so never cached) to sys_enter_getppid, and histd-cc's compile of
# the unit that write changed (the last program of the event's chain: the
# source histd generated, fetched over the control socket and compiled by
# a histd-cc of its own, best of 3); the rest of the write is planning,
# loading and installing. One run, k = 1..40, printed for 1, 2, 4, 8, 16,
# 24, 32, 40. HISTD_OPTS: more options for histd (say
# "--triggers-per-program 0": one program per event, as before chains;
# it refuses the 21st trigger).
#   bash bench/activation_split.sh   (as root, from a built tree)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/rounds.sh
B=$PWD/build
WORK=$(mktemp -d /tmp/histd-split.XXXXXX)
HISTD=
trap bench_cleanup EXIT
# shellcheck disable=SC2086
start_histd ${HISTD_OPTS:-}
sleep 2
python3 - "$B" "$WORK" "$PWD/bpf" <<'PY'
import json, socket, struct, subprocess, sys, time
B, W, INCLUDE = sys.argv[1:4]
T = f"{W}/mnt/events/syscalls/sys_enter_getppid/trigger"

def read_exact(s, n):
    d = b""
    while len(d) < n:
        chunk = s.recv(n - len(d))
        if not chunk: raise SystemExit("connection closed")
        d += chunk
    return d

def source():
    s = socket.socket(socket.AF_UNIX); s.connect(f"{W}/sock")
    b = json.dumps({"op": "source", "event": "syscalls:sys_enter_getppid"}).encode()
    s.sendall(struct.pack("<I", len(b)) + b)
    n, = struct.unpack("<I", read_exact(s, 4))
    # The chain's programs come after the event program, each marked.
    out, marker = json.loads(read_exact(s, n))["output"], "/* histd: chain slot "
    return out.rsplit(marker, 1)[1].split("\n", 1)[1] if marker in out else out

mine, theirs = socket.socketpair()
cc = subprocess.Popen([f"{B}/histd-cc", "--fd", str(theirs.fileno())], pass_fds=[theirs.fileno()])
theirs.close()
ARGS = ["-O2", "-gdwarf-4", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror", "-Wno-unused-function",
        "-Wno-parentheses-equality", f"-I{INCLUDE}", "-idirafter", "/usr/include/x86_64-linux-gnu",
        "-c", "u.c", "-o", "u.o"]

def compile_ms(text):
    best = 1e9
    for i in range(3):
        parts = ARGS + []
        out = struct.pack("I", len(parts)) + b"".join(struct.pack("I", len(x)) + x.encode() for x in parts)
        for x in ["u.c", text + f"/* {i} {time.time()} */\n"]:
            out += struct.pack("I", len(x.encode())) + x.encode()
        t = time.perf_counter()
        mine.sendall(out)
        status, = struct.unpack("I", read_exact(mine, 4))
        n, = struct.unpack("I", read_exact(mine, 4))
        read_exact(mine, n)
        if status != 0: raise SystemExit("histd-cc did not compile the unit")
        best = min(best, (time.perf_counter() - t) * 1e3)
    return best

print(" k  write ms  compile ms  rest ms")
for k in range(1, 41):
    t = time.perf_counter()
    try:
        with open(T, "a") as f:
            f.write(f"hist:keys=common_pid:vals=hitcount if common_pid != {k}{int(time.time() * 1e6) % 1000000}")
    except OSError as e:
        print(f"{k:2d} refused: {e.strerror}")
        break
    w = (time.perf_counter() - t) * 1e3
    c = compile_ms(source())
    if k in (1, 2, 4, 8, 16, 20, 24, 32, 40):
        print(f"{k:2d} {w:9.1f} {c:11.1f} {w - c:8.1f}")
mine.close()
cc.wait()
PY
