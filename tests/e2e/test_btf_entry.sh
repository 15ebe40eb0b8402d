#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The scheduler's events entered BTF-typed (the default): the records histd
# builds from the tracepoints' arguments are the kernel's. Beside it a histd
# with --btf-tracepoints=false is handed the kernel's own records by the
# classic tracepoints; a workload of its own comm sleeps, spins, yields and
# forks, and both count it keyed by every field of sched_switch and the
# wakeups. The tables must agree, but for events the classic side reports
# missed (a classic tracepoint program is skipped while another BPF program
# runs on the CPU). Then restarts: a crash keeps the BTF-typed dispatchers
# counting, a restart with the option off re-attaches classically.
source "$(dirname "$0")/lib.sh"
histd_start
MNT2=$WORK/mnt-classic
CLASSIC=
test_cleanup() {
  [ -z "$CLASSIC" ] || { kill -TERM "$CLASSIC" 2>/dev/null || true; wait "$CLASSIC" 2>/dev/null || true; }
  ! mountpoint -q "$MNT2" || fusermount3 -u "$MNT2"
}
mkdir -p "$MNT2"
"$HISTD_BIN" --foreground --mount "$MNT2" --socket "$WORK/classic.sock" --state-dir "$WORK/state-classic" \
  --pin-dir "" --config-dir "$WORK/triggers.d" --btf-tracepoints=false >>"$WORK/classic.log" 2>&1 &
CLASSIC=$!
await_tree "$MNT2" "$CLASSIC" "$WORK/classic.log"

C=$(own_comm btfwork)
# Every field of each record, three keys a trigger at most (as the kernel).
SWITCH=("hist:keys=prev_comm,prev_pid,prev_state:vals=hitcount,prev_prio if prev_comm == \"$C\""
  "hist:keys=next_comm,next_pid:vals=hitcount,next_prio if next_comm == \"$C\""
  "hist:keys=prev_pid,next_pid,prev_comm if prev_comm == \"$C\" || next_comm == \"$C\"")
WAKEUP="hist:keys=comm,pid,target_cpu:vals=hitcount,prio if comm == \"$C\""
for m in "$MNT" "$MNT2"; do
  for t in "${SWITCH[@]}"; do echo "$t" >>"$m/events/sched/sched_switch/trigger"; done
  for w in sched_wakeup sched_waking sched_wakeup_new; do echo "$WAKEUP" >"$m/events/sched/$w/trigger"; done
done
# Sleeps (S), spins until preempted or yields (R, R+), and forks children
# that exit at once (a wakeup_new each, a zombie's last switch).
"$(comm_link "$C" /usr/bin/python3)" - <<'PY'
import os, time
for i in range(60):
    time.sleep(0.001)
    end = time.monotonic() + 0.002
    while time.monotonic() < end:
        pass
    os.sched_yield()
    if i % 10 == 0:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
PY

missed() { sed -n 's/^    Missed: \([0-9]*\)$/\1/p' "$1" | head -1; }
# compare EVENT: the two tables agree but for what the classic side missed.
compare() {
  local btf=$MNT/events/sched/$1/hist classic=$MNT2/events/sched/$1/hist
  python3 - "$1" "$btf" "$classic" "$(missed "$classic")" "$(missed "$btf")" <<'PY'
import re, sys
event, btf, classic = sys.argv[1:4]
classic_missed, btf_missed = int(sys.argv[4] or 0), int(sys.argv[5] or 0)
def table(path):
    rows = {}
    for line in open(path):
        m = re.match(r"(\{.*\}) hitcount:\s+(\d+)(.*)$", line.rstrip())
        if m:
            # An exiting task's last switch: its parent, reaping it on another
            # CPU, turns EXIT_ZOMBIE (32) into EXIT_DEAD (16) while the two
            # programs run one after the other at the same tracepoint.
            key = re.sub(r"prev_state:\s+(16|32) ", "prev_state: exit ", m.group(1))
            n, vals = rows.get(key, (0, {}))
            words = m.group(3).split()
            for name, v in zip(words[::2], words[1::2]):
                vals[name] = vals.get(name, 0) + int(v)
            rows[key] = (n + int(m.group(2)), vals)
    return rows
b, c = table(btf), table(classic)
if not b:
    print(f"FAIL: {event}: the BTF-typed table counted nothing")
    sys.exit(1)
# Each side may have missed events the other counted; where the counts
# agree, so must the sums of the other fields.
short = sum(max(0, n - c.get(k, (0, {}))[0]) for k, (n, _) in b.items())
extra = sum(max(0, n - b.get(k, (0, {}))[0]) for k, (n, _) in c.items())
differ = [k for k in b if k in c and b[k][0] == c[k][0] and b[k][1] != c[k][1]]
if short > classic_missed or extra > btf_missed or differ:
    print(f"FAIL: {event}: the BTF-typed records differ from the kernel's "
          f"(classic short by {short}, missed {classic_missed}; BTF short by {extra}, missed {btf_missed})")
    for k in sorted(set(b) | set(c)):
        if b.get(k) != c.get(k):
            print(f"  {k}: BTF-typed {b.get(k)}, classic {c.get(k)}")
    sys.exit(1)
print(f"ok: {event}: {len(b)} keys, {sum(n for n, _ in b.values())} events agree with the kernel's records"
      f" (classic missed {classic_missed})")
PY
}
for e in sched_switch sched_wakeup sched_waking sched_wakeup_new; do compare "$e" || FAILURES=$((FAILURES + 1)); done
states=$(sed -n 's/^{ prev_comm: '"$C"' *, prev_pid: *[0-9]*, prev_state: *\([0-9]*\) }.*/\1/p' \
  "$MNT/events/sched/sched_switch/hist" | sort -un | tr '\n' ' ')
has_states=yes
for st in 0 1; do [[ " $states" == *" $st "* ]] || has_states="states: $states"; done
[[ " $states" == *" 32 "* || " $states" == *" 16 "* ]] || has_states="states: $states"
expect_eq "the workload left the CPU sleeping (1), runnable (0) and exiting (32, or 16 once reaped)" "yes" \
  "$has_states"
expect_eq "hist_debug says BTF-typed, for each of the three" "3" \
  "$(grep -c '^  attached: tracepoint sched:sched_switch, BTF-typed' "$MNT/events/sched/sched_switch/hist_debug")"
expect_eq "and classic beside it" "3" \
  "$(grep -c '^  attached: tracepoint sched:sched_switch$' "$MNT2/events/sched/sched_switch/hist_debug")"

# A crash leaves the BTF-typed dispatchers counting; the next histd adopts them.
rows_before=$(rows "$MNT/events/sched/sched_wakeup_new/hist")
kill -KILL "$HISTD_PID"; wait "$HISTD_PID" 2>/dev/null || true
histd_start
expect_eq "counts kept after kill -9" "$rows_before" "$(rows "$MNT/events/sched/sched_wakeup_new/hist")"
expect_eq "the pinned BTF-typed dispatchers adopted" "4" "$(find "$PIN" -name '*-btf_link' | wc -l)"
# Restarted with the option off: same tables, on the classic tracepoints.
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start --btf-tracepoints=false
expect_eq "counts kept over the switch" "$rows_before" "$(rows "$MNT/events/sched/sched_wakeup_new/hist")"
expect_eq "hist_debug says the classic tracepoint" "3" \
  "$(grep -c '^  attached: tracepoint sched:sched_switch$' "$MNT/events/sched/sched_switch/hist_debug")"
expect_eq "no BTF-typed pins left" "0" "$(find "$PIN" -name '*-btf_*' | wc -l)"
# A traced event generated on a switch carries the task it ran in (prev):
# the entry, whose triggers read no common_pid, leaves the pid to the trace.
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start
: >"$MNT/events/sched/sched_switch/trigger"
echo 'sw_lat u64 lat; pid_t prev' >"$MNT/synthetic_events"
echo 'hist:keys=pid:ts0=common_timestamp.usecs' >"$MNT/events/sched/sched_waking/trigger"
echo 'hist:keys=next_pid:l=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).sw_lat($l,prev_pid)' \
  >"$MNT/events/sched/sched_switch/trigger"
echo 1 >"$MNT/events/synthetic/sw_lat/enable"
for _ in 1 2 3 4 5; do sleep 0.02; done
echo 0 >"$MNT/events/synthetic/sw_lat/enable"
traced=$(python3 - "$MNT/trace" <<'PY'
import re, sys
lines = [l for l in open(sys.argv[1]) if " sw_lat: " in l]
m = [re.match(r"^ *\S+-(-?\d+) +\[\d{3}\] .*: sw_lat: lat=\d+ prev=(-?\d+)$", l.rstrip()) for l in lines]
own = sum(1 for x in m if x and x.group(1) == x.group(2) and x.group(1) != "-1")
print("yes" if lines and own == len(lines) else f"{own} of {len(lines)}: {lines[:3]}")
PY
)
expect_eq "each traced record's task is the switch's prev task" "yes" "$traced"
finish
