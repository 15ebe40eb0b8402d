#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Keys that never repeat: a count by fd on
# sys_enter_close while histd_bench_close closes CALLS distinct invalid fds,
# every event a new key. The table (2048 entries, the kernel's default
# size) is full after 2048 calls; from then on every event is a miss and a
# failed insert (histd's Dropped). ns per close() call, wall clock, for:
#   none      untraced
#   floor     the empty program attached to sys_enter_close
#   floor_raw an empty program on the raw sys_enter tracepoint (it checks
#             the system call's number, as histd's raw dispatcher does)
#   hand      the same count written by hand (bench/hand.bpf.c hand_fd)
#   histd     hist:keys=fd, with its hot slots (chosen by the planner)
#   noslots   the same table without hot slots (a named table has none):
#             what the hot slots cost where no key repeats
#   histd_raw hist:keys=fd in a second histd started with
#             --raw-syscalls=true (sys_enter_close entered from the raw
#             sys_enter tracepoint; every other system call then pays the
#             raw program's check: docs/performance.md)
#   bpftrace  @[args->fd] = count(), its map capped at the same 2048 keys
# Then, in-kernel (SECTIONS: wall stats), ns per close() of BPF run time
# (run_time_ns over the calls, statistics on through histd_bench_stats for
# that section only) of the programs floor, hand, histd, noslots and
# bpftrace attached: the work each does, without the tracepoint's own cost
# around it, which the wall clock holds.
# Interleaved rounds, shuffled; medians (min..max).
#   bash bench/fresh.sh   (root; ROUNDS=7 CALLS=1000000 SECTIONS="wall stats",
#                          HISTD_BUILD=dir: that build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-1000000}
SECTIONS=${SECTIONS:-wall stats}
B=$(realpath "${HISTD_BUILD:-build}")
source bench/rounds.sh
need bpftrace bpftrace
WORK=$(mktemp -d /tmp/histd-bench-fresh.XXXXXX)
HISTD=
BT=
HISTD_RAW=
trap bench_cleanup EXIT
start_histd
# The second histd, on the raw tracepoints.
start_histd_raw
EV=$WORK/mnt/events/syscalls/sys_enter_close
CLOSE="$B/histd_bench_close $CALLS $((1 << 24)) time"
ATTACH=$B/histd_bench_attach
export BPFTRACE_MAP_KEYS_MAX=2048
# A whole number of ns per call (what interleaved_rounds reads).
closes() { printf "%.0f\n" "$("$@" $CLOSE)"; }
run() { FIGURE=$(closes); }
# The last histd round's table: full, and the rest dropped. $3: the
# event's directory (default: the first histd's).
histd_once() {
  local ev=${3:-$EV}
  echo "$1" >"$ev/trigger"
  closes
  grep -E '^    (Entries|Dropped):' "$ev/hist" | tr -s ' ' | tr '\n' ' ' >"$WORK/last_$2"
  : >"$ev/trigger"
}

# In-kernel: BPF run time per close() of the programs process $1 holds,
# over the closes run between two snapshots (bench/progstats.py).
closes_in_kernel() {
  python3 bench/progstats.py snap "$1" >"$WORK/before"
  "$B/histd_bench_close" "$CALLS" $((1 << 24)) time >/dev/null
  python3 bench/progstats.py snap "$1" >"$WORK/after"
  printf "%.0f\n" "$(python3 bench/progstats.py delta "$WORK/before" "$WORK/after" "$CALLS" | cut -d' ' -f1)"
}
export -f closes_in_kernel
export B CALLS WORK
in_kernel() {
  # The attacher holds the program: the command it runs is its child.
  case $1 in
    floor) "$ATTACH" "$B/bpf/empty.bpf.o" empty:syscalls:sys_enter_close -- bash -c 'closes_in_kernel $PPID' ;;
    hand) "$ATTACH" "$B/bpf/hand.bpf.o" hand_fd:syscalls:sys_enter_close -- bash -c 'closes_in_kernel $PPID' ;;
    histd | noslots)
      local cmd=hist:keys=fd
      [ "$1" = histd ] || cmd=hist:name=fresh_fds:keys=fd
      echo "$cmd" >"$EV/trigger"
      closes_in_kernel "$HISTD"
      : >"$EV/trigger" ;;
    bpftrace)
      run() { FIGURE=$(closes_in_kernel "$BT"); }
      with_bpftrace 'tracepoint:syscalls:sys_enter_close { @[args->fd] = count(); }'
      echo "$FIGURE" ;;
  esac
}

variant() {
  [ "$MODE" = wall ] || { in_kernel "$1"; return; }
  case $1 in
    none) closes ;;
    floor) closes "$ATTACH" "$B/bpf/empty.bpf.o" empty:syscalls:sys_enter_close -- ;;
    floor_raw) closes "$ATTACH" "$B/bpf/empty.bpf.o" empty_raw:raw:sys_enter -- ;;
    hand) closes "$ATTACH" "$B/bpf/hand.bpf.o" hand_fd:syscalls:sys_enter_close -- ;;
    histd) histd_once "hist:keys=fd" histd ;;
    noslots) histd_once "hist:name=fresh_fds:keys=fd" noslots ;;
    histd_raw) histd_once "hist:keys=fd" histd_raw "$WORK/mnt-raw/events/syscalls/sys_enter_close" ;;
    bpftrace)
      with_bpftrace 'tracepoint:syscalls:sys_enter_close { @[args->fd] = count(); }'
      echo "$FIGURE" ;;
  esac
}
if [[ " $SECTIONS " == *" wall "* ]]; then
  MODE=wall
  echo "close() of $CALLS distinct fds, a count by fd in a 2048-entry table:"
  interleaved_rounds "ns per close()" none floor floor_raw hand histd noslots histd_raw bpftrace
  echo "histd's table after its last round: $(cat "$WORK/last_histd")"
  echo "without hot slots:                  $(cat "$WORK/last_noslots")"
  echo "on the raw tracepoint:              $(cat "$WORK/last_histd_raw")"
fi
if [[ " $SECTIONS " == *" stats "* ]]; then
  MODE=stats
  stats_on
  echo "in-kernel: BPF run time per close() of the programs attached, the same table:"
  interleaved_rounds "ns per close()" floor hand histd noslots bpftrace
  stats_off
fi
