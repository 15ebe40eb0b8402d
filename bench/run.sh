#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# histd against the empty-program floor, hand-written BPF and bpftrace.
# Four sections, each in interleaved rounds with the variants in a
# shuffled order; bench/report.py prints medians (min..max) and ratios.
#   overhead    wall-clock ns per getppid() call over the untraced loop
#   stats       in-kernel ns per call from the BPF run-time statistics
#               (separate rounds: the statistics cost time themselves)
#   activation  trigger write (cold and cached compile) / bpftrace start
#               until tracing is live
#   read        reading a 100k-entry table: histd's hist and hist.json,
#               bpftrace printing its map at exit
#   bash bench/run.sh     (as root; ROUNDS=7 CALLS=2000000 READ_KEYS=100000,
#                          SECTIONS="overhead stats activation read",
#                          HISTD_BUILD=dir: skip the build, use that one)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-2000000}
READ_KEYS=${READ_KEYS:-100000}
SECTIONS=${SECTIONS:-overhead stats activation read}
bash scripts/install-deps.sh >/dev/null
command -v bpftrace >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q bpftrace >/dev/null
if [ -n "${HISTD_BUILD:-}" ]; then
  B=$(realpath "$HISTD_BUILD")  # an existing build directory, used as it is
else
  nice bash scripts/build.sh >/dev/null
  B=$PWD/build
fi
W=$PWD/bench/workload.sh
# Another program on these tracepoints runs on every call of every variant.
others=$(bpftool perf show -j | python3 -c 'import json, sys
print(" ".join("%s:%s" % (p["pid"], p["tracepoint"]) for p in json.load(sys.stdin)
               if p.get("tracepoint") in ("sys_enter_getppid", "sys_exit_getppid", "sys_enter_close")))')
[ -z "$others" ] || echo "warning: already attached (pid:tracepoint), timings include them: $others" >&2
WORK=$(mktemp -d /tmp/histd-bench.XXXXXX)
export B CALLS WORK
MNT=$WORK/mnt
mkdir -p "$MNT"
"$B/histd" --foreground --mount "$MNT" --socket "$WORK/sock" --state-dir "$WORK/state" --pin-dir "" \
  >"$WORK/histd.log" 2>&1 &
HISTD=$!
# A second histd with syscall events on the raw sys_enter/sys_exit
# tracepoints (--raw-syscalls=true): the histd_raw_* variants.
MNT_RAW=$WORK/mnt-raw
mkdir -p "$MNT_RAW"
"$B/histd" --foreground --mount "$MNT_RAW" --socket "$WORK/sock-raw" --state-dir "$WORK/state-raw" --pin-dir "" \
  --raw-syscalls=true >"$WORK/histd-raw.log" 2>&1 &
HISTD_RAW=$!
BT=
STATS=
CLOSER=
cleanup() {
  exec 3>&-
  for p in $BT $STATS $CLOSER; do kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  kill -TERM "$HISTD" "$HISTD_RAW" 2>/dev/null || true
  wait "$HISTD" "$HISTD_RAW" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -e "$MNT/events" ] && [ -e "$MNT_RAW/events" ] && break; sleep 0.1; done
[ -e "$MNT/events" ] || { cat "$WORK/histd.log" >&2; exit 1; }
[ -e "$MNT_RAW/events" ] || { cat "$WORK/histd-raw.log" >&2; exit 1; }
EV=$MNT/events/syscalls/sys_enter_getppid
EXIT_EV=$MNT/events/syscalls/sys_exit_getppid
CLOSE_EV=$MNT/events/syscalls/sys_enter_close
TP=tracepoint:syscalls:sys_enter_getppid
EXIT_TP=tracepoint:syscalls:sys_exit_getppid
SAMPLES=$WORK/samples
: >"$SAMPLES"

# --- the traced loop ----------------------------------------------------------
# Every variant runs $W while attached; the attacher's child finds its parent,
# the others say whose programs to read (MODE=stats).
# RAW=1: the histd on the raw tracepoints.
histd_at() {  # sets M (its tree) and HP (its pid, the workload's OWNER)
  if [ "${RAW:-}" = 1 ]; then M=$MNT_RAW; HP=$HISTD_RAW; else M=$MNT; HP=$HISTD; fi
}
histd_latency_run() {
  histd_at
  local ev=$M/events/syscalls/sys_enter_getppid exit_ev=$M/events/syscalls/sys_exit_getppid
  echo 'hist:keys=common_pid:ts0=common_timestamp' > "$ev/trigger"
  echo 'hist:keys=common_pid:lat=common_timestamp-$ts0:vals=$lat' > "$exit_ev/trigger"
  OWNER=$HP "$W"
  : > "$exit_ev/trigger"
  : > "$ev/trigger"
}
# The full chain: a variable on entry, a synthetic event generated on exit
# with the latency, and a log2 table on the synthetic event.
histd_chain_run() {
  histd_at
  local ev=$M/events/syscalls/sys_enter_getppid exit_ev=$M/events/syscalls/sys_exit_getppid
  echo 'getppid_lat u64 lat' > "$M/synthetic_events"
  echo 'hist:keys=common_pid:ts0=common_timestamp' > "$ev/trigger"
  echo 'hist:keys=common_pid:lat=common_timestamp-$ts0:onmatch(syscalls.sys_enter_getppid).getppid_lat($lat)' \
    > "$exit_ev/trigger"
  echo 'hist:keys=lat.log2' > "$M/events/synthetic/getppid_lat/trigger"
  OWNER=$HP "$W"
  : > "$M/events/synthetic/getppid_lat/trigger"
  : > "$exit_ev/trigger"
  : > "$ev/trigger"
  : > "$M/synthetic_events"
}
histd_run() {
  histd_at
  local ev=$M/events/syscalls/sys_enter_getppid
  echo "$1" > "$ev/trigger"
  OWNER=$HP "$W"
  : > "$ev/trigger"
}
bt_start() {  # bpftrace PROGRAM, output to $WORK/bt.log; returns once attached
  "${@:2}" bpftrace -e "$1" >"$WORK/bt.log" 2>&1 &
  BT=$!
  for _ in $(seq 600); do grep -q Attaching "$WORK/bt.log" && break; sleep 0.05; done
  grep -q Attaching "$WORK/bt.log" || { cat "$WORK/bt.log" >&2; return 1; }
  sleep 0.5  # "Attaching" is printed before the probe is live
}
# bpftrace 0.17 sometimes ignores a SIGINT and runs on (seen here for 14
# minutes, twice, both with hist()); a second one stops it. The signal is
# repeated every second until it exits; BT_RESENT counts the repeats.
bt_state() {  # the process state letter; Z once it has exited
  local s
  s=$(cut -d' ' -f3 "/proc/$BT/stat" 2>/dev/null) || true
  echo "${s:-Z}"
}
bt_stop() {
  BT_RESENT=0
  kill -INT "$BT"
  while [ "$(bt_state)" != Z ]; do
    for _ in $(seq 10); do
      [ "$(bt_state)" != Z ] || break 2
      sleep 0.1
    done
    BT_RESENT=$((BT_RESENT + 1)); kill -INT "$BT" 2>/dev/null || true
  done
  wait "$BT" 2>/dev/null || true; BT=
}
bpftrace_run() {
  bt_start "$1"
  OWNER=$BT "$W"
  bt_stop
}
ATTACH=$B/histd_bench_attach
EMPTY=$B/bpf/empty.bpf.o
HAND=$B/bpf/hand.bpf.o
G=syscalls:sys_enter_getppid
X=syscalls:sys_exit_getppid
declare -A RUN=(
  [none]="$W"
  [floor]="$ATTACH $EMPTY empty:$G -- $W"
  [floor_raw]="$ATTACH $EMPTY empty_raw:raw:sys_enter -- $W"
  [floor2_raw]="$ATTACH $EMPTY empty_raw:raw:sys_enter empty_raw_exit:raw:sys_exit -- $W"
  [hand_count]="$ATTACH $HAND hand_count:$G -- $W"
  [histd_count]="histd_run hist:keys=common_pid"
  [histd_raw_count]="RAW=1 histd_run hist:keys=common_pid"
  [bpftrace_count]="bpftrace_run '$TP { @[pid] = count(); }'"
  [hand_sum]="$ATTACH $HAND hand_sum:$G -- $W"
  [histd_sum]="histd_run hist:keys=common_pid:vals=__syscall_nr"
  [histd_raw_sum]="RAW=1 histd_run hist:keys=common_pid:vals=__syscall_nr"
  [bpftrace_sum]="bpftrace_run '$TP { @[pid] = count(); @s[pid] = sum(args->__syscall_nr); }'"
  [hand_log2]="$ATTACH $HAND hand_log2:$G -- $W"
  [histd_log2]="histd_run hist:keys=__syscall_nr.log2"
  [histd_raw_log2]="RAW=1 histd_run hist:keys=__syscall_nr.log2"
  [bpftrace_log2]="bpftrace_run '$TP { @ = hist(args->__syscall_nr); }'"
  [hand_filter]="$ATTACH $HAND hand_filter:$G -- $W"
  [histd_filter]="histd_run 'hist:keys=common_pid if comm ~ \"histd_bench*\"'"
  [histd_raw_filter]="RAW=1 histd_run 'hist:keys=common_pid if comm ~ \"histd_bench*\"'"
  [bpftrace_filter]="bpftrace_run '$TP /strncmp(comm, \"histd_bench\", 11) == 0/ { @[pid] = count(); }'"
  [floor2]="$ATTACH $EMPTY empty:$G empty:$X -- $W"
  [hand_latency]="$ATTACH $HAND hand_lat_enter:$G hand_lat_exit:$X -- $W"
  [histd_latency]="histd_latency_run"
  [histd_raw_latency]="RAW=1 histd_latency_run"
  [bpftrace_latency]="bpftrace_run '$TP { @ts[tid] = nsecs; } $EXIT_TP /@ts[tid]/ { @lat[pid] = sum(nsecs - @ts[tid]); delete(@ts[tid]); }'"
  [histd_chain]="histd_chain_run"
  [histd_raw_chain]="RAW=1 histd_chain_run"
  [bpftrace_chain]="bpftrace_run '$TP { @ts[tid] = nsecs; } $EXIT_TP /@ts[tid]/ { @ = hist(nsecs - @ts[tid]); delete(@ts[tid]); }'"
)
# What tracing getppid costs the machine's other calls: a getpid() loop.
RUN[other_none]="LOOP=other $W"
RUN[other_floor]="$ATTACH $EMPTY empty:$G -- env LOOP=other $W"
RUN[other_floor_raw]="$ATTACH $EMPTY empty_raw:raw:sys_enter -- env LOOP=other $W"
RUN[other_histd_count]="LOOP=other histd_run hist:keys=common_pid"
RUN[other_histd_raw_count]="LOOP=other RAW=1 histd_run hist:keys=common_pid"
ORDER=(none floor floor_raw hand_count histd_count histd_raw_count bpftrace_count
       hand_sum histd_sum histd_raw_sum bpftrace_sum hand_log2 histd_log2 histd_raw_log2 bpftrace_log2
       hand_filter histd_filter histd_raw_filter bpftrace_filter
       floor2 floor2_raw hand_latency histd_latency histd_raw_latency bpftrace_latency
       histd_chain histd_raw_chain bpftrace_chain)
OTHER=(other_none other_floor other_floor_raw other_histd_count other_histd_raw_count)

has() { [[ " $SECTIONS " == *" $1 "* ]]; }
shuffled() { printf '%s\n' "$@" | shuf; }

if has overhead || has stats; then
  # Warm the compiled-object cache so rounds measure the running program.
  for v in histd_{,raw_}{count,sum,log2,filter,latency,chain}; do MODE=wall eval "${RUN[$v]}" >/dev/null; done
fi

if has overhead; then
  export MODE=wall
  for r in $(seq "$ROUNDS"); do
    for v in $(shuffled "${ORDER[@]}" "${OTHER[@]}"); do
      eval "${RUN[$v]}" >"$WORK/out"  # not in $(...): BT must stay visible to cleanup
      echo "overhead $v $(tail -1 "$WORK/out")" >>"$SAMPLES"
    done
    echo "overhead: round $r/$ROUNDS done" >&2
  done
fi

if has stats; then
  export MODE=stats
  "$B/histd_bench_stats" >"$WORK/stats.on" &
  STATS=$!
  for _ in $(seq 100); do [ -s "$WORK/stats.on" ] && break; sleep 0.05; done
  [ -s "$WORK/stats.on" ] || { echo "BPF statistics could not be turned on" >&2; exit 1; }
  for r in $(seq "$ROUNDS"); do
    for v in $(shuffled "${ORDER[@]:1}"); do
      eval "${RUN[$v]}" >"$WORK/out"  # not in $(...): BT must stay visible to cleanup
      echo "stats $v $(tail -1 "$WORK/out")" >>"$SAMPLES"
    done
    echo "stats: round $r/$ROUNDS done" >&2
  done
  kill -TERM "$STATS"; wait "$STATS" || true; STATS=
fi

# --- activation -----------------------------------------------------------------
if has activation; then
  histd_activate() {  # RAW=1: the histd on raw tracepoints
    histd_at
    local ev=$M/events/syscalls/sys_enter_getppid
    "$B/histd_bench_activate" histd "$ev/trigger" "$ev/hist" 'hist:keys=common_pid'
    : > "$ev/trigger"
  }
  for r in $(seq "$ROUNDS"); do
    for v in $(shuffled histd_cold histd_cached histd_raw_cold histd_raw_cached bpftrace); do
      case $v in
        histd_cold) rm -rf "$WORK/state/cache"; s=$(histd_activate) ;;
        histd_cached) histd_activate >/dev/null; s=$(histd_activate) ;;  # the first one fills the cache
        histd_raw_cold) rm -rf "$WORK/state-raw/cache"; s=$(RAW=1 histd_activate) ;;
        histd_raw_cached) RAW=1 histd_activate >/dev/null; s=$(RAW=1 histd_activate) ;;
        bpftrace) s=$("$B/histd_bench_activate" bpftrace) ;;
      esac
      echo "activation $v $s" >>"$SAMPLES"
    done
    echo "activation: round $r/$ROUNDS done" >&2
  done
fi

# --- reading a big table ---------------------------------------------------------
# The workload waits on a fifo so that the trigger can filter on its pid.
closer_start() {
  rm -f "$WORK/go"; mkfifo "$WORK/go"
  "$B/histd_bench_close" "$READ_KEYS" <"$WORK/go" >"$WORK/closer.pid" &
  CLOSER=$!
  exec 3>"$WORK/go"
  for _ in $(seq 200); do [ -s "$WORK/closer.pid" ] && break; sleep 0.01; done
  pid=$(cat "$WORK/closer.pid")
}
closer_go() {
  echo >&3; exec 3>&-
  wait "$CLOSER"; CLOSER=
}
us() { echo "${EPOCHREALTIME/./}"; }
if has read; then
  for r in $(seq "$ROUNDS"); do
    for v in $(shuffled histd bpftrace); do
      closer_start  # sets pid
      if [ "$v" = histd ]; then
        echo "hist:keys=fd:size=131072 if common_pid == $pid" > "$CLOSE_EV/trigger"
        closer_go
        # The first read after a pause pays for faulting in the memory it
        # renders into (histd hands its heap back after 5 s idle); a read
        # right after another reuses it.
        sleep 6
        t0=$(us); cat "$CLOSE_EV/hist" >/dev/null; t1=$(us)
        cat "$CLOSE_EV/hist" >/dev/null; t2=$(us)
        cat "$CLOSE_EV/hist.json" >/dev/null; t3=$(us)
        echo "read histd_hist_first $(( t1 - t0 ))" >>"$SAMPLES"
        echo "read histd_hist_again $(( t2 - t1 ))" >>"$SAMPLES"
        echo "read histd_json $(( t3 - t2 ))" >>"$SAMPLES"
        [ "$r" -gt 1 ] || grep -q "Entries: $READ_KEYS\$" "$CLOSE_EV/hist" \
          || { echo "histd's table does not hold $READ_KEYS entries" >&2; exit 1; }
        : > "$CLOSE_EV/trigger"
      else
        bt_start "tracepoint:syscalls:sys_enter_close /pid == $pid/ { @[args->fd] = count(); }" \
          env BPFTRACE_MAP_KEYS_MAX=131072
        closer_go
        t0=$(us); bt_stop; t1=$(us)
        if [ "$BT_RESENT" = 0 ]; then echo "read bpftrace $(( t1 - t0 ))" >>"$SAMPLES"
        else echo "read: bpftrace needed $BT_RESENT more SIGINTs; sample dropped" >&2; fi
        n=$(grep -c '^@\[' "$WORK/bt.log" || true)
        [ "$n" = "$READ_KEYS" ] || { echo "bpftrace printed $n entries, not $READ_KEYS" >&2; exit 1; }
      fi
    done
    echo "read: round $r/$ROUNDS done" >&2
  done
fi

python3 bench/report.py "$SAMPLES" "$CALLS" "$ROUNDS" "$READ_KEYS"
