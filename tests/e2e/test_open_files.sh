#!/usr/bin/env bash
# Every trigger holds file descriptors (its maps, and each loaded program's
# own of every map it uses): ~9 a plain trigger. systemd starts a service
# with a soft limit of 1024 open files; histd raises it to the hard limit,
# so that the triggers that take it past 1024 descriptors (~120 on one
# event) still serve their hist file and take one more. Started here under
# systemd's soft limit; triggers are added until histd holds more than
# 1100 descriptors (how many each holds varies by a few with the run).
source "$(dirname "$0")/lib.sh"
hard=$(ulimit -Hn)
expect_eq "the hard limit leaves room (this machine's)" "yes" \
  "$([ "$hard" = unlimited ] || [ "$hard" -gt 4096 ] && echo yes || echo no)"
ulimit -Sn 1024
histd_start
expect_eq "histd raises its soft limit to the hard one" "$(ulimit -Hn)" \
  "$(awk '/^Max open files/ {print $4}' "/proc/$HISTD_PID/limits")"
G=$MNT/events/syscalls/sys_enter_getppid
fds() { ls "/proc/$HISTD_PID/fd" | wc -l; }
n=0
while [ "$(fds)" -le 1100 ] && [ "$n" -lt 200 ]; do
  n=$((n + 1))
  echo "hist:keys=common_pid.buckets=$((n + 1))" >>"$G/trigger"
done
expect_eq "holding more descriptors than systemd's soft limit" "yes" "$([ "$(fds)" -gt 1100 ] && echo yes || echo no)"
expect_eq "every trigger written is on the event" "$n" "$(grep -c '^hist:keys=common_pid.buckets=' "$G/trigger")"
expect_eq "and their hist file is read whole" "$n" "$(grep -c '^    Hits:' "$G/hist")"
expect_eq "and one more is taken" "0" "$(echo 'hist:keys=common_pid.buckets=500' >>"$G/trigger"; echo $?)"
finish
