#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Which timer wakeups no BPF program sees (docs/compatibility.md, "Missed events"): a task
# named cyclictest sleeps 10 ms, 20 times, ROUNDS times over, while the
# kernel's own event buffer records every sched_waking (with the current
# task and, for the workload's, a stack trace), and histd_bench_wakeups
# counts the workload's wakeups through the classic tracepoint and the raw
# one, and every wakeup whose current task is named CURRENT (default
# tokio-rt-worker: a thread of the VM's agent on the machines this was
# measured on). Prints per pass what each saw, and where in the kernel the
# buffer's stack trace puts one such wakeup of the workload.
#   bash bench/lost_wakeups.sh   (as root; ROUNDS=150 PASSES=3 CURRENT=...,
#                                  HISTD_BUILD=dir: that build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-150}
PASSES=${PASSES:-3}
B=$(realpath "${HISTD_BUILD:-build}")
T=/sys/kernel/tracing
[ -e "$T/trace" ] || mount -t tracefs nodev "$T"
WORK=$(mktemp -d /tmp/histd-bench-wakeups.XXXXXX)
clock=$(sed 's/.*\[\(.*\)\].*/\1/' "$T/trace_clock")
cleanup() {
  echo 0 >"$T/events/sched/sched_waking/enable"
  echo '!stacktrace if comm == "cyclictest"' >"$T/events/sched/sched_waking/trigger" 2>/dev/null || true
  echo 0 >"$T/events/sched/sched_waking/filter"
  rm -rf "$WORK"
}
trap cleanup EXIT
cp "$(command -v perl)" "$WORK/cyclictest"
workload() {
  for _ in $(seq "$ROUNDS"); do "$WORK/cyclictest" -e 'select(undef, undef, undef, 0.01) for 1..20;'; done
}
# One pass: the buffer and the programs side by side; prints both.
pass() {
  echo >"$T/trace"
  echo 'stacktrace if comm == "cyclictest"' >"$T/events/sched/sched_waking/trigger"
  echo 1 >"$T/events/sched/sched_waking/enable"
  local seen
  seen=$("$B/histd_bench_wakeups" "$B/bpf/wakeups.bpf.o" "$1" -- bash -c "$(declare -f workload); ROUNDS=$ROUNDS WORK=$WORK workload")
  echo 0 >"$T/events/sched/sched_waking/enable"
  echo '!stacktrace if comm == "cyclictest"' >"$T/events/sched/sched_waking/trigger"
  cp "$T/trace" "$WORK/trace"
  python3 - "$WORK/trace" "$1" "$seen" <<'PY'
import re, sys, collections
lines = open(sys.argv[1]).read().split("\n")
current, seen = sys.argv[2], dict(zip(*[iter(sys.argv[3].split())] * 2))
wakes = [l for l in lines if "sched_waking:" in l]
task = lambda l: re.sub(r"-\d+$", "", l.split("[")[0].strip())
workload = [l for l in wakes if "comm=cyclictest " in l]
by_task = collections.Counter(task(l) for l in workload)
print(f"  the kernel's buffer: {len(workload)} wakeups of cyclictest, by current task: "
      + ", ".join(f"{t} {n}" for t, n in by_task.most_common()))
print(f"  BPF: classic {seen['classic']}, raw {seen['raw']} (recursion misses {seen['classic_misses']}, "
      f"{seen['raw_misses']}); {len(workload) - int(seen['raw'])} not seen")
under = [l for l in wakes if task(l) == current]
print(f"  every wakeup with current task {current}: {len(under)} in the buffer, {seen['raw_by_current']} seen by BPF")
for i, l in enumerate(lines):
    if "comm=cyclictest " not in l or task(l) != current:
        continue
    cpu = re.search(r"\[(\d+)\]", l).group(1)
    j = next((j for j in range(i + 1, len(lines)) if "<stack trace>" in lines[j] and f"[{cpu}]" in lines[j]), None)
    if j is None:
        continue
    frames = []
    for f in lines[j + 1:]:
        if not f.startswith(" =>"):
            break
        frames.append(f[4:].strip())
    print(f"  one of them: {l.strip()}\n    its stack: {' < '.join(frames[2:10])} ...")
    break
PY
}
echo "the timer wakeups of cyclictest (20 sleeps of 10 ms, $ROUNDS times), trace_clock $clock"
echo 0 >"$T/events/sched/sched_waking/filter"  # every wakeup recorded, the workload's picked out after
for p in $(seq "$PASSES"); do
  echo "pass $p:"
  pass "${CURRENT:-tokio-rt-worker}"
done
