#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Scrapes keep answering whatever other clients do (docs/reliability.md):
# slowloris from several addresses, a thousand idle connections from a
# thousand addresses and a thousand that sent a byte, oversized requests and
# bodies; what the exporter logs
# of them is a summary, not a line each; its user's other processes (there
# are none: it is refused one it would share) could not take its socket; an
# exporter that cannot run is said at start and the port answers 503 with
# why, instead of hanging.
source "$(dirname "$0")/lib.sh"
ATTACK=$(dirname "$0")/http_attackers.py
PORT=$(own_number 20000 20000)
ATTACKERS=()
test_cleanup() {
  for p in "${ATTACKERS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  if [ -n "${B_PID:-}" ] && kill -0 "$B_PID" 2>/dev/null; then kill -TERM "$B_PID"; wait "$B_PID" 2>/dev/null || true; fi
  mountpoint -q "$WORK/mnt-b" 2>/dev/null && fusermount3 -u "$WORK/mnt-b" 2>/dev/null || true
}
histd_start --metrics-listen "127.0.0.1:$PORT"
echo 'hist:keys=count.log2:name=attacked' >"$MNT/events/syscalls/sys_enter_write/trigger"
for _ in $(seq 50); do grep -q '^200' <(python3 "$ATTACK" scrape "$PORT" 0.1) && break; sleep 0.1; done
exporter=$(pgrep -P "$HISTD_PID" -x histd-exporter | head -1)
# Idle, with its connections gone, it wakes for nothing (test_idle.sh's
# rule for histd): its reaper sleeps until a deadline or a connection.
switches() { cat /proc/"$exporter"/task/*/status | awk '/ctxt_switches/ {s += $2} END {print s}'; }
sleep 1
before=$(switches); sleep 3
expect_eq "an idle exporter: no thread woke in 3 s" "0" "$(($(switches) - before))"

# attack MODE ARGS...: starts the attacker, waits for it to be ready.
attack() {
  local mode=$1; shift
  python3 "$ATTACK" "$mode" "$PORT" "$@" >"$WORK/$mode.out" 2>&1 &
  ATTACKERS+=($!)
  for _ in $(seq 300); do grep -q ready "$WORK/$mode.out" && return; sleep 0.1; done
  echo "FAIL: $mode did not get ready"; cat "$WORK/$mode.out"; exit 1
}
# Every scrape for SECONDS: answered 200 within 3 s.
# Otherwise says which were not: their status and milliseconds.
scrapes_answered() {
  python3 "$ATTACK" scrape "$PORT" "$1" >"$WORK/scrapes.out"
  awk '$1 != 200 || $2 > 3000 {bad++; which = which " " $1 "/" $2 "ms"}
    END {print (NR > 0 && bad == 0) ? "yes" : "no: " bad " of " NR ":" which}' "$WORK/scrapes.out"
}
# Connections past the cap are accepted and closed again: counted once
# that settles (a second at most), not while a burst is being turned away.
holds_at_most_the_cap() {
  local fds
  for _ in $(seq 10); do
    fds=$(ls "/proc/$exporter/fd" | wc -l)
    [ "$fds" -le 300 ] && break
    sleep 0.1
  done
  [ "$fds" -le 300 ] && echo yes || echo "no: $fds fds"
}
stop_attack() { kill -TERM "${ATTACKERS[-1]}"; wait "${ATTACKERS[-1]}" 2>/dev/null || true; }

# Slowloris: 64 connections from 127.0.0.2-5, a header byte a second each.
attack slowloris 4 16
expect_eq "beside 64 slowloris connections every scrape is answered within 3 s" "yes" "$(scrapes_answered 12)"
stop_attack
expect_eq "which were closed for want of a whole request (each at least once)" "yes" \
  "$(awk '/^closed/ {print ($2 >= 64) ? "yes" : "no: " $2}' "$WORK/slowloris.out")"

# A thousand idle connections, each from an address of its own. Silent,
# they wait in the kernel (TCP_DEFER_ACCEPT) and cost the exporter nothing
# until they send a byte or the wait ends (7 s: SYN-ACKs at 1, 2 and 4 s).
attack idle 1000
before=$(switches); sleep 2
expect_eq "1000 silent connections: the exporter did not wake for them in 2 s" "0" "$(($(switches) - before))"
expect_eq "beside 1000 idle connections every scrape is answered within 3 s" "yes" "$(scrapes_answered 8)"
expect_eq "the exporter holds at most its cap of 256 connections (and a few)" "yes" "$(holds_at_most_the_cap)"
stop_attack

# A thousand that each sent a byte are handed over at once: at the cap
# each new one takes an idle one's place, and scrapes still come first.
attack mute 1000
expect_eq "beside 1000 connections that sent a byte every scrape is answered within 3 s" "yes" \
  "$(scrapes_answered 8)"
expect_eq "and the exporter holds at most its cap of 256 connections (and a few)" "yes" "$(holds_at_most_the_cap)"
stop_attack

# Oversized and bodied requests: refused, and nothing else is held up.
big=$(python3 - "$PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
try:
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n")
except OSError:
    pass
head = b""
try:
    head = s.recv(64)
except OSError:
    pass
print(head.split(b"\r\n")[0].decode() or "closed")
PY
)
expect_eq "a 200 KB header is refused" "yes" "$(case "$big" in *431* | closed) echo yes ;; *) echo "no: $big" ;; esac)"
body=$(python3 - "$PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nab")
print(s.recv(64).split(b"\r\n")[0].decode())
PY
)
expect_eq "a request with a body is refused at once" "HTTP/1.1 413 Content Too Large" "$body"
expect_eq "and scrapes go on" "yes" "$(scrapes_answered 1)"

# The log: a line of each kind and then a count, not a line a connection.
sleep 1
lines=$(grep -c '^histd-exporter: ' "$WORK/histd.log" || true)
expect_eq "the exporter's log is a few lines, not one per connection ($lines)" "yes" \
  "$([ "$lines" -le 10 ] && echo yes || echo no)"
expect_eq "naming what it closed" "yes" \
  "$(grep -q '^histd-exporter: connection closed: no whole request in time (127.0.0.' "$WORK/histd.log" && echo yes)"

# A process of the exporter's user could not take its listening socket.
expect_eq "pidfd_getfd of its socket, as its user: refused" "EPERM" "$(setpriv --reuid="$EXPORTER_USER" \
  --regid="$EXPORTER_USER" --clear-groups /usr/bin/python3 - "$exporter" <<'PY'
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pidfd = libc.syscall(434, int(sys.argv[1]), 0)  # pidfd_open
fd = libc.syscall(438, pidfd, 3, 0) if pidfd >= 0 else -1  # pidfd_getfd
print("took it" if fd >= 0 else errno.errorcode[ctypes.get_errno()])
PY
)"

# An exporter that cannot run: said at start, and the port answers 503.
mkdir -p "$WORK/bin" "$WORK/mnt-b" "$WORK/b"
cp "$HISTD_BIN" "$(dirname "$HISTD_BIN")/histd-exporter" "$WORK/bin/"
chmod 700 "$WORK/bin/histd-exporter"
PB=$((PORT + 1))
"$WORK/bin/histd" --foreground --mount "$WORK/mnt-b" --socket "$WORK/b/histd.sock" --state-dir "$WORK/b/state" --pin-dir "" \
  --config-dir "" --metrics-listen "127.0.0.1:$PB" --metrics-user "$EXPORTER_USER" >"$WORK/b.log" 2>&1 &
B_PID=$!
for _ in $(seq 100); do grep -q "metrics exporter" "$WORK/b.log" && break; sleep 0.1; done
expect_eq "histd says why the exporter cannot run" \
  "histd: the metrics exporter: cannot run histd-exporter as $EXPORTER_USER: Permission denied; starting it again in 1 s" \
  "$(grep -m1 'metrics exporter' "$WORK/b.log")"
answer=$(python3 - "$PB" <<'PY'
import socket, sys, time
start = time.monotonic()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
data = b""
while chunk := s.recv(4096):
    data += chunk
print(data.split(b"\r\n")[0].decode(), "|", data.split(b"\r\n\r\n", 1)[-1].decode().strip(),
      "|", "fast" if time.monotonic() - start < 2 else "slow")
PY
)
expect_eq "the port answers 503 with why, at once" \
  "HTTP/1.1 503 Service Unavailable | histd-exporter is not running: cannot run histd-exporter as $EXPORTER_USER: Permission denied; histd starts it again in 1 s | fast" \
  "$(sed 's/again in [0-9]* s/again in 1 s/' <<<"$answer")"
finish
