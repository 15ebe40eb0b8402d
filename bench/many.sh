#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Many triggers on one event. K hist triggers on
# sys_enter_getppid, each counting every call (`hist:keys=common_pid if
# common_pid != <a pid no process has>`: K tables, all updated), against
# bpftrace with K probes doing the same (`@tK[pid] = count()` under the same
# filter) and against no tracing; ns per getppid() call of
# histd_bench_loop; then K triggers with a variable each
# (`hist:keys=common_pid:vK=common_pid if ...`, not plain) against bpftrace
# probes that keep one more map each (`@vK[pid] = pid`). Then activation,
# plain and with a variable: how long the write of the k-th trigger takes (a
# unit not in the object cache: the program of the event's chain that the
# trigger joins, four triggers at most, is compiled and loaded again), and
# the first trigger histd refuses (31 programs after the event program's
# slot). And 16 events with a trigger each, against bpftrace
# with a probe on each. Beside them, what no program can go below: the
# floor, an empty program on each traced event (bench/empty.bpf.c: the
# tracepoint's own cost); and one trigger, and the 16 events, in a second
# histd started with --raw-syscalls=true (histd_raw_1, histd_raw16: entered
# from the raw sys_enter tracepoint, which skips the classic syscall
# tracepoint's record but runs on every system call; docs/design/bpf.md).
# Interleaved rounds; medians (min..max).
#   bash bench/many.sh   (root; ROUNDS=5 CALLS=1000000 COUNTS="1 4 16 32",
#                         VAR_COUNTS="1 4 16 32 128",
#                         HISTD_BUILD=dir: that build, HISTD_OPTS: more
#                         histd options, e.g. "--triggers-per-program 0")
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
CALLS=${CALLS:-1000000}
COUNTS=${COUNTS:-1 4 16 32}
VAR_COUNTS=${VAR_COUNTS:-1 4 16 32 128}
B=$(realpath "${HISTD_BUILD:-build}")
source bench/rounds.sh
need bpftrace bpftrace
WORK=$(mktemp -d /tmp/histd-bench-many.XXXXXX)
HISTD=
BT=
trap bench_cleanup EXIT
# shellcheck disable=SC2086
start_histd ${HISTD_OPTS:-}
# shellcheck disable=SC2086
start_histd_raw ${HISTD_OPTS:-}
EV=$WORK/mnt/events/syscalls/sys_enter_getppid
EV_RAW=$WORK/mnt-raw/events/syscalls/sys_enter_getppid
EMPTY=("$B/histd_bench_attach" "$B/bpf/empty.bpf.o")
trigger() { echo "hist:keys=common_pid if common_pid != $((4000000 + $1))"; }
# The same with a variable: not plain (it is the event program's while it
# has room, then its chain's, in the order the triggers came).
var_trigger() { echo "hist:keys=common_pid:v$1=common_pid if common_pid != $((4000000 + $1))"; }
# ns per call of the loop; the arguments, if any, run it (the floor's attacher).
loop() { printf "%.0f\n" "$("$@" "$B/histd_bench_loop" "$CALLS")"; }
run() { FIGURE=$(loop); }

variant() {
  local k=${1#*_} i prog=
  case $1 in
    none) loop ;;
    floor_1) loop "${EMPTY[@]}" empty:syscalls:sys_enter_getppid -- ;;
    histd_raw_1)
      trigger 1 >"$EV_RAW/trigger"
      loop
      : >"$EV_RAW/trigger" ;;
        histd_* | histdvar_*)
      local make=trigger
      [[ $1 != histdvar_* ]] || make=var_trigger
      for i in $(seq "$k"); do "$make" "$i" >>"$EV/trigger"; done
      loop
      : >"$EV/trigger" ;;
    bpftracevar_*)
      for i in $(seq "$k"); do
        prog+="tracepoint:syscalls:sys_enter_getppid /pid != $((4000000 + i))/ { @t$i[pid] = count(); @v$i[pid] = pid; } "
      done
      with_bpftrace "$prog"
      echo "$FIGURE" ;;
    bpftrace_*)
      for i in $(seq "$k"); do
        prog+="tracepoint:syscalls:sys_enter_getppid /pid != $((4000000 + i))/ { @t$i[pid] = count(); } "
      done
      with_bpftrace "$prog"
      echo "$FIGURE" ;;
  esac
}
names=(none floor_1 histd_raw_1)
for k in $COUNTS; do names+=("histd_$k" "bpftrace_$k"); done
echo "K triggers (histd) or probes (bpftrace) on sys_enter_getppid, each counting every call:"
interleaved_rounds "ns per getppid()" "${names[@]}"
names=(none floor_1)
for k in $VAR_COUNTS; do names+=("histdvar_$k" "bpftracevar_$k"); done
echo "K triggers with a variable (histd) or probes keeping one more map each (bpftrace), each counting every call:"
interleaved_rounds "ns per getppid()" "${names[@]}"

# 16 events with a trigger each: histd_bench_loop's "spread" calls 16 system
# calls in turn, each event counting its own (and bpftrace a probe on each).
SPREAD=(getppid getpid getuid getgid geteuid getegid gettid getpgrp getsid getpgid times getpriority
        sched_getscheduler getcpu getresuid getresgid)
spread() { printf "%.0f\n" "$("$@" "$B/histd_bench_loop" "$CALLS" spread)"; }
variant() {
  local e prog=
  case $1 in
    none16) spread ;;
    floor16)
      local empties=()
      for e in "${SPREAD[@]}"; do empties+=("empty:syscalls:sys_enter_$e"); done
      spread "${EMPTY[@]}" "${empties[@]}" -- ;;
    histd16 | histd_raw16)
      local mnt=$WORK/mnt
      [ "$1" = histd16 ] || mnt=$WORK/mnt-raw
      for e in "${SPREAD[@]}"; do trigger 1 >>"$mnt/events/syscalls/sys_enter_$e/trigger"; done
      spread
      for e in "${SPREAD[@]}"; do : >"$mnt/events/syscalls/sys_enter_$e/trigger"; done ;;
    bpftrace16)
      for e in "${SPREAD[@]}"; do
        prog+="tracepoint:syscalls:sys_enter_$e /pid != 4000001/ { @$e[pid] = count(); } "
      done
      run() { FIGURE=$(spread); }
      with_bpftrace "$prog"
      echo "$FIGURE" ;;
  esac
}
echo "16 events with one trigger (histd) or probe (bpftrace) each, 16 system calls in turn:"
interleaved_rounds "ns per call" none16 floor16 histd16 histd_raw16 bpftrace16

# Activation of the k-th trigger, ROUNDS times from none: plain triggers,
# then triggers with a variable.
activation() {
  local make=$1 r k refused=
  declare -A act=()
  for r in $(seq "$ROUNDS"); do
    for k in $(seq 130); do
      # Triggers that differ only in a number share their object (numbers are
      # loaded, not compiled): without this, every write after the first few
      # would time a cached load, not the compile the header describes.
      rm -rf "$WORK/state/cache"
      t0=${EPOCHREALTIME/./}
      if ! "$make" $((1000000 + 1000 * r + k)) >>"$EV/trigger" 2>/dev/null; then
        refused=$k
        break
      fi
      act[$k]+="$(((${EPOCHREALTIME/./} - t0) / 1000)) "
    done
    : >"$EV/trigger"
  done
  echo "activation of the k-th trigger ($2) on one event, ms, median (min..max); trigger ${refused:-none up to 130} refused:"
  for k in 1 2 4 5 8 16 32 64 $((${refused:-131} - 1)); do
    [ -n "${act[$k]:-}" ] || continue
    python3 -c 'import statistics, sys; xs = [int(x) for x in sys.argv[2:]]
print(f"  k = {sys.argv[1]:>3}  {statistics.median(xs):5.0f} ({min(xs)}..{max(xs)})")' "$k" ${act[$k]}
  done
  grep -E 'would (use|need)' "$WORK/mnt/error_log" | tail -1 | sed 's/^\[[^]]*\] /  /' || true
}
activation trigger plain
activation var_trigger "with a variable"
