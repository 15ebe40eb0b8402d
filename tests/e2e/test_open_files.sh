#!/usr/bin/env bash
# Every trigger holds file descriptors (its maps, and each loaded program's
# own of every map it uses): ~9 a plain trigger. systemd starts a service
# with a soft limit of 1024 open files; histd raises it to the hard limit,
# so that 110 triggers on one event (~1000 descriptors) still serve their
# hist file and take a 111th. Started here under systemd's soft limit.
source "$(dirname "$0")/lib.sh"
hard=$(ulimit -Hn)
expect_eq "the hard limit leaves room (this machine's)" "yes" \
  "$([ "$hard" = unlimited ] || [ "$hard" -gt 4096 ] && echo yes || echo no)"
ulimit -Sn 1024
histd_start
expect_eq "histd raises its soft limit to the hard one" "$(ulimit -Hn)" \
  "$(awk '/^Max open files/ {print $4}' "/proc/$HISTD_PID/limits")"
G=$MNT/events/syscalls/sys_enter_getppid
for k in $(seq 2 111); do echo "hist:keys=common_pid.buckets=$k" >>"$G/trigger"; done
expect_eq "110 triggers on one event" "110" "$(grep -c '^hist:keys=common_pid.buckets=' "$G/trigger")"
fds=$(ls "/proc/$HISTD_PID/fd" | wc -l)
expect_eq "holding more descriptors than systemd's soft limit" "yes" "$([ "$fds" -gt 1024 ] && echo yes || echo no)"
expect_eq "and their hist file is read whole" "110" "$(grep -c '^    Hits:' "$G/hist")"
expect_eq "and one more is taken" "0" "$(echo 'hist:keys=common_pid.buckets=200' >>"$G/trigger"; echo $?)"
finish
