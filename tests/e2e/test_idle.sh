#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# An idle histd costs the machine nothing: no thread of histd or
# of histd-cc wakes while nothing happens — before, the hist pollers'
# watcher and the ring's consumer woke 30 times a second on timers — with
# no trigger, and again with a trigger whose table was read. (poll() on a
# hist file still wakes on a change: test_single_event_language.sh.)
source "$(dirname "$0")/lib.sh"
histd_start
# Context switches of every thread of histd and its children.
switches() {
  local total=0 p t
  for p in "$HISTD_PID" $(ps -o pid= --ppid "$HISTD_PID"); do
    for t in /proc/"$p"/task/*; do
      total=$((total + $(awk '/ctxt_switches/ {s += $2} END {print s + 0}' "$t/status" 2>/dev/null || echo 0)))
    done
  done
  echo "$total"
}
# Wakeups in 3 s of quiet, a second after what was asked has ended.
quiet_wakeups() {
  sleep 1
  local before
  before=$(switches)
  sleep 3
  echo $(($(switches) - before))
}
expect_eq "no trigger: no thread woke in 3 s" "0" "$(quiet_wakeups)"
W=$MNT/events/syscalls/sys_enter_getppid
echo 'hist:keys=common_pid' >"$W/trigger"
python3 -c "import os; [os.getppid() for _ in range(10)]"
cat "$W/hist" >/dev/null
expect_eq "a trigger, its table read: no thread woke in 3 s" "0" "$(quiet_wakeups)"
finish
