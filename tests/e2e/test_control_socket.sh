#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The control socket: what histd refuses to take as its
# socket, a stale socket replaced, and clients that trickle, stall or never
# read: histctl is still answered within a second, and SIGTERM does not wait
# for them.
source "$(dirname "$0")/lib.sh"
SOCK=$WORK/histd.sock
HISTCTL=("$HISTCTL_BIN" --socket "$SOCK")

# try_histd OPTION...: a histd that should refuse to start; sets rc.
try_histd() {
  rc=0
  timeout 20 "$HISTD_BIN" --foreground --mount "$WORK/mnt2" --state-dir "$WORK/state2" --pin-dir "" "$@" \
    >"$WORK/refused.log" 2>&1 || rc=$?
}
mounted() { mountpoint -q "$WORK/mnt2" 2>/dev/null && echo yes || echo no; }

# --- what is at --socket, or its directory, is not histd's -------------------
echo precious >"$SOCK"
try_histd --socket "$SOCK"
expect_eq "a regular file at --socket: histd exits 1" "1" "$rc"
expect_eq "saying why" "histd: $SOCK exists and is a regular file: histd replaces only a stale socket" \
  "$(tail -1 "$WORK/refused.log")"
expect_eq "the file is kept" "precious" "$(cat "$SOCK")"
expect_eq "nothing is mounted" "no" "$(mounted)"
rm "$SOCK"

ln -s "$WORK/target" "$SOCK"
try_histd --socket "$SOCK"
expect_eq "a symbolic link at --socket: histd exits 1" "1" "$rc"
expect_eq "saying why" "histd: $SOCK exists and is a symbolic link: histd replaces only a stale socket" \
  "$(tail -1 "$WORK/refused.log")"
expect_eq "the link is kept, its target not made" "$WORK/target no" \
  "$(readlink "$SOCK") $([ -e "$WORK/target" ] && echo yes || echo no)"
rm "$SOCK"

mkdir -m 0777 "$WORK/open"
try_histd --socket "$WORK/open/histd.sock"
expect_eq "a socket directory anyone may write: histd exits 1" "1" "$rc"
expect_eq "saying why" \
  "histd: refusing the control socket $WORK/open/histd.sock: $WORK/open is writable by group or others (mode 0777)" \
  "$(tail -1 "$WORK/refused.log")"
expect_eq "nothing is made there" "" "$(ls -A "$WORK/open")"

# --- a live histd's socket, and a dead one's ---------------------------------
histd_start
try_histd --socket "$SOCK"
expect_eq "another histd's live socket: histd exits 1" "1" "$rc"
expect_eq "saying why, naming it" "histd: another histd (pid $HISTD_PID) listens on $SOCK" "$(tail -1 "$WORK/refused.log")"
expect_eq "nothing is mounted" "no" "$(mounted)"
expect_eq "and the first histd still answers" "" "$("${HISTCTL[@]}" list 2>&1)"

kill -KILL "$HISTD_PID"; wait "$HISTD_PID" 2>/dev/null || true
expect_eq "a killed histd leaves its socket" "socket" "$(stat -c %F "$SOCK")"
histd_start
expect_eq "the next histd replaces it" "" "$("${HISTCTL[@]}" list 2>&1)"

# --- stuck clients -----------------------------------------------------------
# A table whose hist text is ~450 KB, more than a socket's buffers hold:
# writes of 1 to 10000 bytes, each its own key.
W=$MNT/events/syscalls/sys_enter_write
echo 'hist:keys=count:size=16384' >"$W/trigger"
python3 -c 'import os; fd = os.open("/dev/null", os.O_WRONLY); [os.write(fd, b"x" * n) for n in range(1, 10001)]'
expect_eq "the table is bigger than a socket buffer" "yes" "$([ "$(wc -c <"$W/hist")" -gt 400000 ] && echo yes || echo no)"

# Three clients: one connects and sends nothing, one asks for the table and
# never reads, one trickles a byte every 100 ms.
cat >"$WORK/stuck.py" <<'PY'
import json, socket, struct, sys, time
def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    return s
silent = connect()
unread = connect()
body = json.dumps({"op": "show", "event": "syscalls:sys_enter_write"}).encode()
unread.sendall(struct.pack("<I", len(body)) + body)
trickler = connect()
trickler.sendall(struct.pack("<I", 1000))
print("ready", flush=True)
while True:
    try:
        trickler.send(b" ")
    except OSError:
        pass
    time.sleep(0.1)
PY
python3 "$WORK/stuck.py" "$SOCK" >"$WORK/stuck.out" &
CHILD=$!
for _ in $(seq 50); do grep -q ready "$WORK/stuck.out" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
slowest=0
for i in 1 2 3 4 5; do
  start=$(date +%s%N)
  out=$(timeout 10 "${HISTCTL[@]}" list 2>&1) || true
  ms=$((($(date +%s%N) - start) / 1000000))
  [ "$ms" -gt "$slowest" ] && slowest=$ms
  expect_eq "histctl list $i, with three stuck clients" "syscalls:sys_enter_write hist:keys=count:vals=hitcount:sort=hitcount:size=16384 [active]" "$out"
  sleep 0.2
done
expect_eq "each answered within a second" "yes" "$([ "$slowest" -lt 1000 ] && echo yes || echo no)"
echo "slowest histctl list: ${slowest} ms"

# SIGTERM with the three still stuck: histd ends at once.
start=$(date +%s%N)
kill -TERM "$HISTD_PID"
for _ in $(seq 30); do kill -0 "$HISTD_PID" 2>/dev/null || break; sleep 0.1; done
ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "SIGTERM does not wait for stuck clients (histd gone within 3 s)" "yes" "$(kill -0 "$HISTD_PID" 2>/dev/null && echo no || echo yes)"
wait "$HISTD_PID" 2>/dev/null || true
echo "histd stopped in ${ms} ms"
expect_eq "and removes its socket" "no" "$([ -e "$SOCK" ] && echo yes || echo no)"
kill -KILL "$CHILD" 2>/dev/null; wait "$CHILD" 2>/dev/null || true
finish
