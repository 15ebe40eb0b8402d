#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# dynamic_events for synthetic events, as tracefs has it: "s:"
# creates one (group synthetic or none), the listing shows each as
# "s:synthetic/<name>\t<fields>", "-:" removes one, O_TRUNC removes all,
# and the kernel's errors are logged under "synthetic_events". Probe lines
# go to the kernel's own dynamic_events (test_probe_events.sh); eprobes are
# histd's own (test_eprobes.sh).
source "$(dirname "$0")/lib.sh"
histd_start
D=$MNT/dynamic_events
err() { "$@" 2>&1 >/dev/null | sed -n 's/.*: \([A-Z][a-z][^:]*\)$/\1/p' | tail -1; }

echo 's:synthetic/lat_a u64 lat; pid_t pid' >>"$D"
echo 's:lat_b char comm[16]' >>"$D"
expect_eq "listed as the kernel lists them" "s:synthetic/lat_a	u64 lat; pid_t pid
s:synthetic/lat_b	char[16] comm" "$(cat "$D")"
expect_eq "and in synthetic_events" "lat_a	u64 lat; pid_t pid
lat_b	char[16] comm" "$(cat "$MNT/synthetic_events")"
expect_eq "the event exists" "yes" "$([ -d "$MNT/events/synthetic/lat_a" ] && echo yes)"

: >"$MNT/error_log"
expect_eq "another group is refused" "Invalid argument" \
  "$(err bash -c "printf '%s' 's:junk/myevent char str[' >> '$D'")"
expect_eq "and logged as the kernel logs it" "synthetic_events: error: Command must be of the form: s or -:[synthetic/]<name> field[;field] ...
  Command: s:junk/myevent char str[
           ^" "$(sed 's/^\[ *[0-9.]*\] //' "$MNT/error_log")"
expect_eq "a probe line the kernel refuses: its errno" "Invalid argument" \
  "$(err bash -c "echo 'p:histd_noplace' >> '$D'")"
echo 'e:histd_ep sched.sched_switch' >>"$D"
expect_eq "an eprobe is histd's, listed after the synthetic events" "e:eprobes/histd_ep sched.sched_switch" \
  "$(tail -1 "$D")"
echo '-:histd_ep' >>"$D"
expect_eq "removing one that is not there" "No such file or directory" \
  "$(err bash -c "echo '-:synthetic/nosuch' >> '$D'")"
expect_eq "removing from another group" "No such file or directory" \
  "$(err bash -c "echo '-:junk/lat_a' >> '$D'")"

echo 'hist:keys=lat' >"$MNT/events/synthetic/lat_a/trigger"
expect_eq "one in use cannot go" "Device or resource busy" "$(err bash -c "echo '-:lat_a' >> '$D'")"
: >"$MNT/events/synthetic/lat_a/trigger"
echo '-:synthetic/lat_a' >>"$D"
expect_eq "removed" "s:synthetic/lat_b	char[16] comm" "$(cat "$D")"
: >"$D"
expect_eq "O_TRUNC removes them all" "" "$(cat "$D")"
finish
