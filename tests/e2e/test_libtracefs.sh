#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# libtracefs, the library tools such as sqlhist and trace-cmd drive tracefs
# with, pointed at histd's tree (tracefs_set_tracing_dir): tracefs_sql()
# turns SQL into a synthetic event and the hist triggers that generate it,
# written through dynamic_events and the trigger files; a latency histogram
# on that event then counts real wakeups. The hist API
# (tracefs_hist_alloc, tracefs_hist_start) in an instance the client makes
# (tracefs_instance_create), and tracefs_synth_alloc, work the same. The
# clients are tests/e2e/tracefs_sql.c and tracefs_hist.c (targets
# histd_tracefs_sql and histd_tracefs_hist, next to histd).
source "$(dirname "$0")/lib.sh"
CLIENT=${HISTD_TRACEFS_SQL:-$(dirname "$HISTD_BIN")/histd_tracefs_sql}
[ -x "$CLIENT" ] || { echo "FAIL: no client at $CLIENT (build histd_tracefs_sql)"; exit 1; }
histd_start
# A client's readiness: its line, or its end. libtracefs reads every event's
# format through the tree first and the triggers compile: seconds on a
# loaded machine (two CI tests beside it), so the wait is long and says
# what the tree held if it ends without the line.
await_client() {  # FILE LINE PID WHAT
  for _ in $(seq 600); do grep -q "^$2\$" "$1" && return; kill -0 "$3" 2>/dev/null || break; sleep 0.1; done
  echo "FAIL: $4: $(kill -0 "$3" 2>/dev/null && echo 'still running' || echo 'ended'):"
  cat "$1"
  echo "dynamic_events: $(cat "$MNT/dynamic_events")"
  echo "error_log: $(cat "$MNT/error_log")"
  exit 1
}
# A string (end.next_comm) travels in a string variable of the matching
# trigger to the synthetic event's char[] field.
SQL='SELECT start.pid, end.next_comm AS comm, (end.TIMESTAMP_USECS - start.TIMESTAMP_USECS) AS lat FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid'
# The client creates, then waits on a fifo before it destroys.
mkfifo "$WORK/go-on"
"$CLIENT" "$MNT" wakeup_lat "$SQL" <"$WORK/go-on" >"$WORK/client.out" 2>&1 &
client=$!
exec 7>"$WORK/go-on"
# The synthetic events dynamic_events lists: its probes are the kernel's,
# which tests running beside this one make and remove too.
synthetic_lines() { grep '^s:' "$MNT/dynamic_events" || true; }
await_client "$WORK/client.out" created "$client" create
expect_eq "the synthetic event, through dynamic_events" "s:synthetic/wakeup_lat	pid_t pid; char[16] comm; u64 lat" \
  "$(synthetic_lines)"
expect_eq "the start trigger on sched_waking" "1" "$(grep -c '^hist:keys=pid:' "$MNT/events/sched/sched_waking/trigger")"
expect_eq "the matching trigger on sched_switch" "1" \
  "$(grep -c '^hist:keys=next_pid:.*:onmatch(sched.sched_waking).trace(wakeup_lat,' "$MNT/events/sched/sched_switch/trigger")"
expect_eq "nothing refused" "" "$(cat "$MNT/error_log")"

# A histogram per task, and wakeups the test makes itself: a child that
# waits 20 times for 10 ms (bash's own read, on a fifo nobody writes) is
# woken 20 times.
echo 'hist:keys=pid' >"$MNT/events/synthetic/wakeup_lat/trigger"
mkfifo "$WORK/never"
child_start "exec 3<>'$WORK/never'; for i in \$(seq 20); do read -t 0.01 -u 3 _ || true; done"
# The child's pid as the tables show it (the machine's; $CHILD is another in
# a container): from its open of the fifo (lib.sh, shown_pid).
shown_pid_on syscalls/sys_enter_openat "$CHILD_COMM"
child_go
pid=$(shown_pid syscalls/sys_enter_openat "$CHILD_COMM")
sleep 0.3
rows=$(awk -v p="$pid" '$2 == "pid:" && $3 == p {print $6}' "$MNT/events/synthetic/wakeup_lat/hist")
expect_eq "the child's wakeups are counted" "yes" "$([ "${rows:-0}" -ge 20 ] && echo yes || echo "no (${rows:-0})")"
# The string column: the woken tasks by name.
echo 'hist:keys=comm' >>"$MNT/events/synthetic/wakeup_lat/trigger"
for _ in 1 2 3 4 5; do  # a wakeup missed (another BPF program ran then) is tried again
  sleep 0.05
  grep -q '^{ comm: sleep  *} hitcount:' "$MNT/events/synthetic/wakeup_lat/hist" && break
done
expect_eq "a histogram by the selected string" "yes" \
  "$(grep -q '^{ comm: sleep  *} hitcount:' "$MNT/events/synthetic/wakeup_lat/hist" && echo yes)"

: >"$MNT/events/synthetic/wakeup_lat/trigger"
echo >&7
wait "$client" || true
expect_eq "the client destroyed it" "destroyed" "$(tail -1 "$WORK/client.out")"
expect_eq "destroy removes the event" "" "$(synthetic_lines)"
expect_eq "and its triggers" "0 0" \
  "$(grep -vc '^#' "$MNT/events/sched/sched_waking/trigger") $(grep -vc '^#' "$MNT/events/sched/sched_switch/trigger")"

# The hist API in an instance the client makes (tracefs_instance_create:
# mkdir instances/NAME), then destroys with the histogram.
HCLIENT=$(dirname "$CLIENT")/histd_tracefs_hist
[ -x "$HCLIENT" ] || { echo "FAIL: no client at $HCLIENT (build histd_tracefs_hist)"; exit 1; }
SIZE=$(own_number 20000 40000)
mkfifo "$WORK/go-hist"
"$HCLIENT" "$MNT" "lt$$" "$SIZE" <"$WORK/go-hist" >"$WORK/hist.out" 2>&1 &
hclient=$!
exec 8>"$WORK/go-hist"
await_client "$WORK/hist.out" started "$hclient" "hist start"
expect_eq "tracefs_instance_create made an instance" "lt$$" "$(ls "$MNT/instances")"
expect_eq "tracefs_hist_start wrote the trigger in it" \
  "hist:keys=count:vals=hitcount,count:sort=hitcount:size=2048 if count == $SIZE [active]" \
  "$(cat "$MNT/instances/lt$$/events/syscalls/sys_enter_write/trigger")"
expect_eq "and not in the top tree" "0" "$(grep -vc '^#' "$MNT/events/syscalls/sys_enter_write/trigger" || true)"
dd if=/dev/zero of=/dev/null bs="$SIZE" count=3 status=none
echo >&8
wait "$hclient" || true
expect_eq "tracefs_event_file_read read the instance's table" "yes" \
  "$(grep -qE "^\{ count: +$SIZE \} hitcount: +[1-3] +count: +[0-9]+$" "$WORK/hist.out" && echo yes || cat "$WORK/hist.out")"
expect_eq "the histogram and the instance destroyed" "destroyed" "$(tail -1 "$WORK/hist.out")"
expect_eq "no instance left" "" "$(ls "$MNT/instances")"

# tracefs_synth_alloc: a synthetic event from its parts, not from SQL.
mkfifo "$WORK/go-synth"
"$HCLIENT" "$MNT" - "wl$$" <"$WORK/go-synth" >"$WORK/synth.out" 2>&1 &
sclient=$!
exec 9>"$WORK/go-synth"
await_client "$WORK/synth.out" created "$sclient" "synth create"
expect_eq "tracefs_synth_create made the event" "s:synthetic/wl$$	pid_t pid; u64 lat" "$(synthetic_lines)"
expect_eq "with its matching trigger" "1" \
  "$(grep -c "onmatch(sched.sched_waking).trace(wl$$," "$MNT/events/sched/sched_switch/trigger")"
echo >&9
wait "$sclient" || true
expect_eq "tracefs_synth_destroy removed it" "destroyed " "$(tail -1 "$WORK/synth.out") $(synthetic_lines)"
finish
