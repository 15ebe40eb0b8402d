#!/usr/bin/env bash
# A restore that compiles every saved trigger again: the object cache empty,
# as after an upgrade changed the compiler (issue 23, point 5's cold side).
# N triggers (60) on each of E events (2), every one a unit of its own
# shape (`hist:keys=common_pid.buckets=K`: the bucket size is compiled in),
# are saved once; then each round starts every variant on a copy of that
# state with no cache, and times exec -> the tree served (histd restores
# before it mounts), and counts the compiles (histctl status). Rounds
# interleaved; medians (min..max).
#   bash bench/restore_cold.sh [name=build_dir ...]   (root; ROUNDS=5 N=60 E=2;
#   default: the build in ./build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
N=${N:-60}
E=${E:-2}
if [ $# -eq 0 ]; then set -- "histd=$PWD/build"; fi
source bench/rounds.sh  # bench_cleanup
WORK=$(mktemp -d /tmp/histd-restore-cold.XXXXXX)
HISTD=
trap bench_cleanup EXIT
EVENTS=(getppid getpid getuid getgid geteuid getegid gettid sched_yield getpgrp times)
mkdir -p "$WORK/mnt"
now_ms() { date +%s%3N; }
# start BUILD STATE: a histd on $WORK/mnt; STARTED: the ms until it serves.
start() {
  local t0; t0=$(now_ms)
  "$1/histd" --foreground --mount "$WORK/mnt" --socket "$WORK/sock" --state-dir "$2" --pin-dir "" \
    --config-dir "" >>"$WORK/histd.log" 2>&1 &
  HISTD=$!
  for _ in $(seq 24000); do [ -e "$WORK/mnt/events" ] && { STARTED=$(($(now_ms) - t0)); return; }; sleep 0.005; done
  echo "histd did not start"; tail "$WORK/histd.log"; exit 1
}
stop() { kill -TERM "$HISTD"; wait "$HISTD" 2>/dev/null || true; HISTD=; }
compiles() { "$1/histctl" --socket "$WORK/sock" status | sed -n 's/.* \([0-9]*\) compiles served by histd-cc, \([0-9]*\) by clang/\1 \2/p' |
  awk '{print $1 + $2}'; }

# The saved state, once, by the first variant's build.
first=${1#*=}
start "$first" "$WORK/saved"
for e in "${EVENTS[@]:0:$E}"; do
  for k in $(seq 2 $((N + 1))); do echo "hist:keys=common_pid.buckets=$k" >>"$WORK/mnt/events/syscalls/sys_enter_$e/trigger"; done
done
stop
declare -A ms=() units=()
for r in $(seq "$ROUNDS"); do
  for v in $(printf '%s\n' "$@" | shuf); do
    rm -rf "$WORK/state"; cp -a "$WORK/saved" "$WORK/state"; rm -rf "$WORK/state/cache"
    start "${v#*=}" "$WORK/state"
    restored=$("${v#*=}/histctl" --socket "$WORK/sock" list | grep -c '^syscalls:' || true)
    [ "$restored" -eq $((N * E)) ] || { echo "${v%%=*}: $restored of $((N * E)) restored"; exit 1; }
    ms[${v%%=*}]+="$STARTED "
    units[${v%%=*}]="$(compiles "${v#*=}")"
    stop
  done
  echo "round $r done (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done
echo "restore of $((N * E)) saved triggers ($N on each of $E events, each its own shape), empty object cache"
for v in "$@"; do
  python3 - "${v%%=*}" "${units[${v%%=*}]}" ${ms[${v%%=*}]} <<'PY'
import statistics, sys
name, units, xs = sys.argv[1], sys.argv[2], sorted(int(x) for x in sys.argv[3:])
print(f"  {name:<10} {statistics.median(xs):7.0f} ms ({xs[0]}..{xs[-1]})   {units} units compiled")
PY
done
