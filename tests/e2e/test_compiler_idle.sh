#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The resident compiler leaves while nothing is compiled:
# with --compiler-idle-stop 1, histd-cc (~90 MB) is gone a second after its
# last compile and histd is alone; opening a trigger file for writing starts
# it again before anything is written, and a compile that finds it stopped
# (histctl add) starts it too: either way histd-cc compiles the unit, not
# clang, and the trigger counts. Idle stops are not restarts in `status`.
source "$(dirname "$0")/lib.sh"
histd_start --compiler-idle-stop 1
ctl() { "$HISTCTL_BIN" --socket "$WORK/histd.sock" "$@"; }
server() { ps -o pid= --ppid "$HISTD_PID" | tr -d ' ' | while read -r p; do
  [ "$(cat "/proc/$p/comm" 2>/dev/null)" = histd-cc ] && echo "$p"; done; }
# wait_for WHAT: until `server` prints something (up) or nothing (down), 10 s.
wait_for() {
  for _ in $(seq 100); do
    if [ "$1" = up ]; then [ -n "$(server)" ] && return; else [ -z "$(server)" ] && return; fi
    sleep 0.1
  done
}
compiler() { ctl status --json |
  python3 -c "import json,sys; c=json.load(sys.stdin)['compiler']; print(*(c[k] for k in '$1'.split()))"; }
rss_kib() { local total=0 p; for p in "$HISTD_PID" $(ps -o pid= --ppid "$HISTD_PID"); do
  total=$((total + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0))); done; echo "$total"; }

wait_for down
expect_eq "histd-cc stops after a second without a compile" "" "$(server)"
expect_eq "status: stopped, one idle stop, no restart" "stopped 1 0 1" \
  "$(compiler 'state starts restarts idle_stops')"
echo "histd alone, idle: $(($(rss_kib) / 1024)) MiB resident"

# Opening the trigger file for writing brings it back before the write.
W=$MNT/events/syscalls/sys_enter_getppid
exec 3>>"$W/trigger"
wait_for up
expect_eq "opening a trigger file for writing starts it" "yes" "$([ -n "$(server)" ] && echo yes)"
echo "hist:keys=common_pid" >&3
exec 3>&-
expect_eq "and it compiles the trigger (not clang)" "running 1 0" "$(compiler 'state compiles_served clang_compiles')"
python3 -c 'import os; [os.getppid() for _ in range(50)]'
expect_eq "the trigger counts" "yes" "$(grep -qE '^ *Hits: [1-9]' "$W/hist" && echo yes)"

# Idle again; a compile asked for over the socket starts it on demand.
wait_for down
expect_eq "stopped again" "stopped 2" "$(compiler 'state idle_stops')"
ctl add syscalls:sys_enter_getpid "hist:keys=common_pid if common_comm == \"$(own_comm idle)\"" >/dev/null
expect_eq "histctl add: started on demand and compiled by it" "2 0 0" \
  "$(compiler 'compiles_served clang_compiles restarts')"
finish
