#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A count by the file name an openat() passes: histd's eprobe
# (the user string behind sys_enter_openat's filename) with a hist trigger
# keyed by it, against bpftrace's count by str(args->filename) and the
# untraced opens, in interleaved rounds with the variants in a shuffled
# order; medians (min..max) of the ns each open+close costs.
#   untraced  OPENS opens and closes of one file (python3's os.open)
#   histd     e:... syscalls.sys_enter_openat file=+0($filename):ustring
#             and hist:keys=file
#   bpftrace  tracepoint:syscalls:sys_enter_openat { @[str(args->filename)] = count(); }
# Each variant attaches before its run and detaches after.
#   bash bench/eprobe.sh    (as root; ROUNDS=7 OPENS=200000, HISTD_BUILD=dir)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/rounds.sh
need bpftrace bpftrace
ROUNDS=${ROUNDS:-7}
OPENS=${OPENS:-200000}
B=$(realpath "${HISTD_BUILD:-build}")
WORK=$(mktemp -d /tmp/histd-bench-eprobe.XXXXXX)
MNT=$WORK/mnt
FILE=$WORK/opened
touch "$FILE"
EV=bench$$
HISTD=
BT=
cleanup() {
  : >"$MNT/events/eprobes/$EV/trigger" 2>/dev/null || true
  bench_cleanup
}
trap cleanup EXIT
start_histd
echo "e:$EV syscalls.sys_enter_openat file=+0(\$filename):ustring" >>"$MNT/dynamic_events"

# ns per open+close of one run.
run() {
  python3 - "$FILE" "$OPENS" <<'PY'
import os, sys, time
path, n = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter_ns()
for _ in range(n):
    os.close(os.open(path, os.O_RDONLY))
print((time.perf_counter_ns() - t0) // n)
PY
}
variant() {
  case $1 in
    untraced) run ;;
    histd)
      echo 'hist:keys=file' >"$MNT/events/eprobes/$EV/trigger"
      run
      : >"$MNT/events/eprobes/$EV/trigger" ;;
    bpftrace) with_bpftrace 'tracepoint:syscalls:sys_enter_openat { @[str(args->filename)] = count(); }' ;;
  esac
}

interleaved_rounds ns/open untraced histd bpftrace
