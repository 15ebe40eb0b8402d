#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Real workloads: what tracing costs them, and whether
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
#             And the run time of the tracer's own BPF programs meanwhile
#             (kernel.bpf_stats_enabled), which the workload's noise hides
#             less: ms per hackbench run.
#   pipe      the same tracers (and the floor: an empty program on each of
#             the three tracepoints, classic or BTF-typed as BCC's; histd
#             as it attaches them by default, BTF-typed, and a second histd
#             with --btf-tracepoints=false, classic; and the BTF-typed floor
#             reading the clock once a program, as every such tool must;
#             and the kernel's form written by hand, bench/runq_form.bpf.c:
#             form_hash with every variable in its trigger's table, as the
#             kernel and histd keep them, form_task with the variables in
#             task-local storage, form_min with the three in one, form_lean
#             with the tables' counts by pid there too) while
#             `perf bench sched pipe` (Debian's linux-perf) passes a token
#             between two processes pinned to one CPU: every round trip is two wakeups and two switches, and
#             nothing else runs there, so what a tracer adds shows above
#             the noise that hides it under hackbench; ns per round trip,
#             and the BPF run time per round trip.
#   agree     one hackbench run with histd and runqlat.bt attached together,
#             then with histd and BCC's runqlat, each pair in both attach
#             orders: both histograms in the other tool's buckets (histd
#             keys on the latency in ns by 1000 ns buckets, which this
#             script sums into those), and histd's own Missed.
# BCC's runqlat is its libbpf-tools build (Debian's libbpf-tools,
# /usr/sbin/runqlat: CO-RE, BTF): the Python one (bpfcc-tools) compiles
# against the running kernel's headers, which this machine does not have.
# It queues a task that is switched out while runnable by its task state, so
# preempted ones too (their prev_state is TASK_REPORT_MAX, 256, not 0), and
# never pid 0 (the idle tasks, one per CPU, all pid 0; runqlat.bt queues
# them): histd's twin of it filters (prev_state == 0 || prev_state == 256)
# && prev_pid != 0.
# runqlat.bt is read from /usr/sbin as Debian ships it, but for its
# `#include <linux/sched.h>` (bpftrace 0.17 finds no kernel headers here
# either, and does not take TASK_RUNNING from BTF): TASK_RUNNING is 0.
# Interleaved rounds, shuffled; medians (min..max).
#   bash bench/runqlat.sh   (root; ROUNDS=5 GROUPS_=4 LOOPS=1000 BLOCKS=1000000,
#                            PIPE_LOOPS=100000, PIPE_ROUNDS=15,
#                            PIPE_VARIANTS="pipe_none pipe_floor_btf ...":
#                            some of the pipe section's variants,
#                            SECTIONS="runqlat pipe syscalls agree": any of them,
#                            HISTD_BUILD=dir: that build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
GROUPS_=${GROUPS_:-4}
LOOPS=${LOOPS:-1000}
BLOCKS=${BLOCKS:-1000000}
PIPE_LOOPS=${PIPE_LOOPS:-100000}
PIPE_ROUNDS=${PIPE_ROUNDS:-15}
PIPE_VARIANTS=${PIPE_VARIANTS:-pipe_none pipe_floor pipe_floor_btf pipe_floor_btf_clock pipe_form_hash pipe_form_task
  pipe_form_min pipe_form_lean pipe_histd pipe_histd_classic pipe_bpftrace pipe_bcc}
SECTIONS=${SECTIONS:-runqlat pipe syscalls agree}
B=$(realpath "${HISTD_BUILD:-build}")
BCC_RUNQLAT=/usr/sbin/runqlat
source bench/rounds.sh
need bpftrace bpftrace
need hackbench rt-tests
need perf linux-perf
need /usr/sbin/runqlat libbpf-tools
WORK=$(mktemp -d /tmp/histd-bench-runqlat.XXXXXX)
HISTD=
BT=
BCC=
STATS_WERE=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
  [ -z "$BCC" ] || { kill -INT "$BCC" 2>/dev/null || true; wait "$BCC" 2>/dev/null || true; }
  bench_cleanup
  sysctl -qw kernel.bpf_stats_enabled="$STATS_WERE"
}
trap cleanup EXIT
sysctl -qw kernel.bpf_stats_enabled=1
start_histd
start_histd_classic
T=$WORK/mnt/events
TREE=$T
CLASSIC=$WORK/mnt-classic/events
echo 'runq_latency u64 lat' >>"$WORK/mnt/synthetic_events"
echo 'runq_latency u64 lat' >>"$WORK/mnt-classic/synthetic_events"
RUNQLAT_BT=$(sed -e '/^#/d' -e 's/TASK_RUNNING/0/' /usr/sbin/runqlat.bt)

# The caller's `run` while BCC's runqlat traces (once it says so, and half
# a second more); its histogram goes to $WORK/bcc.log when it ends. Its
# "Tracing" line is line-buffered (stdbuf): in a file it was held until
# the end, this loop polled for its 10 s, and BCC counted the polling's
# forks and switches as latencies the tool attached after it never saw.
with_bcc() {
  stdbuf -oL "$BCC_RUNQLAT" >"$WORK/bcc.log" 2>&1 &
  BCC=$!
  local _
  for _ in $(seq 200); do grep -q '^Tracing' "$WORK/bcc.log" && break; sleep 0.05; done
  grep -q '^Tracing' "$WORK/bcc.log" || { echo "BCC's runqlat did not start: $(cat "$WORK/bcc.log")" >&2; return 1; }
  sleep 0.5
  run
  kill -INT "$BCC"
  wait "$BCC" || true
  BCC=
}
# histd's runqlat; $1: the synthetic event's histogram; $2: which switches
# out queue the task again (runqlat.bt's rule unless given).
runqlat_on() {
  echo 'hist:keys=pid:tw=common_timestamp' >>"$T/sched/sched_wakeup/trigger"
  echo 'hist:keys=pid:tn=common_timestamp' >>"$T/sched/sched_wakeup_new/trigger"
  local s=$T/sched/sched_switch/trigger
  echo "hist:keys=prev_pid:tp=common_timestamp if ${2:-prev_state == 0}" >>"$s"
  echo 'hist:keys=next_pid:lw=common_timestamp-$tw:onmatch(sched.sched_wakeup).runq_latency($lw)' >>"$s"
  echo 'hist:keys=next_pid:ln=common_timestamp-$tn:onmatch(sched.sched_wakeup_new).runq_latency($ln)' >>"$s"
  echo 'hist:keys=next_pid:lp=common_timestamp-$tp:onmatch(sched.sched_switch).runq_latency($lp)' >>"$s"
  echo "$1" >>"$T/synthetic/runq_latency/trigger"
}
runqlat_off() {
  local f
  for f in synthetic/runq_latency sched/sched_switch sched/sched_wakeup sched/sched_wakeup_new; do : >"$T/$f/trigger"; done
}
# Run time of the tracing BPF programs on the machine (kernel.bpf_stats_enabled),
# ns: only the variant being measured has any attached. bpf_snap prints
# each program's run time so far, by id; bpf_since SNAP what has run
# since, program by program. A program gone since the snapshot counts
# nothing: one a variant of the round before detached may still have been
# awaiting its free at the snapshot (a plain sum once read -1156 ns).
bpf_snap() {
  bpftool prog show -j | python3 -c 'import json, sys
print(json.dumps({str(p["id"]): p.get("run_time_ns", 0) for p in json.load(sys.stdin)
                  if p["type"] in ("tracepoint", "raw_tracepoint", "tracing", "perf_event", "kprobe")}))'
}
bpf_since() {
  bpf_snap | python3 -c 'import json, sys
before, now = json.loads(sys.argv[1]), json.load(sys.stdin)
print(sum(t - before.get(i, 0) for i, t in now.items()))' "$1"
}
# hackbench's time, ms; the BPF run time during it, ms, to $WORK/bpf_time.
hackbench_ms() {
  local before; before=$(bpf_snap)
  hackbench -g "$GROUPS_" -l "$LOOPS" | awk '/^Time:/ {printf "%.0f\n", $2 * 1000}'
  echo $(($(bpf_since "$before") / 1000000)) >"$WORK/bpf_time"
}
# ns per round trip of perf bench sched pipe on CPU 1; the BPF run time
# per round trip, ns, to $WORK/bpf_time.
pipe_ns() {
  local before; before=$(bpf_snap)
  taskset -c 1 perf bench sched pipe -l "$PIPE_LOOPS" | awk '/usecs\/op/ {printf "%.0f\n", $1 * 1000}'
  echo $(($(bpf_since "$before") / PIPE_LOOPS)) >"$WORK/bpf_time"
}
dd_ms() {
  local t0=${EPOCHREALTIME/./}
  dd if=/dev/zero of=/dev/null bs=512 count="$BLOCKS" 2>/dev/null
  echo $(((${EPOCHREALTIME/./} - t0) / 1000))
}

variant() {
  rm -f "$WORK/bpf_time"
  one "$1"
  [ ! -f "$WORK/bpf_time" ] || echo "$(cat "$WORK/bpf_time") " >>"$WORK/bpf_of_$1"
}
# The BPF run time each variant's runs recorded: median (min..max) in $1.
bpf_times() {
  local unit=$1 v
  shift
  for v in "$@"; do
    python3 -c 'import statistics, sys; xs = sorted(int(x) for x in sys.argv[3:])
print(f"{sys.argv[1]:9s} {statistics.median(xs):7.0f} {sys.argv[2]} ({xs[0]}..{xs[-1]})")' "$v" "$unit" $(cat "$WORK/bpf_of_$v")
  done
}
# What each variant adds to the untraced round trip of the same round
# (the host's pace drifts between rounds more than a tracer costs), the
# median over the rounds, and as a multiple of the BTF-typed floor's.
added_per_round() {
  local dir=$1
  shift
  [ -f "$dir/pipe_none" ] || return 0
  echo "added to the same round's untraced round trip, median over the rounds (× the BTF-typed floor's):"
  python3 - "$dir" "$@" <<'PY'
import pathlib, statistics, sys
d = pathlib.Path(sys.argv[1])
runs = {v: [int(x) for x in (d / v).read_text().split()] for v in sys.argv[2:]}
added = {v: statistics.median(a - b for a, b in zip(xs, runs["pipe_none"])) for v, xs in runs.items() if v != "pipe_none"}
floor = added.get("pipe_floor_btf")
for v, ns in added.items():
    print(f"{v:9s} {ns:7.0f} ns" + (f" ({ns / floor:.2f}×)" if floor and floor > 0 else ""))
PY
}
one() {
  case $1 in
    runqlat_none) hackbench_ms ;;
    runqlat_histd) runqlat_on 'hist:keys=lat.log2' && hackbench_ms && runqlat_off ;;
    runqlat_bpftrace) run() { FIGURE=$(hackbench_ms); } && with_bpftrace "$RUNQLAT_BT" && echo "$FIGURE" ;;
    runqlat_bcc) run() { FIGURE=$(hackbench_ms); } && with_bcc && echo "$FIGURE" ;;
    pipe_none) pipe_ns ;;
    pipe_floor | pipe_floor_btf | pipe_floor_btf_clock)
      local floor=(empty:sched:sched_wakeup empty:sched:sched_wakeup_new empty:sched:sched_switch)
      [ "$1" != pipe_floor_btf ] || floor=(empty_btf_wakeup:raw:sched_wakeup empty_btf_wakeup_new:raw:sched_wakeup_new
                                           empty_btf_switch:raw:sched_switch)
      [ "$1" != pipe_floor_btf_clock ] || floor=(clock_btf_wakeup:raw:sched_wakeup
                                                 clock_btf_wakeup_new:raw:sched_wakeup_new clock_btf_switch:raw:sched_switch)
            "$B/histd_bench_attach" "$B/bpf/empty.bpf.o" "${floor[@]}" -- \
        bash -c "$(declare -f bpf_snap bpf_since pipe_ns); WORK=$WORK PIPE_LOOPS=$PIPE_LOOPS pipe_ns" ;;
    pipe_form_hash | pipe_form_task | pipe_form_min | pipe_form_lean)
      local f=${1#pipe_} exit=()
      [ "$f" != form_lean ] || exit=(form_lean_exit:raw:sched_process_exit)
      "$B/histd_bench_attach" "$B/bpf/runq_form.bpf.o" "${f}_wakeup:raw:sched_wakeup" \
        "${f}_wakeup_new:raw:sched_wakeup_new" "${f}_switch:raw:sched_switch" "${exit[@]}" -- \
        bash -c "$(declare -f bpf_snap bpf_since pipe_ns); WORK=$WORK PIPE_LOOPS=$PIPE_LOOPS pipe_ns" ;;
    pipe_histd) runqlat_on 'hist:keys=lat.log2' && pipe_ns && runqlat_off ;;
    pipe_histd_classic) T=$CLASSIC && runqlat_on 'hist:keys=lat.log2' && pipe_ns && runqlat_off && T=$TREE ;;
    pipe_bpftrace) run() { FIGURE=$(pipe_ns); } && with_bpftrace "$RUNQLAT_BT" && echo "$FIGURE" ;;
    pipe_bcc) run() { FIGURE=$(pipe_ns); } && with_bcc && echo "$FIGURE" ;;
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
  interleaved_rounds "ms" runqlat_none runqlat_histd runqlat_bpftrace runqlat_bcc
  echo "the same runs: run time of the tracer's BPF programs during hackbench (kernel.bpf_stats_enabled):"
  bpf_times ms runqlat_histd runqlat_bpftrace runqlat_bcc
fi
if [[ " $SECTIONS " == *" pipe "* ]]; then
  echo "perf bench sched pipe -l $PIPE_LOOPS on one CPU, ns per round trip (two wakeups, two switches):"
  read -ra pipe_variants <<<"$PIPE_VARIANTS"
  mkdir -p "$WORK/rounds"
  ROUNDS=$PIPE_ROUNDS ROUNDS_DIR=$WORK/rounds interleaved_rounds "ns" "${pipe_variants[@]}"
  echo "the same runs: BPF run time per round trip:"
  bpf_times ns $(printf '%s\n' "${pipe_variants[@]}" | grep -vx pipe_none)
  added_per_round "$WORK/rounds" "${pipe_variants[@]}"
fi
if [[ " $SECTIONS " == *" syscalls "* ]]; then
  echo "dd of $BLOCKS 512-byte blocks, /dev/zero to /dev/null; a count by process and system call:"
  interleaved_rounds "ms" syscalls_none syscalls_histd syscalls_bpftrace
fi

# Both attached to the same run, in both orders: at a tracepoint the
# program attached last runs first, so each one's timestamps come after the
# other's program (or before it) by that program's time. $1: bpftrace or
# bcc (histd then queues as that tool does); $2: which is attached first.
agree() {
  local rule='prev_state == 0' with=with_bpftrace tool=runqlat.bt log=$WORK/bt.log
  [ "$1" = bcc ] && rule='(prev_state == 0 || prev_state == 256) && prev_pid != 0' with=with_bcc tool=BCC log=$WORK/bcc.log
  local table='hist:keys=lat.buckets=1000:size=16384'
  if [ "$2" = histd ]; then
    runqlat_on "$table" "$rule"
    run() { hackbench_ms >/dev/null; }
  else
    run() { runqlat_on "$table" "$rule" && hackbench_ms >/dev/null; }
  fi
  $with "$RUNQLAT_BT"
  cp "$T/synthetic/runq_latency/hist" "$WORK/histd.hist"
  # No Missed line at all (none missed) is not an error.
  { grep -h '^    Missed:' "$T"/sched/*/hist "$T/synthetic/runq_latency/hist" || true; } |
    awk '{m += $2} END {print m + 0}' >"$WORK/missed"
  runqlat_off
  python3 - "$1" "$log" "$WORK/histd.hist" "$(cat "$WORK/missed")" "$tool, $2 attached first" <<'PY'
import re, sys
tool, tool_log, histd_hist, missed, title = sys.argv[1:6]
def bucket(us):  # bpftrace's hist(): [0], [1], [2, 4) ...; BCC's: 0 -> 1, 2 -> 3, 4 -> 7 ...
    if us < 2:
        return us if tool == "bpftrace" else 0
    return 1 << (us.bit_length() - 1)
def label(lo):
    if tool == "bcc":
        return f"{lo} -> {max(2 * lo - 1, 1)}"
    return f"[{lo}]" if lo < 2 else f"[{lo}, {2 * lo})"
def number(text):  # bpftrace's labels: 512, 1K, 2M (powers of 1024)
    return int(text.rstrip("KMG")) * 1024 ** ("KMG".find(text[-1]) + 1 if text[-1] in "KMG" else 0)
theirs, ours = {}, {}
for line in open(tool_log):
    if tool == "bpftrace":
        m = re.match(r"\[(\d+[KMG]?)(?:, \d+[KMG]?\)|\])\s+(\d+)", line)  # [lo, hi) count, or [n] count
    else:
        m = re.match(r"\s*(\d+) -> \d+\s+: (\d+)", line)  # lo -> hi : count
    if m:
        lo = number(m.group(1))
        theirs[lo] = theirs.get(lo, 0) + int(m.group(2))
entries = 0
for line in open(histd_hist):
    m = re.match(r"\{ lat: ~ (\d+)-\d+ \} hitcount:\s+(\d+)", line)
    if m:
        entries += 1
        b = bucket(int(m.group(1)) // 1000)
        ours[b] = ours.get(b, 0) + int(m.group(2))
dropped = re.search(r"Dropped: (\d+)", open(histd_hist).read())
print(f"one hackbench run, both attached ({title}): runq latency, usecs "
      f"(histd: {entries} ns-buckets, Dropped {dropped.group(1) if dropped else '?'}, Missed {missed})")
print(f"  {'usecs':>18} {tool:>10} {'histd':>10} {'diff':>7}")
for lo in sorted(set(theirs) | set(ours)):
    a, b = theirs.get(lo, 0), ours.get(lo, 0)
    print(f"  {label(lo):>18} {a:10d} {b:10d} {b - a:+7d}")
ta, tb = sum(theirs.values()), sum(ours.values())
print(f"  {'total':>18} {ta:10d} {tb:10d} {tb - ta:+7d}")
PY
}
if [[ " $SECTIONS " == *" agree "* ]]; then
  agree bpftrace histd
  agree bpftrace bpftrace
  agree bcc histd
  agree bcc bcc
fi
