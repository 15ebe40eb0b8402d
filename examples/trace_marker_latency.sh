#!/usr/bin/env bash
# Seed example (hist trigger doc, section 3): latency between "start" and
# "end" written to trace_marker, with the seed's commands as written.
# Usage: trace_marker_latency.sh TRACING_DIR [ROUNDS]
set -euo pipefail
T=${1:?usage: trace_marker_latency.sh TRACING_DIR [ROUNDS]}
ROUNDS=${2:-10}
cd "$T"
cleanup() {
  echo '!hist:keys=lat,common_pid:sort=lat' >> events/synthetic/latency/trigger 2>/dev/null || true
  echo '!hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(ftrace.print).latency($lat) if buf == "end"' >> events/ftrace/print/trigger 2>/dev/null || true
  echo '!hist:keys=common_pid:ts0=common_timestamp.usecs if buf == "start"' >> events/ftrace/print/trigger 2>/dev/null || true
  echo '!latency' >> synthetic_events 2>/dev/null || true
}
trap cleanup EXIT

echo 'latency u64 lat' > synthetic_events
echo 'hist:keys=common_pid:ts0=common_timestamp.usecs if buf == "start"' > events/ftrace/print/trigger
echo 'hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(ftrace.print).latency($lat) if buf == "end"' >> events/ftrace/print/trigger
echo 'hist:keys=lat,common_pid:sort=lat' > events/synthetic/latency/trigger

# The writer is this shell: one common_pid for every start/end pair.
echo "writer pid $$"
for _ in $(seq "$ROUNDS"); do
  printf start > trace_marker
  sleep 0.01
  printf end > trace_marker
done
sleep 0.5
cat events/synthetic/latency/hist
