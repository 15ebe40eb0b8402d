#!/usr/bin/env bash
# Keys that never repeat (issue 23, point 2): a count by fd on
# sys_enter_close while histd_bench_close closes CALLS distinct invalid fds,
# every event a new key. The table (2048 entries, the kernel's default
# size) is full after 2048 calls; from then on every event is a miss and a
# failed insert (histd's Dropped). ns per close() call, wall clock, for:
#   none      untraced
#   floor     the empty program attached to sys_enter_close
#   hand      the same count written by hand (bench/hand.bpf.c hand_fd)
#   histd     hist:keys=fd, with its hot slots (chosen by the planner)
#   noslots   the same table without hot slots (a named table has none):
#             what the hot slots cost where no key repeats
#   bpftrace  @[args->fd] = count(), its map capped at the same 2048 keys
# Interleaved rounds, shuffled; medians (min..max).
#   bash bench/fresh.sh   (root; ROUNDS=7 CALLS=1000000, HISTD_BUILD=dir: that build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-1000000}
B=$(realpath "${HISTD_BUILD:-build}")
WORK=$(mktemp -d /tmp/histd-bench-fresh.XXXXXX)
HISTD=
BT=
source bench/rounds.sh
trap bench_cleanup EXIT
start_histd
EV=$WORK/mnt/events/syscalls/sys_enter_close
CLOSE="$B/histd_bench_close $CALLS $((1 << 24)) time"
ATTACH=$B/histd_bench_attach
export BPFTRACE_MAP_KEYS_MAX=2048
# A whole number of ns per call (what interleaved_rounds reads).
closes() { printf "%.0f\n" "$("$@" $CLOSE)"; }
run() { FIGURE=$(closes); }
# The last histd round's table: full, and the rest dropped.
histd_once() {
  echo "$1" >"$EV/trigger"
  closes
  grep -E '^    (Entries|Dropped):' "$EV/hist" | tr -s ' ' | tr '\n' ' ' >"$WORK/last_$2"
  : >"$EV/trigger"
}

variant() {
  case $1 in
    none) closes ;;
    floor) closes "$ATTACH" "$B/bpf/empty.bpf.o" empty:syscalls:sys_enter_close -- ;;
    hand) closes "$ATTACH" "$B/bpf/hand.bpf.o" hand_fd:syscalls:sys_enter_close -- ;;
    histd) histd_once "hist:keys=fd" histd ;;
    noslots) histd_once "hist:name=fresh_fds:keys=fd" noslots ;;
    bpftrace)
      with_bpftrace 'tracepoint:syscalls:sys_enter_close { @[args->fd] = count(); }'
      echo "$FIGURE" ;;
  esac
}
echo "close() of $CALLS distinct fds, a count by fd in a 2048-entry table:"
interleaved_rounds "ns per close()" none floor hand histd noslots bpftrace
echo "histd's table after its last round: $(cat "$WORK/last_histd")"
echo "without hot slots:                  $(cat "$WORK/last_noslots")"
