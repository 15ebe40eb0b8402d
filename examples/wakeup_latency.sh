#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Seed example (hist trigger doc, 2.2.3): wakeup latency of "cyclictest"
# threads as a synthetic event, with the seed's commands, through histctl.
# The workload is perl under the name cyclictest, sleeping SLEEPS times for
# 10 ms. Prints the workload's pid, its wakeups, and the latency histogram.
# Usage: wakeup_latency.sh [SLEEPS]
set -euo pipefail
HISTCTL=${HISTCTL:-histctl}
SLEEPS=${1:-20}
# (a path here once made perl sleep 0 times, and the example print nothing)
[[ "$SLEEPS" =~ ^[1-9][0-9]*$ ]] || { echo "usage: wakeup_latency.sh [SLEEPS], not '$SLEEPS'" >&2; exit 2; }
WAKING='hist:keys=$saved_pid:saved_pid=pid:ts0=common_timestamp.usecs if comm=="cyclictest"'
SWITCH='hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,$saved_pid,next_prio) if next_comm=="cyclictest"'
LATENCY='hist:keys=pid,prio,lat:sort=pid,lat'
WORK=$(mktemp -d)
cleanup() {
  "$HISTCTL" remove synthetic:wakeup_latency "$LATENCY" || true
  "$HISTCTL" remove sched:sched_switch "$SWITCH" || true
  "$HISTCTL" remove sched:sched_waking "$WAKING" || true
  "$HISTCTL" synth remove wakeup_latency || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$HISTCTL" synth add 'wakeup_latency u64 lat; pid_t pid; int prio'
"$HISTCTL" add sched:sched_waking "$WAKING"
"$HISTCTL" add sched:sched_switch "$SWITCH"
"$HISTCTL" add synthetic:wakeup_latency "$LATENCY"

cp "$(command -v perl)" "$WORK/cyclictest"
"$WORK/cyclictest" -e 'print "workload pid $$\n"; select(undef, undef, undef, 0.01) for 1..$ARGV[0]' "$SLEEPS"
# No wait: a synthetic event's triggers run in the BPF program that generates
# it (sched_switch's here), so wakeup_latency's table is as current as
# sched_switch's; only the trace lines of enabled synthetic events travel
# through histd's ring buffer (docs/design/inter-event.md, "Synthetic triggers run where
# the event is generated").
waking=$("$HISTCTL" show sched:sched_waking)
echo "wakeups: $(awk '/^\{/ {s += $NF} END {print s + 0}' <<<"$waking")"
# Wakeups the kernel ran no BPF program for (another BPF program was running
# on that CPU: its recursion guard), of every task: histd could not see them.
echo "missed wakeups: $(awk '/^    Missed: / {s += $2} END {print s + 0}' <<<"$waking")"
"$HISTCTL" show synthetic:wakeup_latency
