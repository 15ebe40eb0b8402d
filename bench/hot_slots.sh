#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Hot slots (docs/design/bpf.md, "Hot slots"): what they save where keys repeat
# and what they cost where keys never do. Through one histd, each trigger
# with its hot slots and, as the control, the same table without them (a
# named table: same map, same layout, no slots):
#   repeat    keys=common_pid on sys_enter_getppid, a getppid() loop (one key)
#   distinct  keys=fd:size=131072 on sys_enter_close, a loop closing
#             READ_KEYS distinct invalid fds (every event a new key)
# Prints in-kernel ns per call (BPF run-time statistics of histd's
# dispatcher, the event program included), medians (min..max) over
# interleaved rounds.
#   bash bench/hot_slots.sh   (as root; ROUNDS=7 CALLS=1000000 READ_KEYS=100000, HISTD_BUILD=dir)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-1000000}
READ_KEYS=${READ_KEYS:-100000}
if [ -n "${HISTD_BUILD:-}" ]; then B=$(realpath "$HISTD_BUILD"); else nice bash scripts/build.sh >/dev/null; B=$PWD/build; fi
WORK=$(mktemp -d /tmp/histd-hot.XXXXXX)
MNT=$WORK/mnt
mkdir -p "$MNT"
"$B/histd" --foreground --mount "$MNT" --socket "$WORK/sock" --state-dir "$WORK/state" --pin-dir "" \
  >"$WORK/histd.log" 2>&1 &
HISTD=$!
STATS=
cleanup() {
  [ -z "$STATS" ] || { kill -TERM "$STATS"; wait "$STATS" || true; }
  kill -TERM "$HISTD" 2>/dev/null || true
  wait "$HISTD" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -e "$MNT/events" ] && break; sleep 0.1; done
[ -e "$MNT/events" ] || { cat "$WORK/histd.log" >&2; exit 1; }
"$B/histd_bench_stats" >"$WORK/stats.on" &
STATS=$!
for _ in $(seq 100); do [ -s "$WORK/stats.on" ] && break; sleep 0.05; done
[ -s "$WORK/stats.on" ] || { echo "BPF statistics could not be turned on" >&2; exit 1; }

EVENTS=$MNT/events/syscalls
# The in-kernel ns per call of the workload WORKLOAD (a function, CALLS calls)
# under trigger TEXT on EVENT.
measure() {  # EVENT TEXT CALLS WORKLOAD
  local ev=$EVENTS/$1 text=$2 calls=$3
  echo "$text" >"$ev/trigger"
  python3 bench/progstats.py snap "$HISTD" >"$WORK/before"
  "$4"
  python3 bench/progstats.py snap "$HISTD" >"$WORK/after"
  : >"$ev/trigger"
  python3 bench/progstats.py delta "$WORK/before" "$WORK/after" "$calls" | cut -d' ' -f1
}
getppid_loop() { "$B/histd_bench_loop" "$CALLS" >/dev/null; }
# The close loop prints its pid, then waits for a line on stdin, so that the
# trigger's filter can name it before it starts.
CLOSER=
closer_start() {
  rm -f "$WORK/go" "$WORK/closer.pid" && mkfifo "$WORK/go"
  "$B/histd_bench_close" "$READ_KEYS" <"$WORK/go" >"$WORK/closer.pid" &
  CLOSER=$!
  exec 3>"$WORK/go"
  for _ in $(seq 200); do [ -s "$WORK/closer.pid" ] && break; sleep 0.01; done
}
close_loop() { echo go >&3; exec 3>&-; wait "$CLOSER" || true; }
run() {  # VARIANT
  local text
  case $1 in
    repeat_hot) measure sys_enter_getppid 'hist:keys=common_pid' "$CALLS" getppid_loop ;;
    repeat_plain) measure sys_enter_getppid 'hist:name=plain:keys=common_pid' "$CALLS" getppid_loop ;;
    distinct_*)
      text='hist:keys=fd:size=131072'
      [ "$1" = distinct_plain ] && text='hist:name=plain:keys=fd:size=131072'
      closer_start
      measure sys_enter_close "$text if common_pid == $(cat "$WORK/closer.pid")" "$READ_KEYS" close_loop
      ;;
  esac
}
: >"$WORK/samples"
for r in $(seq "$ROUNDS"); do
  for v in $(printf '%s\n' repeat_hot repeat_plain distinct_hot distinct_plain | shuf); do
    echo "$v $(run "$v")" >>"$WORK/samples"
  done
  echo "hot slots: round $r/$ROUNDS done" >&2
done
python3 - "$WORK/samples" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    v, ns = line.split()
    rows.setdefault(v, []).append(float(ns))
print("in-kernel ns per call: histd with hot slots (hot) and the same table without (plain, a named table)")
print(f"{'variant':16} {'ns/call':>8} {'(min..max)':>14}")
for v in ("repeat_hot", "repeat_plain", "distinct_hot", "distinct_plain"):
    s = rows.get(v, [])
    if s:
        print(f"{v:16} {statistics.median(s):8.1f} {'(%.0f..%.0f)' % (min(s), max(s)):>14}")
print("  repeat: keys=common_pid, one getppid() loop; distinct: keys=fd:size=131072, every close() a new fd")
PY
