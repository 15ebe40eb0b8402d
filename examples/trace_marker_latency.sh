#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Seed example (hist trigger doc, section 3): latency between "start" and
# "end" written to trace_marker; the triggers through histctl, the marks
# through histd's tree.
# Usage: trace_marker_latency.sh TRACING_DIR [ROUNDS]
set -euo pipefail
HISTCTL=${HISTCTL:-histctl}
T=${1:?usage: trace_marker_latency.sh TRACING_DIR [ROUNDS]}
ROUNDS=${2:-10}
START='hist:keys=common_pid:ts0=common_timestamp.usecs if buf == "start"'
END='hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(ftrace.print).latency($lat) if buf == "end"'
LATENCY='hist:keys=lat,common_pid:sort=lat'
cleanup() {
  "$HISTCTL" remove synthetic:latency "$LATENCY" || true
  "$HISTCTL" remove ftrace:print "$END" || true
  "$HISTCTL" remove ftrace:print "$START" || true
  "$HISTCTL" synth remove latency || true
}
trap cleanup EXIT

"$HISTCTL" synth add 'latency u64 lat'
"$HISTCTL" add ftrace:print "$START"
"$HISTCTL" add ftrace:print "$END"
"$HISTCTL" add synthetic:latency "$LATENCY"

# The writer is this shell: one common_pid for every start/end pair.
for _ in $(seq "$ROUNDS"); do
  printf start > "$T/trace_marker"
  sleep 0.01
  printf end > "$T/trace_marker"
done
# Its pid as the tables show it: the machine's, which is not $$ in a
# container; trace's lines show it beside the writer's name.
echo "writer pid $(sed -n 's/^.*-\([0-9][0-9]*\) *\[[0-9]*\] .* tracing_mark_write: end$/\1/p' "$T/trace" | tail -1)"
sleep 0.5
"$HISTCTL" show synthetic:latency
