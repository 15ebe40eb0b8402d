#!/usr/bin/env bash
# Seed example (hist trigger doc, 2.2.3): wakeup latency of "cyclictest"
# threads as a synthetic event, with the seed's commands as written, against
# histd's tree. The workload is perl under the name cyclictest, sleeping
# SLEEPS times for 10 ms.
# Usage: wakeup_latency.sh TRACING_DIR [SLEEPS]
set -euo pipefail
T=${1:?usage: wakeup_latency.sh TRACING_DIR [SLEEPS]}
SLEEPS=${2:-20}
cd "$T"
WORK=$(mktemp -d)
cleanup() {
  echo '!hist:keys=pid,prio,lat:sort=pid,lat' >> events/synthetic/wakeup_latency/trigger 2>/dev/null || true
  echo '!hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,$saved_pid,next_prio) if next_comm=="cyclictest"' >> events/sched/sched_switch/trigger 2>/dev/null || true
  echo '!hist:keys=$saved_pid:saved_pid=pid:ts0=common_timestamp.usecs if comm=="cyclictest"' >> events/sched/sched_waking/trigger 2>/dev/null || true
  echo '!wakeup_latency' >> synthetic_events 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo 'wakeup_latency u64 lat; pid_t pid; int prio' >> synthetic_events
echo 'hist:keys=$saved_pid:saved_pid=pid:ts0=common_timestamp.usecs if comm=="cyclictest"' >> \
  events/sched/sched_waking/trigger
echo 'hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,$saved_pid,next_prio) if next_comm=="cyclictest"' >> \
  events/sched/sched_switch/trigger
echo 'hist:keys=pid,prio,lat:sort=pid,lat' >> events/synthetic/wakeup_latency/trigger

cp "$(command -v perl)" "$WORK/cyclictest"
"$WORK/cyclictest" -e 'print "workload pid $$\n"; select(undef, undef, undef, 0.01) for 1..$ARGV[0]' "$SLEEPS"
sleep 0.5  # generated events reach their triggers through histd's ring buffer
echo "wakeups: $(awk '/^\{/ {s += $NF} END {print s + 0}' events/sched/sched_waking/hist)"
cat events/synthetic/wakeup_latency/hist
