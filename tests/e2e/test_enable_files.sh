#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The enable files at every level, as tracefs has them: events/
# enable, events/<system>/enable and every event's enable read "0", "1" or
# (for a system or all events, some on and some off) "X", and enable or
# disable what they name, synthetic and kernel events alike (what an
# enabled kernel event records: test_set_event.sh). Enabling more events
# than histd's trigger limit is refused (ENOSPC): each is a program.
source "$(dirname "$0")/lib.sh"
histd_start
E=$MNT/events
err() { "$@" 2>&1 >/dev/null | sed -n 's/.*: \([A-Z][a-z][^:]*\)$/\1/p' | tail -1; }

expect_eq "events/enable is listed" "enable" "$(ls "$E" | grep -x enable)"
expect_eq "a system's enable is listed" "enable" "$(ls "$E/sched" | grep -x enable)"
expect_eq "an event's enable is listed" "enable" "$(ls "$E/sched/sched_switch" | grep -x enable)"
expect_eq "all off: events/enable" "0" "$(cat "$E/enable")"
expect_eq "sched_switch/enable" "0" "$(cat "$E/sched/sched_switch/enable")"

echo 'ev_a u64 x' >>"$MNT/synthetic_events"
echo 'ev_b u64 x' >>"$MNT/synthetic_events"
echo 1 >"$E/synthetic/ev_a/enable"
expect_eq "one synthetic event on: synthetic/enable" "X" "$(cat "$E/synthetic/enable")"
expect_eq "and events/enable" "X" "$(cat "$E/enable")"
echo 1 >"$E/synthetic/enable"
expect_eq "the system enabled: both on" "1 1" "$(cat "$E/synthetic/ev_a/enable") $(cat "$E/synthetic/ev_b/enable")"
expect_eq "synthetic/enable" "1" "$(cat "$E/synthetic/enable")"
expect_eq "events/enable (others are off)" "X" "$(cat "$E/enable")"

expect_eq "disabling a kernel event that is off succeeds" "" "$(err bash -c "echo 0 > '$E/sched/sched_switch/enable'")"
echo 1 >"$E/sched/sched_switch/enable"
expect_eq "enabling a kernel event" "1 X" "$(cat "$E/sched/sched_switch/enable") $(cat "$E/sched/enable")"
expect_eq "set_event lists it" "sched:sched_switch" "$(grep -x sched:sched_switch "$MNT/set_event")"
echo 1 >"$E/kmem/enable"
expect_eq "enabling a kernel system enables each of its events" "1 1" \
  "$(cat "$E/kmem/enable") $(cat "$E/kmem/kmalloc/enable")"
echo 0 >"$E/kmem/enable"
expect_eq "and disabling it each again" "0 0" "$(cat "$E/kmem/enable") $(cat "$E/kmem/kmalloc/enable")"
expect_eq "2 is not a state" "Invalid argument" "$(err bash -c "echo 2 > '$E/enable'")"

echo 0 >"$E/enable"
expect_eq "events/enable 0 disables every event" "0 0 0 0" \
  "$(cat "$E/synthetic/ev_a/enable") $(cat "$E/synthetic/ev_b/enable") $(cat "$E/sched/sched_switch/enable") $(cat "$E/enable")"

# Each enabled kernel event is a program: past histd's trigger limit the
# rest are refused, the first ones stay enabled (as the kernel keeps those
# it enabled before an error).
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start --max-triggers 3
expect_eq "enabling more events than the limit allows" "No space left on device" \
  "$(err bash -c "echo 1 > '$E/sched/enable'")"
expect_eq "enabled as many as it allows" "3" "$(wc -l <"$MNT/set_event")"
: >"$MNT/set_event"
echo '!ev_a' >>"$MNT/synthetic_events"
echo '!ev_b' >>"$MNT/synthetic_events"
finish
