#!/usr/bin/env bash
# Real workloads (issue 23, point 1): what tracing costs them, and whether
# histd's histogram says what bpftrace's does.
#   runqlat   run-queue latency while hackbench (rt-tests) runs: histd as
#             the kernel's documents build it (seed 003's wakeup latency:
#             a variable per enqueue event, onmatch() on sched_switch to a
#             synthetic event, a .log2 histogram of µs), against Debian's
#             bpftrace runqlat.bt and untraced; hackbench's own time, ms.
#             runqlat.bt queues a task at sched_wakeup, sched_wakeup_new
#             and sched_switch with prev_state == TASK_RUNNING; histd the
#             same, with one variable per source.
#   syscalls  a count by process and system call (keys=common_pid.execname,
#             id.syscall on raw_syscalls:sys_enter) while dd copies 512-byte
#             blocks from /dev/zero to /dev/null (two calls per block),
#             against bpftrace's @[pid, comm, args->id] = count(); ms.
#   agree     one hackbench run with histd and runqlat.bt attached together:
#             both histograms in runqlat.bt's buckets ([2^k, 2^k+1) µs;
#             histd keys on the latency in ns by 1000 ns buckets, which this
#             script sums into those), and histd's own Missed.
# BCC's runqlat (bpfcc-tools) needs the running kernel's headers, which this
# machine does not have (no linux-headers for it, no CONFIG_IKHEADERS).
# runqlat.bt is read from /usr/sbin as Debian ships it, but for its
# `#include <linux/sched.h>` (bpftrace 0.17 finds no kernel headers here
# either, and does not take TASK_RUNNING from BTF): TASK_RUNNING is 0.
# Interleaved rounds, shuffled; medians (min..max).
#   bash bench/runqlat.sh   (root; ROUNDS=5 GROUPS_=4 LOOPS=1000 BLOCKS=1000000,
#                            SECTIONS="runqlat syscalls agree": any of them,
#                            HISTD_BUILD=dir: that build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
GROUPS_=${GROUPS_:-4}
LOOPS=${LOOPS:-1000}
BLOCKS=${BLOCKS:-1000000}
SECTIONS=${SECTIONS:-runqlat syscalls agree}
B=$(realpath "${HISTD_BUILD:-build}")
command -v hackbench >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q rt-tests >/dev/null
WORK=$(mktemp -d /tmp/histd-bench-runqlat.XXXXXX)
HISTD=
BT=
cleanup() {
  [ -z "$BT" ] || { kill -INT "$BT" 2>/dev/null || true; wait "$BT" 2>/dev/null || true; }
  [ -z "$HISTD" ] || { kill -TERM "$HISTD" 2>/dev/null || true; wait "$HISTD" 2>/dev/null || true; }
  mountpoint -q "$WORK/mnt" && fusermount3 -u "$WORK/mnt"
  rm -rf "$WORK"
}
trap cleanup EXIT
source bench/rounds.sh
mkdir -p "$WORK/mnt"
"$B/histd" --foreground --mount "$WORK/mnt" --socket "$WORK/sock" --state-dir "$WORK/state" --pin-dir "" \
  --config-dir "" >"$WORK/histd.log" 2>&1 &
HISTD=$!
for _ in $(seq 100); do [ -e "$WORK/mnt/events" ] && break; sleep 0.1; done
T=$WORK/mnt/events
echo 'runq_latency u64 lat' >>"$WORK/mnt/synthetic_events"
RUNQLAT_BT=$(sed -e '/^#/d' -e 's/TASK_RUNNING/0/' /usr/sbin/runqlat.bt)

# histd's runqlat; $1: the synthetic event's histogram.
runqlat_on() {
  echo 'hist:keys=pid:tw=common_timestamp' >>"$T/sched/sched_wakeup/trigger"
  echo 'hist:keys=pid:tn=common_timestamp' >>"$T/sched/sched_wakeup_new/trigger"
  local s=$T/sched/sched_switch/trigger
  echo 'hist:keys=prev_pid:tp=common_timestamp if prev_state == 0' >>"$s"
  echo 'hist:keys=next_pid:lw=common_timestamp-$tw:onmatch(sched.sched_wakeup).runq_latency($lw)' >>"$s"
  echo 'hist:keys=next_pid:ln=common_timestamp-$tn:onmatch(sched.sched_wakeup_new).runq_latency($ln)' >>"$s"
  echo 'hist:keys=next_pid:lp=common_timestamp-$tp:onmatch(sched.sched_switch).runq_latency($lp)' >>"$s"
  echo "$1" >>"$T/synthetic/runq_latency/trigger"
}
runqlat_off() {
  local f
  for f in synthetic/runq_latency sched/sched_switch sched/sched_wakeup sched/sched_wakeup_new; do : >"$T/$f/trigger"; done
}
hackbench_ms() { hackbench -g "$GROUPS_" -l "$LOOPS" | awk '/^Time:/ {printf "%.0f\n", $2 * 1000}'; }
dd_ms() {
  local t0=${EPOCHREALTIME/./}
  dd if=/dev/zero of=/dev/null bs=512 count="$BLOCKS" 2>/dev/null
  echo $(((${EPOCHREALTIME/./} - t0) / 1000))
}

variant() {
  case $1 in
    runqlat_none) hackbench_ms ;;
    runqlat_histd) runqlat_on 'hist:keys=lat.log2' && hackbench_ms && runqlat_off ;;
    runqlat_bpftrace) run() { FIGURE=$(hackbench_ms); } && with_bpftrace "$RUNQLAT_BT" && echo "$FIGURE" ;;
    syscalls_none) dd_ms ;;
    syscalls_histd)
      echo 'hist:keys=common_pid.execname,id.syscall' >"$T/raw_syscalls/sys_enter/trigger"
      dd_ms
      : >"$T/raw_syscalls/sys_enter/trigger" ;;
    syscalls_bpftrace)
      run() { FIGURE=$(dd_ms); }
      with_bpftrace 'tracepoint:raw_syscalls:sys_enter { @[pid, comm, args->id] = count(); }'
      echo "$FIGURE" ;;
  esac
}
if [[ " $SECTIONS " == *" runqlat "* ]]; then
  echo "hackbench -g $GROUPS_ -l $LOOPS, its time; run-queue latency traced:"
  interleaved_rounds "ms" runqlat_none runqlat_histd runqlat_bpftrace
fi
if [[ " $SECTIONS " == *" syscalls "* ]]; then
  echo "dd of $BLOCKS 512-byte blocks, /dev/zero to /dev/null; a count by process and system call:"
  interleaved_rounds "ms" syscalls_none syscalls_histd syscalls_bpftrace
fi

# Both attached to the same run, in both orders: at a tracepoint the
# program attached last runs first, so each one's timestamps come after the
# other's program (or before it) by that program's time.
agree() {
  if [ "$1" = histd ]; then
    runqlat_on 'hist:keys=lat.buckets=1000:size=16384'
    run() { hackbench_ms >/dev/null; }
  else
    run() { runqlat_on 'hist:keys=lat.buckets=1000:size=16384' && hackbench_ms >/dev/null; }
  fi
  with_bpftrace "$RUNQLAT_BT"
  cp "$T/synthetic/runq_latency/hist" "$WORK/histd.hist"
  grep -h '^    Missed:' "$T"/sched/*/hist "$T/synthetic/runq_latency/hist" | awk '{m += $2} END {print m + 0}' \
    >"$WORK/missed"
  runqlat_off
  compare "$1 attached first"
}
compare() {
python3 - "$WORK/bt.log" "$WORK/histd.hist" "$(cat "$WORK/missed")" "$1" <<'PY'
import re, sys
def bucket(us):  # runqlat.bt's hist(): [0], [1], [2, 4), [4, 8) ...
    return 0 if us == 0 else 1 << (us.bit_length() - 1)
def label(lo):
    return f"[{lo}]" if lo < 2 else f"[{lo}, {2 * lo})"
def number(text):  # bpftrace's labels: 512, 1K, 2M (powers of 1024)
    return int(text.rstrip("KMG")) * 1024 ** ("KMG".find(text[-1]) + 1 if text[-1] in "KMG" else 0)
bt, hd = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"\[(\d+[KMG]?)(?:, \d+[KMG]?\)|\])\s+(\d+)", line)  # [lo, hi) count, or [n] count
    if m:
        lo = number(m.group(1))
        bt[lo] = bt.get(lo, 0) + int(m.group(2))
entries = 0
for line in open(sys.argv[2]):
    m = re.match(r"\{ lat: ~ (\d+)-\d+ \} hitcount:\s+(\d+)", line)
    if m:
        entries += 1
        b = bucket(int(m.group(1)) // 1000)
        hd[b] = hd.get(b, 0) + int(m.group(2))
dropped = re.search(r"Dropped: (\d+)", open(sys.argv[2]).read())
print(f"one hackbench run, both attached ({sys.argv[4]}): runq latency, usecs (histd: {entries} ns-buckets, "
      f"Dropped {dropped.group(1) if dropped else '?'}, Missed {sys.argv[3]})")
print(f"  {'usecs':>18} {'runqlat.bt':>10} {'histd':>10} {'diff':>7}")
for lo in sorted(set(bt) | set(hd)):
    a, b = bt.get(lo, 0), hd.get(lo, 0)
    print(f"  {label(lo):>18} {a:10d} {b:10d} {b - a:+7d}")
ta, tb = sum(bt.values()), sum(hd.values())
print(f"  {'total':>18} {ta:10d} {tb:10d} {tb - ta:+7d}")
PY
}
if [[ " $SECTIONS " == *" agree "* ]]; then
  agree histd
  agree bpftrace
fi
