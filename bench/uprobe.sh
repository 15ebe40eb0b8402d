#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A count by argument on a uprobe: histd's hist trigger on a
# uprobe event against bpftrace's uprobe and the untraced program, in
# interleaved rounds with the variants in a shuffled order; medians
# (min..max) of the ns each call of the probed function costs.
#   untraced  tests/e2e/probe_target.c calling histd_probe_target CALLS times
#   histd     p:uprobes/... n=%di:s64 and hist:keys=n (a copy of the target)
#   bpftrace  uprobe:...:histd_probe_target { @[arg0] = count(); }
# Each variant attaches before its run and detaches after, so that only one
# probe is ever on the function.
#   bash bench/uprobe.sh    (as root; ROUNDS=7 CALLS=200000, HISTD_BUILD=dir)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/rounds.sh
need bpftrace bpftrace
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-200000}
B=$(realpath "${HISTD_BUILD:-build}")
T=/sys/kernel/tracing
WORK=$(mktemp -d /tmp/histd-bench-uprobe.XXXXXX)
MNT=$WORK/mnt
BIN=$WORK/probe_target
cp "$B/histd_probe_target" "$BIN"
ADDR=$((16#$(readelf -sW "$BIN" | awk '$8 == "histd_probe_target" { print $2 }')))
while read -r _ offset vaddr _ _ memsz _; do
  if ((ADDR >= vaddr && ADDR < vaddr + memsz)); then OFF=$(printf '0x%x' $((ADDR - vaddr + offset))); fi
done < <(readelf -lW "$BIN" | awk '$1 == "LOAD"')
EV=histd_bench$$
HISTD=
BT=
# The kernel's uprobe goes once histd, whose program is attached to it, is gone.
cleanup() {
  : >"$MNT/events/uprobes/$EV/trigger" 2>/dev/null || true
  bench_cleanup
  echo "-:uprobes/$EV" >>"$T/uprobe_events" 2>/dev/null || true
}
trap cleanup EXIT
start_histd
echo "p:uprobes/$EV $BIN:$OFF n=%di:s64" >>"$MNT/uprobe_events"

# ns per call of one run of the target.
run() {
  local t0 t1
  t0=$(date +%s%N)
  "$BIN" "$CALLS"
  t1=$(date +%s%N)
  echo $(((t1 - t0) / CALLS))
}
variant() {
  case $1 in
    untraced) run ;;
    histd)
      echo 'hist:keys=n' >"$MNT/events/uprobes/$EV/trigger"
      run
      : >"$MNT/events/uprobes/$EV/trigger" ;;
    bpftrace) with_bpftrace "uprobe:$BIN:histd_probe_target { @[arg0] = count(); }" ;;
  esac
}

interleaved_rounds ns/call untraced histd bpftrace
