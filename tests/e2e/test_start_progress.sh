#!/usr/bin/env bash
# A start that compiles every saved trigger again (an empty object cache,
# as after an upgrade changed the compiler) can outlast systemd's start
# timeout: while it compiles, histd asks for more time
# (EXTEND_TIMEOUT_USEC) and says how far it got (STATUS=), then sends
# READY=1 with the status cleared. A start with the cache warm compiles
# nothing and asks for none. systemd is stood in for by a datagram socket
# at NOTIFY_SOCKET (tests/package/test_service.sh has the real one).
source "$(dirname "$0")/lib.sh"
stop_histd() { kill -TERM "$HISTD_PID"; wait "$HISTD_PID" 2>/dev/null || true; HISTD_PID=; }
LISTENER=
test_cleanup() { if [ -n "$LISTENER" ]; then kill "$LISTENER" 2>/dev/null || true; fi; }
E=$MNT/events/syscalls/sys_enter_getppid/trigger
N=120  # 30 programs of 4: 30 compiles when the cache is empty

# Each message systemd would get, one per line ("\n" between its fields),
# until READY=1.
listen() {
  rm -f "$WORK/notify" "$WORK/notify.log"
  python3 - "$WORK/notify" "$WORK/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(300)
with open(sys.argv[2], "w") as log:
    while True:
        m = s.recv(4096).decode()
        log.write(m.replace("\n", "\\n") + "\n")
        log.flush()
        if m.startswith("READY=1"):
            break
PY
  LISTENER=$!
  for _ in $(seq 50); do [ -S "$WORK/notify" ] && break; sleep 0.1; done
}
start_notifying() {
  listen
  NOTIFY_SOCKET=$WORK/notify HISTD_START_TIMEOUT=240 histd_start
  wait "$LISTENER" || true
  LISTENER=
}

histd_start
# Every trigger a unit of its own shape (.buckets= is compiled in).
for i in $(seq 1 $N); do echo "hist:keys=common_pid.buckets=$((i + 1))" >>"$E"; done
expect_eq "$N triggers on one event" "$N" "$(grep -c '^hist:keys=common_pid.buckets=' "$E")"
stop_histd
rm -rf "$WORK/state/cache"

start_notifying
extends=$(grep -c '^EXTEND_TIMEOUT_USEC=30000000\\nSTATUS=starting: [0-9]* units\? compiled$' \
  "$WORK/notify.log" || true)
expect_eq "a cold restore asks systemd for more time while it compiles" "yes" "$([ "$extends" -ge 1 ] && echo yes || echo no)"
expect_eq "every message is that or the last, READY=1 clearing the status" "$((extends + 1))" \
  "$(grep -c . "$WORK/notify.log")"
expect_eq "READY=1 comes last" 'READY=1\nSTATUS=' "$(tail -n 1 "$WORK/notify.log")"
counts=$(sed -n 's/.*: \([0-9]*\) units\? compiled$/\1/p' "$WORK/notify.log" | tr '\n' ' ')
expect_eq "the count of compiled units only grows" "$(tr ' ' '\n' <<<"$counts" | grep . | sort -n | tr '\n' ' ')" "$counts"
expect_eq "and every trigger is restored" "$N" "$(grep -c '^hist:keys=common_pid.buckets=' "$E")"
stop_histd

start_notifying
expect_eq "a restore from a warm cache compiles nothing and says only READY=1" 'READY=1\nSTATUS=' \
  "$(cat "$WORK/notify.log")"
expect_eq "with every trigger" "$N" "$(grep -c '^hist:keys=common_pid.buckets=' "$E")"
finish
