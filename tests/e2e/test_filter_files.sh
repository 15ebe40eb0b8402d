#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The filter files of events and systems, beside a tracefs instance of this
# machine's kernel given the same writes: they read as the kernel's, a bad
# filter leaves the kernel's error_log entry (caret included), and an
# enabled event records only the records its filter matches, while its hist
# triggers still see every record. histd refuses a bad filter and keeps the
# one it had, where the kernel drops it and shows the error in the file.
source "$(dirname "$0")/lib.sh"
T=/sys/kernel/tracing
[ -d "$T/instances" ] || mount -t tracefs nodev "$T"
INST=$T/instances/histd-filter-${WORK##*.}
test_cleanup() { [ -d "$INST" ] && rmdir "$INST"; }
histd_start
mkdir "$INST"
E=$MNT/events
K=$INST/events
F=sched/sched_process_fork
err() { "$@" 2>&1 >/dev/null | sed -n 's/.*: \([A-Z][a-z][^:]*\)$/\1/p' | tail -1; }
both() { echo "$1" >"$K/$2" && echo "$1" >"$E/$2"; }
# error_log without the timestamps.
log() { sed 's/^\[ *[0-9.]*\] //' "$1"; }

expect_eq "an event's filter is listed" "filter" "$(ls "$E/$F" | grep -x filter)"
expect_eq "a system's filter is listed" "filter" "$(ls "$E/sched" | grep -x filter)"
expect_eq "an event's filter reads as the kernel's" "$(cat "$K/$F/filter")" "$(cat "$E/$F/filter")"
expect_eq "  which is none" "none" "$(cat "$E/$F/filter")"
expect_eq "a system's filter reads as the kernel's" "$(cat "$K/sched/filter")" "$(cat "$E/sched/filter")"

both 'parent_comm ~ "filt*" && child_pid > 1' "$F/filter"
expect_eq "a filter reads back as the kernel's" "$(cat "$K/$F/filter")" "$(cat "$E/$F/filter")"
expect_eq "  as written" 'parent_comm ~ "filt*" && child_pid > 1' "$(cat "$E/$F/filter")"

# A bad filter: refused with the kernel's error_log entry, caret included.
: >"$MNT/error_log"
expect_eq "a bad filter is refused" "Invalid argument" "$(err bash -c "echo 'nosuchfield == 1' > '$E/$F/filter'")"
expect_eq "  and histd keeps the filter it had" 'parent_comm ~ "filt*" && child_pid > 1' "$(cat "$E/$F/filter")"
while IFS= read -r bad; do
  : >"$INST/error_log"
  : >"$MNT/error_log"
  (echo "$bad" >"$K/$F/filter") 2>/dev/null || true
  (echo "$bad" >"$E/$F/filter") 2>/dev/null || true
  expect_eq "$bad: the kernel's error_log entry and caret" "$(log "$INST/error_log")" "$(log "$MNT/error_log")"
done <<'EOF2'
nosuchfield == 1
child_pid == 1 || nosuch > 2
child_pid
child_pid === 1
child_pid ==
child_pid == abc
child_pid == 99999999999999999999
child_pid ~ 1
child_pid == "1"
parent_comm > "a"
parent_comm == 1
(child_pid == 1
child_pid == 1)
parent_comm == "abc
EOF2

# --- what is recorded: the forks of one of two bash, by the parent's comm ---
KEEP=$(own_comm filtkeep)
DROP=$(own_comm filtdrop)
both "parent_comm == \"$KEEP\"" "$F/filter"
echo 'hist:keys=parent_comm' >>"$E/$F/trigger"
echo 1 >"$E/$F/enable"
: >"$MNT/trace"
# A tracepoint's program is skipped while another BPF program runs on its
# CPU (other tests run beside this one): fork until both were counted.
for _ in 1 2 3 4 5 6 7 8; do
  "$(comm_link "$KEEP" bash)" -c '/bin/true; exit 0'
  "$(comm_link "$DROP" bash)" -c '/bin/true; exit 0'
  grep -q "comm=$KEEP " "$MNT/trace" && grep -q "parent_comm: $DROP" "$E/$F/hist" && break
done
expect_eq "the matching fork is recorded" "yes" "$(grep -q "comm=$KEEP " "$MNT/trace" && echo yes)"
expect_eq "the other is not" "0" "$(grep -c "comm=$DROP " "$MNT/trace" || true)"
expect_eq "the hist trigger sees both" "yes yes" \
  "$(grep -q "parent_comm: $KEEP" "$E/$F/hist" && echo yes) $(grep -q "parent_comm: $DROP" "$E/$F/hist" && echo yes)"
echo 0 >"$E/$F/filter"
expect_eq "0 clears the filter" "none" "$(cat "$E/$F/filter")"
: >"$MNT/trace"
for _ in 1 2 3 4 5 6 7 8; do
  "$(comm_link "$DROP" bash)" -c '/bin/true; exit 0'
  grep -q "comm=$DROP " "$MNT/trace" && break
done
expect_eq "then every fork is recorded" "yes" "$(grep -q "comm=$DROP " "$MNT/trace" && echo yes)"
echo 0 >"$E/$F/enable"
echo '!hist:keys=parent_comm' >>"$E/$F/trigger"

# --- a system's filter: on the events that have its fields ------------------
both 'prio < 200' sched/filter
expect_eq "a system's filter still reads its message" "$(cat "$K/sched/filter")" "$(cat "$E/sched/filter")"
expect_eq "an event with the field has it, as the kernel's" "$(cat "$K/sched/sched_wakeup/filter")" \
  "$(cat "$E/sched/sched_wakeup/filter")"
expect_eq "  prio < 200" "prio < 200" "$(cat "$E/sched/sched_wakeup/filter")"
expect_eq "one without has none" "none" "$(cat "$E/sched/sched_switch/filter")"
: >"$INST/error_log"
: >"$MNT/error_log"
expect_eq "a system's filter no event takes is refused" "Invalid argument" \
  "$(err bash -c "echo 'nosuchfield == 1' > '$E/sched/filter'")"
expect_eq "  with the kernel's words" "1" \
  "$(grep -c "error: Couldn't find or set field in one of a subsystem's events" "$MNT/error_log")"
both 0 sched/filter
expect_eq "0 clears the system's events" "none" "$(cat "$E/sched/sched_wakeup/filter")"

# --- kept across a restart, with the triggers ---------------------------------
echo 'child_pid > 1' >"$E/$F/filter"
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start
expect_eq "a filter is restored with histd's state" "child_pid > 1" "$(cat "$E/$F/filter")"
echo 0 >"$E/$F/filter"
finish
