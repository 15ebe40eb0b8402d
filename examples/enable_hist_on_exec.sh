#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Seed example: a paused histogram that runs only while a given program
# lives: enable_hist on its exec, disable_hist on its exit.
# Usage: enable_hist_on_exec.sh [PROGRAM]
set -euo pipefail
HISTCTL=${HISTCTL:-histctl}
PROG=${1:-/usr/bin/ls}
HIST='hist:keys=common_pid.execname:vals=count:pause'
ON="enable_hist:syscalls:sys_enter_write if filename == \"$PROG\""
OFF="disable_hist:syscalls:sys_enter_write if comm == \"$(basename "$PROG")\""
"$HISTCTL" add syscalls:sys_enter_write "$HIST"
"$HISTCTL" add sched:sched_process_exec "$ON"
"$HISTCTL" add sched:sched_process_exit "$OFF"
cleanup() {
  "$HISTCTL" remove sched:sched_process_exec "$ON"
  "$HISTCTL" remove sched:sched_process_exit "$OFF"
  "$HISTCTL" remove syscalls:sys_enter_write "$HIST"
}
trap cleanup EXIT
"$PROG" -R /usr/share/doc >/dev/null
"$HISTCTL" show syscalls:sys_enter_write
