#!/usr/bin/env bash
# Seed example: a paused histogram that runs only while a given program
# lives: enable_hist on its exec, disable_hist on its exit.
# Usage: enable_hist_on_exec.sh [TREE] [PROGRAM]
set -euo pipefail
T=${1:-/run/histd/tracing}
PROG=${2:-/usr/bin/ls}
W=$T/events/syscalls/sys_enter_write
echo 'hist:keys=common_pid.execname:vals=count:pause' > "$W/trigger"
echo "enable_hist:syscalls:sys_enter_write if filename == \"$PROG\"" > "$T/events/sched/sched_process_exec/trigger"
echo "disable_hist:syscalls:sys_enter_write if comm == \"$(basename "$PROG")\"" > "$T/events/sched/sched_process_exit/trigger"
"$PROG" -R /usr/share/doc >/dev/null
cat "$W/hist"
: > "$T/events/sched/sched_process_exec/trigger"
: > "$T/events/sched/sched_process_exit/trigger"
: > "$W/trigger"
