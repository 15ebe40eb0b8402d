#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Instances: `mkdir instances/NAME` makes a second set of event
# triggers, enable states, trace buffer, trace_marker and tracing_on over
# the same kernel events, as tracefs instances are; `rmdir` removes it with
# its programs and pins. Kept across restarts (and counting through a
# crash) as the top tree is. Refused as tracefs refuses: EEXIST, EBUSY with
# a file open, EPERM outside instances/, EACCES for others.
source "$(dirname "$0")/lib.sh"

histd_start --group nogroup
I=$MNT/instances
A=$I/a$$
err() { "$@" 2>&1 >/dev/null | sed -n 's/.*: \([A-Z][a-z][^:]*\)$/\1/p' | tail -1; }
# "ok" when hist file $1's count is $2, tolerating the events the kernel
# skipped while other BPF work ran on the CPU (histd reports them as
# Missed): count <= $2 <= count + missed.
counted() {
  local hist count missed
  hist=$(cat "$1")
  count=$(rows <(echo "$hist") | sed -n 's/.*hitcount: *\([0-9]*\)$/\1/p' | head -1)
  missed=$(awk '/^    Missed: / {s += $2} END {print s + 0}' <<<"$hist")
  [ "${count:-0}" -le "$2" ] && [ $((${count:-0} + missed)) -ge "$2" ] && echo ok || echo "${count:-none} of $2 ($missed missed)"
}

expect_eq "instances/ is listed in the root" "1" "$(ls "$MNT" | grep -c '^instances$')"
# readdir's type, as `ls -F` and os.scandir see it without a stat.
dir_entries() { /usr/bin/python3 -c 'import os, sys; print(" ".join(sorted(e.name for e in os.scandir(sys.argv[1]) if e.is_dir(follow_symlinks=False))))' "$1"; }
expect_eq "the root's directories, by readdir" "events instances options per_cpu" "$(dir_entries "$MNT")"
# A user outside --group may not; the group may, as it may write triggers.
expect_eq "a user outside the group may not make one" "Permission denied" \
  "$(err setpriv --reuid=nobody --regid=daemon --clear-groups mkdir "$I/x$$")"
mkdir "$A"
expect_eq "listed in instances/" "a$$" "$(ls "$I")"
expect_eq "as a directory, by readdir" "a$$" "$(dir_entries "$I")"
expect_eq "its files: those tracefs gives an instance" \
  "available_tracers buffer_size_kb buffer_total_size_kb current_tracer error_log events options per_cpu set_event set_event_pid snapshot timestamp_mode trace trace_clock trace_marker trace_options trace_pipe tracing_cpumask tracing_on" \
  "$(ls "$A" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "its events are the kernel's" "1" "$(ls "$A/events/syscalls" | grep -c '^sys_enter_write$')"
expect_eq "a second mkdir of it" "File exists" "$(err mkdir "$A")"
expect_eq "mkdir elsewhere" "Operation not permitted" "$(err mkdir "$MNT/events/x$$")"
expect_eq "a name longer than histd keeps" "File name too long" "$(err mkdir "$I/$(printf 'n%.0s' $(seq 130))")"

# The same trigger in the instance and the top tree: each counts, each
# lists only its own, and removing one leaves the other.
SIZE=$(own_number 20000 40000)
T="hist:keys=count:vals=hitcount if count == $SIZE"
writes() { dd if=/dev/zero of=/dev/null bs="$SIZE" count="$1" status=none; }
echo "$T" >"$A/events/syscalls/sys_enter_write/trigger"
expect_eq "the top tree does not list the instance's trigger" "" \
  "$(grep -v '^#' "$MNT/events/syscalls/sys_enter_write/trigger" || true)"
writes 3
echo "$T" >"$MNT/events/syscalls/sys_enter_write/trigger"
writes 4
expect_eq "the instance's table counted all 7 writes" "ok" "$(counted "$A/events/syscalls/sys_enter_write/hist" 7)"
expect_eq "the top tree's the 4 since its trigger" "ok" "$(counted "$MNT/events/syscalls/sys_enter_write/hist" 4)"
echo "!$T" >"$MNT/events/syscalls/sys_enter_write/trigger"
writes 2
expect_eq "removed from the top tree, the instance's goes on" "ok" "$(counted "$A/events/syscalls/sys_enter_write/hist" 9)"

# trace_marker, trace and tracing_on are the instance's own.
: >"$A/trace"
: >"$MNT/trace"
echo "hello instance $$" >"$A/trace_marker"
expect_eq "the instance's marker text is in its trace" "1" "$(grep -c "hello instance $$" "$A/trace")"
expect_eq "and not in the top tree's" "0" "$(grep -c "hello instance $$" "$MNT/trace" || true)"
echo 'hist:keys=common_pid' >"$A/events/ftrace/print/trigger"
for _ in 1 2 3; do echo tick >"$A/trace_marker"; done
echo tick >"$MNT/trace_marker"
expect_eq "a hist on the instance's ftrace:print counts its markers only" "ok" \
  "$(counted "$A/events/ftrace/print/hist" 3)"
echo 0 >"$A/tracing_on"
expect_eq "tracing_on 0 in the instance" "0 1" "$(cat "$A/tracing_on") $(cat "$MNT/tracing_on")"
echo 1 >"$A/tracing_on"
# set_event_pid and options/event-fork are the instance's own, as the
# kernel's trace_array keeps them.
echo 12345 >"$A/set_event_pid"
echo 1 >"$A/options/event-fork"
expect_eq "set_event_pid in the instance" "12345 ." "$(cat "$A/set_event_pid") .$(cat "$MNT/set_event_pid")"
expect_eq "options/event-fork in the instance" "1 0" "$(cat "$A/options/event-fork") $(cat "$MNT/options/event-fork")"
: >"$A/set_event_pid"
echo 0 >"$A/options/event-fork"
expect_eq "its error_log has its own refusals" "1" \
  "$( (echo 'hist:keys=nosuchfield' >>"$A/events/syscalls/sys_enter_write/trigger") 2>/dev/null; grep -c 'nosuchfield' "$A/error_log")"
expect_eq "the top tree's error_log has none of them" "0" "$(grep -c 'nosuchfield' "$MNT/error_log" || true)"

# A restart restores the instance, its triggers and their counts; a crash
# loses nothing either (its programs count while histd is down).
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start --group nogroup
expect_eq "after a restart the instance is there" "a$$" "$(ls "$I")"
writes 1
expect_eq "with its trigger and its counts" "ok" "$(counted "$A/events/syscalls/sys_enter_write/hist" 10)"
kill -KILL "$HISTD_PID"; wait "$HISTD_PID" || true
writes 2
histd_start --group nogroup
expect_eq "after kill -9: the writes made while histd was down counted" "ok" "$(counted "$A/events/syscalls/sys_enter_write/hist" 12)"

# A remove cut short by a crash after its saved state went (remove() takes
# the state first, then the pins): the next start drops the pins left.
C=$I/c$$
CDIR=i-$(printf 'c%s' $$ | od -An -tx1 | tr -d ' \n')
mkdir "$C"
echo "$T" >"$C/events/syscalls/sys_enter_write/trigger"
expect_eq "its tables are pinned under its own directory" "yes" \
  "$(ls "$PIN/instances/$CDIR" | grep -q '_table$' && echo yes)"
kill -KILL "$HISTD_PID"; wait "$HISTD_PID" || true
rm -rf "${WORK:?}/state/instances/$CDIR"
histd_start --group nogroup
expect_eq "an instance whose saved state is gone is not restored" "a$$" "$(ls "$I")"
expect_eq "and the pins it left are dropped" "no" "$([ -e "$PIN/instances/$CDIR" ] && echo yes || echo no)"

# rmdir: EBUSY while a file of it is open, then it goes with its pins and state.
exec 7<"$A/trace"
expect_eq "rmdir with a file of it open" "Device or resource busy" "$(err rmdir "$A")"
exec 7<&-
expect_eq "a user outside the group may not remove it" "Permission denied" \
  "$(err setpriv --reuid=nobody --regid=daemon --clear-groups rmdir "$A")"
rmdir "$A"
expect_eq "removed" "" "$(ls "$I")"
expect_eq "its pins are gone (its programs detached)" "" "$(ls "$PIN/instances" 2>/dev/null || true)"
expect_eq "its saved state is gone" "" "$(ls "$WORK/state/instances" 2>/dev/null || true)"
expect_eq "rmdir of what is not there" "No such file or directory" "$(err rmdir "$A")"
mkdir "$A"
expect_eq "made again under the same name it starts empty" "" \
  "$(grep -v '^#' "$A/events/syscalls/sys_enter_write/trigger" || true)"
rmdir "$A"

# As many as histd keeps (32), then ENOSPC; all removed again.
for n in $(seq 32); do mkdir "$I/n$n"; done
expect_eq "the 33rd" "No space left on device" "$(err mkdir "$I/n33")"
for n in $(seq 32); do rmdir "$I/n$n"; done
expect_eq "all removed" "" "$(ls "$I")"

# An instance whose saved state is corrupt: kept aside, and said in histctl
# status as the top tree's is.
D=$I/d$$
DDIR=i-$(printf 'd%s' $$ | od -An -tx1 | tr -d ' \n')
mkdir "$D"
echo "$T" >"$D/events/syscalls/sys_enter_write/trigger"
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
echo '{"version": 1, "triggers": [' >"$WORK/state/instances/$DDIR/triggers.json"
histd_start --group nogroup
expect_eq "histctl status names the instance and its state file kept aside" "1" \
  "$("$HISTCTL_BIN" --socket "$WORK/histd.sock" status |
    grep -c "^instance d$$: state file: $WORK/state/instances/$DDIR/triggers.json: not a histd state file; kept as ")"
expect_eq "and so does its JSON" "d$$" \
  "$("$HISTCTL_BIN" --socket "$WORK/histd.sock" status --json | jq -r '.instances[0].name')"
rmdir "$D"

finish
