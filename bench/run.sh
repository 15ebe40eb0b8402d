#!/usr/bin/env bash
# Per-event overhead on syscalls:sys_enter_getppid: histd (through its tree)
# side by side with bpftrace and the empty-program floor. Every variant runs
# once per round, in a shuffled order; the table shows medians (min..max) of
# the overhead over the untraced loop and the ratio to the floor.
#   bash bench/run.sh            (as root; ROUNDS=7 CALLS=2000000 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-2000000}
bash scripts/install-deps.sh >/dev/null
command -v bpftrace >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q bpftrace >/dev/null
bash scripts/build.sh >/dev/null
B=$PWD/build
WORK=$(mktemp -d /tmp/histd-bench.XXXXXX)
MNT=$WORK/mnt
mkdir -p "$MNT"
"$B/histd" --foreground --mount "$MNT" --socket "$WORK/sock" --state-dir "$WORK/state" --pin-dir "" \
  >"$WORK/histd.log" 2>&1 &
HISTD=$!
BT=
cleanup() {
  [ -n "$BT" ] && kill -INT "$BT" 2>/dev/null || true
  kill -TERM "$HISTD" 2>/dev/null || true
  wait "$HISTD" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -e "$MNT/events" ] && break; sleep 0.1; done
EV=$MNT/events/syscalls/sys_enter_getppid
TP=tracepoint:syscalls:sys_enter_getppid

EXIT_EV=$MNT/events/syscalls/sys_exit_getppid
EXIT_TP=tracepoint:syscalls:sys_exit_getppid

loop() { "$B/histd_bench_loop" "$CALLS"; }
# A latency chain: a variable on entry, referenced (read-once) on exit.
histd_latency_run() {
  echo 'hist:keys=common_pid:ts0=common_timestamp' > "$EV/trigger"
  echo 'hist:keys=common_pid:lat=common_timestamp-$ts0:vals=$lat' > "$EXIT_EV/trigger"
  loop
  : > "$EXIT_EV/trigger"
  : > "$EV/trigger"
}
histd_run() {
  echo "$1" > "$EV/trigger"
  loop
  : > "$EV/trigger"
}
bpftrace_run() {
  bpftrace -e "$1" >"$WORK/bt.log" 2>&1 &
  BT=$!
  for _ in $(seq 200); do grep -q Attaching "$WORK/bt.log" && break; sleep 0.05; done
  sleep 0.5  # "Attaching" is printed before the probe is live
  loop
  kill -INT "$BT"; wait "$BT" 2>/dev/null || true; BT=
}

declare -A RUN=(
  [none]="loop"
  [floor]="$B/histd_bench_floor $B/bpf/empty.bpf.o syscalls sys_enter_getppid -- $B/histd_bench_loop $CALLS"
  [histd_count]="histd_run hist:keys=common_pid"
  [histd_sum]="histd_run hist:keys=common_pid:vals=__syscall_nr"
  [histd_log2]="histd_run hist:keys=__syscall_nr.log2"
  [bpftrace_count]="bpftrace_run '$TP { @[pid] = count(); }'"
  [bpftrace_sum]="bpftrace_run '$TP { @[pid] = count(); @s[pid] = sum(args->__syscall_nr); }'"
  [bpftrace_hist]="bpftrace_run '$TP { @ = hist(args->__syscall_nr); }'"
  [floor2]="$B/histd_bench_floor $B/bpf/empty.bpf.o syscalls sys_enter_getppid -- $B/histd_bench_floor $B/bpf/empty.bpf.o syscalls sys_exit_getppid -- $B/histd_bench_loop $CALLS"
  [histd_latency]="histd_latency_run"
  [bpftrace_latency]="bpftrace_run '$TP { @ts[tid] = nsecs; } $EXIT_TP /@ts[tid]/ { @lat[pid] = sum(nsecs - @ts[tid]); delete(@ts[tid]); }'"
)
ORDER=(none floor histd_count bpftrace_count histd_sum bpftrace_sum histd_log2 bpftrace_hist floor2 histd_latency bpftrace_latency)

# Warm the compiled-object cache so rounds measure the running program.
for v in histd_count histd_sum histd_log2 histd_latency; do eval "${RUN[$v]}" >/dev/null; done

declare -A SAMPLES
for r in $(seq "$ROUNDS"); do
  for v in $(printf '%s\n' "${ORDER[@]}" | shuf); do
    ns=$(eval "${RUN[$v]}" | tail -1)
    SAMPLES[$v]+="$ns "
  done
  echo "round $r/$ROUNDS done" >&2
done

python3 - "$CALLS" "$ROUNDS" <<PY
import statistics, sys
samples = {$(for v in "${ORDER[@]}"; do printf '"%s": [%s], ' "$v" "$(echo ${SAMPLES[$v]} | tr ' ' ',')"; done)}
base = statistics.median(samples["none"])
floor = statistics.median(samples["floor"]) - base
print(f"syscalls:sys_enter_getppid, {sys.argv[1]} calls, {sys.argv[2]} interleaved rounds")
print(f"untraced loop: {base:.1f} ns/call")
print(f"{'variant':<16} {'ns/call over untraced':>24} {'(min..max)':>16} {'x floor':>8}")
floor2 = statistics.median(samples["floor2"]) - base
for v, xs in samples.items():
    if v == "none":
        continue
    over = [x - base for x in xs]
    m = statistics.median(over)
    # the latency variants run two programs per call: against two floors
    ref = floor2 if v in ("floor2", "histd_latency", "bpftrace_latency") else floor
    print(f"{v:<16} {m:>24.1f} {f'({min(over):.0f}..{max(over):.0f})':>16} {m / ref:>8.2f}")
PY
