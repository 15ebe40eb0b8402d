#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What a new trigger's compile costs the tree's readers: a reader loops on a
# hist file (another event's, 1 ms between reads) while a trigger is
# written; prints, medians (min..max) over ROUNDS, how long the write took,
# the longest read during it and the half second after, and the longest
# read of the half second before (the floor). Two writes: "new shape", a
# trigger of a shape never compiled on sched_process_fork; "synthetic", the
# last command of the kernel's run-queue latency form (`keys=lat.log2` on
# the synthetic event its switch trigger generates), after the others.
# Each variant is a histd binary, optionally with environment settings;
# every round runs each variant once, in a shuffled order (interleaved),
# each in a fresh histd with an empty object cache.
#   bash bench/compile_stall.sh [name=binary[,VAR=value...] ...]
#   (as root, from a built tree; ROUNDS=7 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
B=$PWD/build
if [ $# -eq 0 ]; then set -- "histd=$B/histd"; fi
WORK=$(mktemp -d /tmp/histd-compile-stall.XXXXXX)
HISTD=
cleanup() {
  if [ -n "$HISTD" ]; then kill -TERM "$HISTD" 2>/dev/null || true; wait "$HISTD" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
source bench/rounds.sh  # start_variant

# One round of one variant and one write: prints "write_ms read_ms floor_ms".
run_once() {
  local case=$2
  start_variant "$1"
  local W=$WORK/run
  local T=$W/mnt/events
  echo 'hist:keys=common_pid' >"$T/syscalls/sys_enter_getppid/trigger"
  local file text
  if [ "$case" = synthetic ]; then
    echo 'wakeup_lat int pid; u64 lat' >"$W/mnt/synthetic_events"
    echo 'hist:keys=pid:ts0=common_timestamp.usecs' >"$T/sched/sched_waking/trigger"
    echo 'hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_lat(next_pid,$lat)' \
      >"$T/sched/sched_switch/trigger"
    file=$T/synthetic/wakeup_lat/trigger text='hist:keys=lat.log2'
  else
    file=$T/sched/sched_process_fork/trigger
    text='hist:keys=parent_comm,child_pid:vals=hitcount if child_comm ~ "*x*y*"'
  fi
  python3 - "$T/syscalls/sys_enter_getppid/hist" "$file" "$text" <<'PY'
import sys, threading, time
hist, trigger, text = sys.argv[1], sys.argv[2], sys.argv[3]
reads, stop = [], False
def reader():
    while not stop:
        began = time.monotonic()
        with open(hist) as f:
            f.read()
        reads.append((began, time.monotonic() - began))
        time.sleep(0.001)
t = threading.Thread(target=reader)
t.start()
time.sleep(0.5)
began = time.monotonic()
with open(trigger, "w") as f:
    f.write(text)
took = time.monotonic() - began
time.sleep(0.5)
stop = True
t.join()
before = max(d for s, d in reads if s + d < began)
during = max(d for s, d in reads if s + d >= began)
print(f"{took * 1000:.1f} {during * 1000:.1f} {before * 1000:.1f}")
PY
  kill -TERM "$HISTD"
  wait "$HISTD" || true
  HISTD=
}

CASES=("new shape" synthetic)
declare -A RESULTS
for _ in $(seq "$ROUNDS"); do
  for c in "${CASES[@]}"; do
    mapfile -t order < <(printf '%s\n' "$@" | shuf)
    for v in "${order[@]}"; do
      RESULTS["${v%%=*}|$c"]+="$(run_once "${v#*=}" "$c")"$'\n'
    done
  done
done

median() { sort -n | awk '{a[NR]=$1} END {printf "%.1f (%.1f..%.1f)", a[int((NR+1)/2)], a[1], a[NR]}'; }
printf '%-10s %-10s %-22s %-24s %s\n' command variant "write ms" "longest read ms" "floor ms"
for c in "${CASES[@]}"; do
  for v in "$@"; do
    rows=${RESULTS["${v%%=*}|$c"]}
    printf '%-10s %-10s %-22s %-24s %s\n' "$c" "${v%%=*}" "$(awk 'NF {print $1}' <<<"$rows" | median)" \
      "$(awk 'NF {print $2}' <<<"$rows" | median)" "$(awk 'NF {print $3}' <<<"$rows" | median)"
  done
done
