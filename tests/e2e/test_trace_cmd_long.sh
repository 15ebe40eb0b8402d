#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A trace-cmd recording longer than its buffers hold: Debian's trace-cmd,
# unchanged, records with `-b 64` (64 KiB a CPU) a workload that writes at a
# modest rate for a few seconds, several times what the buffers hold, and
# `trace-cmd report` shows every write: the recorder drains the per-CPU raw
# buffers while it records (it splices them after a select() says they are
# readable), not only when it stops. A hist trigger on the same writes
# counts what the programs saw: the same program records each write, so the
# recording must hold as many (a write the kernel ran no BPF program for is
# missed by both, and shown as Missed). poll() on trace_pipe_raw waits for a
# page of events.
#
# trace-cmd runs in a mount namespace of its own where histd's tree is the
# tracefs (in_ns, lib.sh).
source "$(dirname "$0")/lib.sh"
command -v trace-cmd >/dev/null || { echo "FAIL: trace-cmd is needed (apt-get install trace-cmd)"; exit 1; }
histd_start

COMM=$(own_comm tlong)
# The system's python3 itself (a pyenv shim would look for its own name).
PY=$(comm_link "$COMM" /usr/bin/python3)
N=3000
W=$MNT/events/syscalls/sys_enter_write
# -F: the workload's events only (in a child PID namespace, a container,
# trace-cmd's pids are not the ones events carry: every task, filtered on
# the size).
only_workload=(-F)
if in_child_pid_namespace; then only_workload=(); fi

# long_record TAG SIZE: trace-cmd record -b 64 of N writes of SIZE bytes, a
# millisecond apart (about 45 bytes of record each, several times 64 KiB in
# all), into WORK/TAG.dat; checks that the report has every one the
# programs saw.
long_record() {
  local tag=$1 size=$2 hex recorded hist hits missed
  hex=$(printf '0x%08x' "$size")
  echo "hist:keys=common_comm:vals=hitcount if count == $size" >"$W/trigger"
  (cd "$WORK" && in_ns "$MNT" timeout -k 10 120 trace-cmd record -b 64 -o "$WORK/$tag.dat" \
    -e syscalls:sys_enter_write -f "count == $size" "${only_workload[@]}" "$PY" -c "
import os, time
fd = os.open('/dev/null', os.O_WRONLY)
b = b'x' * $size
for _ in range($N):
    os.write(fd, b)
    time.sleep(0.001)
") >"$WORK/$tag.log" 2>&1 || { echo "FAIL: trace-cmd record:"; tail -20 "$WORK/$tag.log"; }
  trace-cmd report -i "$WORK/$tag.dat" >"$WORK/$tag.report" 2>"$WORK/$tag.err" || true
  recorded=$(awk -v c="$COMM" -v h="count: $hex" 'index($0, c) && index($0, "sys_enter_write:") && index($0, h) { n++ }
    END { print n + 0 }' "$WORK/$tag.report")
  hist=$(cat "$W/hist")
  hits=$(sed -n "s/^{ common_comm: $COMM *} hitcount: *\([0-9]*\)$/\1/p" <<<"$hist")
  missed=$(sed -n 's/^ *Missed: *\([0-9]*\)$/\1/p' <<<"$hist")
  echo "$tag: writes $N, seen by the programs ${hits:-0}, missed ${missed:-0}, recorded $recorded"
  expect_eq "$tag: the programs saw the writes (but those shown missed)" "yes" \
    "$([ $((${hits:-0} + ${missed:-0})) -ge "$N" ] && [ "${hits:-0}" -ge $((N / 2)) ] && echo yes || echo "no: $hist")"
  expect_eq "$tag: trace-cmd report shows every write they saw" "${hits:-0}" "$recorded"
  expect_eq "$tag:   none lost to the buffer's overwriting" "" "$(grep -i 'lost' "$WORK/$tag.err" "$WORK/$tag.log" || true)"
  : >"$W/trigger"
}
SIZE=$(own_number 1000 3000)
long_record first "$SIZE"
expect_eq "trace-cmd record -b 64 set each CPU's buffer" "64" "$(cat "$MNT/buffer_size_kb")"
# Again, on files the first recording's splices went through.
long_record again $((SIZE + 1))
echo 0 >"$W/enable"

# poll() on a CPU's trace_pipe_raw: not readable while the CPU has no page
# of events, readable once one fills; then a read takes a page.
echo 4096 >"$MNT/buffer_size_kb"
echo 1 >"$MNT/tracing_on"
cat "$MNT/per_cpu/cpu0/trace_pipe_raw" >/dev/null &  # drains what is there
drain=$!
sleep 1
kill "$drain" 2>/dev/null || true
wait "$drain" 2>/dev/null || true
python3 - "$MNT/per_cpu/cpu0/trace_pipe_raw" >"$WORK/poll.out" 2>&1 <<'PY' &
import os, select, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
p = select.poll()
p.register(fd, select.POLLIN)
print("before:", "readable" if p.poll(1000) else "not readable")
t = time.monotonic()
ready = p.poll(20000)
waited = time.monotonic() - t
print("after a wait:" if waited > 0.5 else "at once:", "readable" if ready else "not readable")
print("read:", len(os.read(fd, 4096)), "bytes")
PY
poller=$!
sleep 2
echo 1 >"$W/enable"
# Some 200 records of 44 bytes: more than a page.
taskset -c 0 dd if=/dev/zero of=/dev/null bs=$((SIZE + 2)) count=200 status=none
for _ in $(seq 100); do kill -0 "$poller" 2>/dev/null || break; sleep 0.1; done
kill "$poller" 2>/dev/null || true
wait "$poller" || true
echo 0 >"$W/enable"
expect_eq "poll() on trace_pipe_raw waits for a page" "before: not readable
after a wait: readable
read: 4096 bytes" "$(cat "$WORK/poll.out")"
expect_eq "trace_pipe_raw's size reads 0, as tracefs's" "0" "$(stat -c %s "$MNT/per_cpu/cpu0/trace_pipe_raw")"
finish
