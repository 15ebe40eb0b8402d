#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The kernel's other trigger commands, as a user of tracefs
# writes them: traceon/traceoff, snapshot, stacktrace, enable_event/
# disable_event — their listing, one of a type per event, '!' removal, and
# what each does when its event fires, from the event's BPF program.
source "$(dirname "$0")/lib.sh"
histd_start
F=$MNT/events/sched/sched_process_fork
S=$MNT/events/sched/sched_switch
err() { "$@" 2>&1 >/dev/null | sed -n 's/.*: \([A-Z][a-z][^:]*\)$/\1/p' | tail -1; }
# Every command the test runs forks too: the triggers that must fire only
# when the test says so take forks of "forker" alone (a copy of bash, so
# that its comm is its own).
cp "$(command -v bash)" "$WORK/forker"
ONLY='if parent_comm == "forker"'
# A tracepoint's BPF program does not run while another BPF program runs on
# that CPU (other tests run BPF beside this one): a fork is tried again
# until `cond` holds.
fork_until() {
  for _ in 1 2 3 4 5 6 7 8; do
    "$WORK/forker" -c '(exit 0)'
    eval "$1" && return 0
  done
  return 1
}

expect_eq "every trigger command is available" \
  "# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist" "$(tail -1 "$F/trigger")"

# --- traceoff / traceon ----------------------------------------------------
echo 'traceoff if child_pid == 0' >"$F/trigger"
expect_eq "listed as the kernel lists it" "traceoff:unlimited if child_pid == 0" "$(cat "$F/trigger")"
bash -c 'exit 0'
expect_eq "a filter that never holds: tracing stays on" "1" "$(cat "$MNT/tracing_on")"
expect_eq "a second of the type is refused" "Invalid argument" "$(err bash -c "echo 'traceon' >> '$F/trigger'")"
echo '!traceon' >>"$F/trigger"
expect_eq "! and the type's other name remove it" "traceon" "$(grep -o '^# traceon' "$F/trigger" | tr -d '# ')"
echo 'traceoff:1' >"$F/trigger"
fork_until '[ "$(cat "$MNT/tracing_on")" = 0 ]'
expect_eq "traceoff turns tracing_on off from BPF" "0" "$(cat "$MNT/tracing_on")"
expect_eq "and its count went down" "traceoff:count=0" "$(cat "$F/trigger")"
echo 1 >"$MNT/tracing_on"
bash -c 'exit 0'
expect_eq "spent, it no longer fires" "1" "$(cat "$MNT/tracing_on")"
echo '!traceoff' >>"$F/trigger"
echo 0 >"$MNT/tracing_on"
echo 'traceon' >"$F/trigger"
fork_until '[ "$(cat "$MNT/tracing_on")" = 1 ]'
expect_eq "traceon turns it on again" "1" "$(cat "$MNT/tracing_on")"
echo '!traceon' >>"$F/trigger"

# --- stacktrace --------------------------------------------------------------
echo "stacktrace $ONLY" >"$F/trigger"
: >"$MNT/trace"
fork_until 'grep -q "<stack trace>" "$MNT/trace"'
expect_eq "a stack trace entry in trace" "1" "$(grep -c -m1 ': <stack trace>$' "$MNT/trace")"
expect_eq "its frames, innermost first, as the kernel prints them" "kernel_clone" \
  "$(grep -A1 -m1 '<stack trace>' "$MNT/trace" | tail -1 | sed 's/^ => //')"
expect_eq "a count that is no number is refused" "Invalid argument" \
  "$(err bash -c "echo 'stacktrace:foo' >> '$F/trigger'")"
echo '!stacktrace' >>"$F/trigger"

# --- snapshot ------------------------------------------------------------------
echo 0 >"$MNT/snapshot"
expect_eq "an empty snapshot shows its commands" "# * Snapshot is freed *" "$(grep -m1 Snapshot "$MNT/snapshot")"
echo 1 >"$F/enable"
echo "snapshot:1 $ONLY" >"$F/trigger"
expect_eq "a snapshot trigger allocates it" "# * Snapshot is allocated *" "$(grep -m1 Snapshot "$MNT/snapshot")"
fork_until 'grep -q sched_process_fork "$MNT/snapshot"'
expect_eq "the trigger took a snapshot: the recorded fork is in it" "1" \
  "$(grep -c -m1 'sched_process_fork: comm=forker' "$MNT/snapshot")"
expect_eq "refused: an unknown command" "Invalid argument" "$(err bash -c "echo 'snapshot+1' >> '$F/trigger'")"
echo '!snapshot' >>"$F/trigger"
echo 0 >"$F/enable"
echo 2 >"$MNT/snapshot"
expect_eq "2 clears the snapshot" "# * Snapshot is allocated *" "$(grep -m1 Snapshot "$MNT/snapshot")"

# --- enable_event / disable_event -------------------------------------------
echo 0 >"$S/enable"
echo "enable_event:sched:sched_switch:2 $ONLY" >"$F/trigger"
expect_eq "listed with its target and count" "enable_event:sched:sched_switch:count=2 $ONLY" "$(cat "$F/trigger")"
expect_eq "the target is in soft mode, off" "0*" "$(cat "$S/enable")"
: >"$MNT/trace"
fork_until '[ "$(cat "$S/enable")" = "1*" ]'
expect_eq "the fork turned the target's recording on" "1*" "$(cat "$S/enable")"
sleep 0.2
expect_eq "whose records then reach trace" "yes" "$(grep -q 'sched_switch: prev_comm=' "$MNT/trace" && echo yes)"
expect_eq "the enable and the disable of a target are one type" "Invalid argument" \
  "$(err bash -c "echo 'disable_event:sched:sched_switch' >> '$F/trigger'")"
expect_eq "a target that does not exist is refused" "Invalid argument" \
  "$(err bash -c "echo 'enable_event:nogroup:noevent' >> '$F/trigger'")"
echo '!enable_event:sched:sched_switch' >>"$F/trigger"
expect_eq "removed: the target is out of soft mode, off again" "0" "$(cat "$S/enable")"
echo 1 >"$S/enable"
echo "disable_event:sched:sched_switch $ONLY" >"$F/trigger"
fork_until '[ "$(cat "$S/enable")" = "0*" ]'
expect_eq "disable_event turns an enabled target off" "0*" "$(cat "$S/enable")"
echo '!disable_event:sched:sched_switch' >>"$F/trigger"
expect_eq "removed: the target is as its own enable file says" "1" "$(cat "$S/enable")"
echo 0 >"$S/enable"

# An event that enables itself: removing the trigger must not rebuild the
# event with the trigger still in it.
echo "enable_event:sched:sched_process_fork $ONLY" >"$F/trigger"
expect_eq "an event may enable itself (soft mode)" "0*" "$(cat "$F/enable")"
echo '!enable_event:sched:sched_process_fork' >>"$F/trigger"
expect_eq "removed with !: its own enable is off again" "0" "$(cat "$F/enable")"
for _ in 1 2 3; do "$WORK/forker" -c '(exit 0)'; done
expect_eq "and forks no longer turn it on" "0" "$(cat "$F/enable")"
echo "enable_event:sched:sched_process_fork $ONLY" >"$F/trigger"
: >"$F/trigger"
expect_eq "a truncation leaves it, as the kernel's (only hist triggers go)" "enable_event:sched:sched_process_fork:unlimited $ONLY" \
  "$(grep -v '^#' "$F/trigger")"
echo '!enable_event:sched:sched_process_fork' >>"$F/trigger"
expect_eq "removed with !: no trigger left" "# Available triggers:" "$(head -1 "$F/trigger")"
expect_eq "and its own enable is off again" "0" "$(cat "$F/enable")"
for _ in 1 2 3; do "$WORK/forker" -c '(exit 0)'; done
expect_eq "and forks leave it off" "0" "$(cat "$F/enable")"
expect_eq "and no event's program is attached" "0" "$(find "$PIN" -name 'event-*_link' | wc -l)"

# --- kept across a restart ---------------------------------------------------
echo 'traceoff:3 if child_pid == 0' >"$F/trigger"
echo 'enable_event:sched:sched_switch' >>"$F/trigger"
before=$(cat "$F/trigger")
kill -TERM "$HISTD_PID"
wait "$HISTD_PID" || true
histd_start
expect_eq "the triggers after a restart" "$before" "$(cat "$F/trigger")"
echo 'hist:keys=child_pid' >>"$F/trigger"
echo 'enable_hist:sched:sched_switch' >>"$F/trigger"
: >"$F/trigger"
expect_eq "a truncating write removes the hist and enable_hist triggers, as the kernel's" "$before" "$(cat "$F/trigger")"
echo '!traceoff' >>"$F/trigger"
echo '!enable_event:sched:sched_switch' >>"$F/trigger"
expect_eq "the others go with !" "# Available triggers:" "$(head -1 "$F/trigger")"
expect_eq "and the target leaves soft mode" "0" "$(cat "$S/enable")"
finish
