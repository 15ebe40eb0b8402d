#!/usr/bin/env bash
# Seed example: system calls per process and syscall, busiest first.
# Usage: syscalls_by_process.sh [TREE] [SECONDS]
set -euo pipefail
T=${1:-/run/histd/tracing}
EV=$T/events/raw_syscalls/sys_enter
echo 'hist:key=common_pid.execname,id.syscall:val=hitcount:sort=common_pid,hitcount.descending' > "$EV/trigger"
sleep "${2:-5}"
cat "$EV/hist"
echo '!hist:key=common_pid.execname,id.syscall:val=hitcount:sort=common_pid,hitcount.descending' >> "$EV/trigger"
