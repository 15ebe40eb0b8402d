#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Every trigger holds file descriptors (its tables' maps; since its libbpf
# object is closed once loaded, ~3.4 a plain trigger). systemd starts a
# service with a soft limit of 1024 open files; histd raises it to the hard
# limit, so that the triggers that take it past 1024 descriptors still
# serve their hist files and take one more. Started here under systemd's
# soft limit with 4 × 103 triggers declared in its configuration (~1400
# descriptors; one event's chain takes 124); the four events have the same
# format, so their programs are the same units, compiled once.
source "$(dirname "$0")/lib.sh"
hard=$(ulimit -Hn)
expect_eq "the hard limit leaves room (this machine's)" "yes" \
  "$([ "$hard" = unlimited ] || [ "$hard" -gt 4096 ] && echo yes || echo no)"
EVENTS="sys_enter_getppid sys_enter_getpid sys_enter_gettid sys_enter_getuid"
mkdir -p "$WORK/triggers.d"
for e in $EVENTS; do
  for k in $(seq 2 104); do echo "syscalls:$e hist:keys=common_pid.buckets=$k"; done
done >"$WORK/triggers.d/many.conf"
ulimit -Sn 1024
histd_start
expect_eq "histd raises its soft limit to the hard one" "$(ulimit -Hn)" \
  "$(awk '/^Max open files/ {print $4}' "/proc/$HISTD_PID/limits")"
fds=$(ls "/proc/$HISTD_PID/fd" | wc -l)
expect_eq "holding more descriptors than systemd's soft limit" "yes" "$([ "$fds" -gt 1024 ] && echo yes || echo no)"
# Each loaded program's libbpf object held a duplicate of every map it
# uses (~9 descriptors a trigger, 3800 here) until they were closed at load.
expect_eq "at most 4 descriptors a trigger" "yes" "$([ "$fds" -le $((4 * 412 + 50)) ] && echo yes || echo no)"
for e in $EVENTS; do
  G=$MNT/events/syscalls/$e
  expect_eq "$e: every declared trigger is on the event" "103" "$(grep -c '^hist:keys=common_pid.buckets=' "$G/trigger")"
  expect_eq "$e: and its hist file is read whole" "103" "$(grep -c '^    Hits:' "$G/hist")"
done
expect_eq "and one more is taken" "0" \
  "$(echo 'hist:keys=common_pid.buckets=500' >>"$MNT/events/syscalls/sys_enter_getppid/trigger"; echo $?)"
finish
