#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# systemd's view of a start: from its first moment histd asks for more time
# (EXTEND_TIMEOUT_USEC, 10 s from each message) at a steady rhythm and says
# what it is doing (STATUS=: the phase, and how many units it compiled), so
# that even TimeoutStartSec=1s holds on a busy machine; then READY=1 with
# the status cleared. A start that compiles every saved trigger again (an
# empty object cache, as after an upgrade changed the compiler) shows the
# count growing; a warm one compiles nothing. systemd is stood in for by a
# datagram socket at NOTIFY_SOCKET (tests/package/test_service.sh has the
# real one, under stress-ng).
source "$(dirname "$0")/lib.sh"
stop_histd() { kill -TERM "$HISTD_PID"; wait "$HISTD_PID" 2>/dev/null || true; HISTD_PID=; }
LISTENER=
test_cleanup() { if [ -n "$LISTENER" ]; then kill "$LISTENER" 2>/dev/null || true; fi; }
E=$MNT/events/syscalls/sys_enter_getppid/trigger
N=120  # 30 programs of 4: 30 compiles when the cache is empty

# Each message systemd would get, one per line ("\n" between its fields),
# until READY=1; in notify.at, when each came (ms since the epoch).
listen() {
  rm -f "$WORK/notify" "$WORK/notify.log" "$WORK/notify.at"
  python3 - "$WORK/notify" "$WORK/notify.log" "$WORK/notify.at" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(300)
with open(sys.argv[2], "w") as log, open(sys.argv[3], "w") as at:
    while True:
        m = s.recv(4096).decode()
        at.write("%d\n" % (time.time() * 1000))
        log.write(m.replace("\n", "\\n") + "\n")
        log.flush()
        at.flush()
        if m.startswith("READY=1"):
            break
PY
  LISTENER=$!
  for _ in $(seq 50); do [ -S "$WORK/notify" ] && break; sleep 0.1; done
}
start_notifying() {
  listen
  STARTED_MS=$(($(date +%s%N) / 1000000))
  NOTIFY_SOCKET=$WORK/notify HISTD_START_TIMEOUT=240 histd_start
  wait "$LISTENER" || true
  LISTENER=
}
EXTEND='EXTEND_TIMEOUT_USEC=10000000\\nSTATUS=starting'

histd_start
# Every trigger a unit of its own shape (.buckets= is compiled in).
for i in $(seq 1 $N); do echo "hist:keys=common_pid.buckets=$((i + 1))" >>"$E"; done
expect_eq "$N triggers on one event" "$N" "$(grep -c '^hist:keys=common_pid.buckets=' "$E")"
stop_histd
rm -rf "$WORK/state/cache"

start_notifying
first=$(head -1 "$WORK/notify.at")
expect_eq "the first message asks for more time, at once (within 1 s of the start)" "yes" \
  "$([ $((first - STARTED_MS)) -lt 1000 ] && head -1 "$WORK/notify.log" | grep -q "^${EXTEND}\$" &&
    echo yes || echo "no: $((first - STARTED_MS)) ms, $(head -1 "$WORK/notify.log")")"
expect_eq "every message but the last asks for 10 s more, naming the phase" "0" \
  "$(head -n -1 "$WORK/notify.log" | grep -vc "^${EXTEND}" || true)"
compiling=$(grep -c "^${EXTEND}: restoring saved triggers, [0-9]* units\? compiled\$" "$WORK/notify.log" || true)
expect_eq "a cold restore says so while it compiles" "yes" "$([ "$compiling" -ge 1 ] && echo yes || echo no)"
# Each message gives 10 s more, and systemd ends a start that outlives its
# extension: that is the contract, checked as systemd would. How steady the
# 250 ms rhythm is on a loaded machine is a figure, printed, not asserted.
gap=$(awk 'NR > 1 && $1 - last > max {max = $1 - last} {last = $1} END {print max + 0}' "$WORK/notify.at")
echo "   (the longest time between two messages: $gap ms; histd sends one every 250 ms)"
expect_eq "never a whole extension (10 s) without a message" "yes" \
  "$([ "$gap" -lt 10000 ] && echo yes || echo "no: $gap ms")"
expect_eq "READY=1 comes last" 'READY=1\nSTATUS=' "$(tail -n 1 "$WORK/notify.log")"
counts=$(sed -n 's/.*, \([0-9]*\) units\? compiled$/\1/p' "$WORK/notify.log" | tr '\n' ' ')
expect_eq "the count of compiled units only grows" "$(tr ' ' '\n' <<<"$counts" | grep . | sort -n | tr '\n' ' ')" "$counts"
expect_eq "and every trigger is restored" "$N" "$(grep -c '^hist:keys=common_pid.buckets=' "$E")"
stop_histd

start_notifying
expect_eq "a restore from a warm cache compiles nothing" "" \
  "$(grep -o ', [1-9][0-9]* units\? compiled' "$WORK/notify.log" || true)"
expect_eq "and ends READY=1" 'READY=1\nSTATUS=' "$(tail -n 1 "$WORK/notify.log")"
expect_eq "with every trigger" "$N" "$(grep -c '^hist:keys=common_pid.buckets=' "$E")"
finish
