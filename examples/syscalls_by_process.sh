#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Seed example: system calls per process and syscall, by pid, busiest
# syscall first within each process (a sort within a sort).
# Usage: syscalls_by_process.sh [SECONDS]
set -euo pipefail
HISTCTL=${HISTCTL:-histctl}
CMD='hist:key=common_pid.execname,id.syscall:val=hitcount:sort=common_pid,hitcount.descending'
"$HISTCTL" add raw_syscalls:sys_enter "$CMD"
trap '"$HISTCTL" remove raw_syscalls:sys_enter "$CMD"' EXIT
sleep "${1:-5}"
"$HISTCTL" show raw_syscalls:sys_enter
