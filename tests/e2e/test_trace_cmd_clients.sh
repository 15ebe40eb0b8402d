#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# trace-cmd's other commands on histd's tree, unchanged, in a namespace
# where the tree is the tracefs (in_ns, lib.sh): `list -C` and `stat` read
# the clock and the buffers; `start` with a hist trigger (-R) beside the
# recording of the same events, then `stop` and `extract`: the histogram
# counts what the recording holds; `record -e all` for a second; `record
# -P` of one of two tasks writing alike (through set_event_pid), and
# `stream` of a workload's writes for a few seconds.
source "$(dirname "$0")/lib.sh"
command -v trace-cmd >/dev/null || { echo "FAIL: trace-cmd is needed (apt-get install trace-cmd)"; exit 1; }
histd_start --max-triggers 64
cpus=$(ls -d "$MNT"/per_cpu/cpu* | wc -l)

expect_eq "trace-cmd list -C: the clock histd stamps with" "[mono]" "$(in_ns "$MNT" trace-cmd list -C)"
stat=$(in_ns "$MNT" trace-cmd stat 2>&1)
after() { grep -A1 -F "$1" <<<"$stat" | tail -1 | tr -d ' '; }
expect_eq "trace-cmd stat: each CPU's buffer" "4096" "$(after 'Buffer size in kilobytes (per cpu):')"
expect_eq "  and all of them" "$((4096 * cpus))" "$(after 'Buffer total size in kilobytes:')"

# A hist trigger beside the recording of the same writes: the same program
# sees each write for both, so the histogram counts what was recorded.
COMM=$(own_comm tcli)
DD=$(comm_link "$COMM" dd)
SIZE=$(own_number 1000 3000)
in_ns "$MNT" trace-cmd start -e syscalls:sys_enter_write -f "count == $SIZE" \
  -R "hist:keys=common_comm:vals=count if count == $SIZE" >"$WORK/start.log" 2>&1 ||
  { echo "FAIL: trace-cmd start:"; cat "$WORK/start.log"; }
"$DD" if=/dev/zero of=/dev/null bs="$SIZE" count=5 status=none
hist=$(cat "$MNT/events/syscalls/sys_enter_write/hist")
in_ns "$MNT" trace-cmd stop >/dev/null 2>&1
(cd "$WORK" && in_ns "$MNT" trace-cmd extract -o "$WORK/hist.dat") >"$WORK/extract.log" 2>&1 ||
  { echo "FAIL: trace-cmd extract:"; cat "$WORK/extract.log"; }
hits=$(sed -n "s/^{ common_comm: $COMM *} hitcount: *\([0-9]*\) .*/\1/p" <<<"$hist")
recorded=$(trace-cmd report -i "$WORK/hist.dat" 2>/dev/null | grep -c "sys_enter_write: .*count: $(printf '0x%08x' "$SIZE")\$" || true)
expect_eq "trace-cmd start -R: a histogram of the writes" "yes" \
  "$([ "${hits:-0}" -ge 1 ] && [ "$hits" -le 5 ] && echo yes || echo "no: $hist")"
expect_eq "  which counts what the recording holds" "$hits" "$recorded"
in_ns "$MNT" trace-cmd reset >/dev/null 2>&1 || true
expect_eq "trace-cmd reset takes the trigger away" "" \
  "$(grep -v '^#' "$MNT/events/syscalls/sys_enter_write/trigger")"

# record -e all for a second: histd enables as many events as its trigger
# limit allows (each is a BPF program, and a write past the limit is
# refused with ENOSPC), trace-cmd records them and ends; none stays enabled.
rc=0
(cd "$WORK" && in_ns "$MNT" timeout -k 10 120 trace-cmd record -o "$WORK/all.dat" -e all sleep 1) \
  >"$WORK/all.log" 2>&1 || rc=$?
expect_eq "trace-cmd record -e all ends, with its file" "0 yes" "$rc $([ -s "$WORK/all.dat" ] && echo yes)"
[ "$rc" = 0 ] || tail -5 "$WORK/all.log"
expect_eq "  and leaves none enabled" "0" "$(cat "$MNT/events/enable")"

# record -P PID: trace-cmd finds set_event_pid, lists PID there (not the
# recorders it forks) and records until PID ends: of two tasks making the
# same writes, the recording holds the named one's and not the other's.
# -P takes a pid of trace-cmd's own PID namespace, and waits for that task;
# set_event_pid holds the machine's pids, as the kernel's does. In a child
# namespace (a container) the two differ: there the check is skipped. Only
# here does a test name a task by $!, and only in the first namespace.
if in_child_pid_namespace; then
  echo "skipped: trace-cmd record -P (a child PID namespace's pids are not the events')"
else
  PKEEP=$(own_comm tpkeep)
  PDROP=$(own_comm tpdrop)
  PSIZE=$(own_number 3000 1000)
  writer() {
    "$(comm_link "$1" bash)" -c "until [ -e '$WORK/pgo' ]; do sleep 0.05; done
      for _ in 1 2 3; do printf '%*s' $PSIZE x >/dev/null; done; sleep 0.5" &
  }
  writer "$PKEEP"
  KEEP_TASK=$!
  writer "$PDROP"
  DROP_TASK=$!
  (cd "$WORK" && in_ns "$MNT" timeout -k 10 120 trace-cmd record -P "$KEEP_TASK" -e syscalls:sys_enter_write \
    -f "count == $PSIZE" -o "$WORK/pid.dat") >"$WORK/pid.log" 2>&1 &
  REC=$!
  # Until trace-cmd has listed the task and enabled the event; then a
  # second for its recorders to open their buffers through FUSE.
  for _ in $(seq 300); do
    [ "$(cat "$MNT/set_event_pid")" = "$KEEP_TASK" ] &&
      [ "$(cat "$MNT/events/syscalls/sys_enter_write/enable")" = 1 ] && break
    sleep 0.1
  done
  sleep 1
  touch "$WORK/pgo"
  wait "$KEEP_TASK" "$DROP_TASK"
  rc=0
  wait "$REC" || rc=$?
  expect_eq "trace-cmd record -P ends with the task it names, with its file" "0 yes" \
    "$rc $([ -s "$WORK/pid.dat" ] && echo yes)"
  [ "$rc" = 0 ] || tail -5 "$WORK/pid.log"
  trace-cmd report -i "$WORK/pid.dat" >"$WORK/pid.report" 2>/dev/null || true
  writes_by() { grep -c "^ *$1-[0-9]* .*sys_enter_write: .*count: $(printf '0x%08x' "$PSIZE")\$" "$WORK/pid.report" || true; }
  kept=$(writes_by "$PKEEP")
  # A classic tracepoint's program is skipped while another BPF program
  # runs on its CPU: a write may be missed, not all.
  expect_eq "  the named task's writes are recorded" "yes" \
    "$([ "$kept" -ge 1 ] && [ "$kept" -le 3 ] && echo yes || echo "no ($kept)")"
  expect_eq "  the other task's are not" "0" "$(writes_by "$PDROP")"
  expect_eq "  and set_event_pid is as trace-cmd found it" "" "$(cat "$MNT/set_event_pid")"
fi

# stream: the events printed as they come, for 6 seconds, through stdbuf
# so that each line is out as it is printed. A SIGINT (timeout's, run in
# the namespace: trace-cmd is its child) ends trace-cmd's reading loop,
# but its last read waits for one more record from its recorders, which
# a quiet, filtered event never sends (trace-cmd 3.1.6 waits so on the
# kernel's own tracefs too): timeout's SIGKILL, 3 seconds later, ends it
# and its recorders, and the test disables what it left enabled.
# Filtered on the workload's size: what stream prints are writes too.
# stream reads the tasks' comms when it starts: the workload's is named
# after it (<...>), so its lines are found by their size.
SSIZE=$(own_number 4000 1000)
(sleep 3; dd if=/dev/zero of=/dev/null bs="$SSIZE" count=3 status=none) &
WRITER=$!
rc=0
in_ns "$MNT" timeout -s INT -k 3 6 stdbuf -oL trace-cmd stream -e syscalls:sys_enter_write -f "count == $SSIZE" \
  >"$WORK/stream.out" 2>"$WORK/stream.err" || rc=$?
wait "$WRITER"
streamed=$(grep -c "sys_enter_write: .*count: $(printf '0x%08x' "$SSIZE")\$" "$WORK/stream.out" || true)
expect_eq "trace-cmd stream is ended by its timeout" "yes" \
  "$([ "$rc" = 124 ] || [ "$rc" = 137 ] && echo yes || echo "no ($rc)")"
expect_eq "  having printed the workload's writes as they came" "yes" \
  "$([ "$streamed" -ge 1 ] && [ "$streamed" -le 3 ] && echo yes || { echo "no ($streamed)"; tail -3 "$WORK/stream.err"; })"
echo 0 >"$MNT/events/enable"

finish
