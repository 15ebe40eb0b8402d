#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A restore that compiles every saved trigger again: the object cache empty,
# as after an upgrade changed the compiler.
# N triggers (60) on each of E events (2), every one a unit of its own
# shape (`hist:keys=common_pid.buckets=K`: the bucket size is compiled in),
# are saved once; then each round starts every variant on a copy of that
# state with no cache, and times exec -> the tree served (histd restores
# before it mounts), and counts the compiles (histctl status). With
# WHAT=reload, the same triggers are declared in a configuration directory
# instead and applied by `histctl reload` to a running histd with an empty
# cache (new declarations of new shapes): the reload's time. Rounds
# interleaved; medians (min..max).
#   bash bench/restore_cold.sh [name=build_dir ...]   (root; ROUNDS=5 N=60 E=2
#   WHAT=restore; default: the build in ./build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
N=${N:-60}
E=${E:-2}
WHAT=${WHAT:-restore}
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
    --config-dir "${CONFIG:-}" >>"$WORK/histd.log" 2>&1 &
  HISTD=$!
  for _ in $(seq 24000); do [ -e "$WORK/mnt/events" ] && { STARTED=$(($(now_ms) - t0)); return; }; sleep 0.005; done
  echo "histd did not start"; tail "$WORK/histd.log"; exit 1
}
stop() { kill -TERM "$HISTD"; wait "$HISTD" 2>/dev/null || true; HISTD=; }
# reload BUILD: a histd with no trigger, then the declarations applied by
# `histctl reload`; STARTED: the ms the reload took.
reload() {
  rm -rf "$WORK/state" "$WORK/conf"
  mkdir -p "$WORK/conf"
  CONFIG=$WORK/conf start "$1" "$WORK/state"
  local e k t0
  for e in "${EVENTS[@]:0:$E}"; do
    for k in $(seq 2 $((N + 1))); do echo "syscalls:sys_enter_$e hist:keys=common_pid.buckets=$k"; done
  done >"$WORK/conf/many.conf"
  t0=$(now_ms)
  "$1/histctl" --socket "$WORK/sock" reload >/dev/null
  STARTED=$(($(now_ms) - t0))
}
compiles() { "$1/histctl" --socket "$WORK/sock" status | sed -n 's/.* \([0-9]*\) compiles served by histd-cc, \([0-9]*\) by clang/\1 \2/p' |
  awk '{print $1 + $2}'; }

# The saved state, once, by the first variant's build.
if [ "$WHAT" != reload ]; then
  start "${1#*=}" "$WORK/saved"
  for e in "${EVENTS[@]:0:$E}"; do
    for k in $(seq 2 $((N + 1))); do echo "hist:keys=common_pid.buckets=$k" >>"$WORK/mnt/events/syscalls/sys_enter_$e/trigger"; done
  done
  stop
fi
declare -A ms=() units=()
for r in $(seq "$ROUNDS"); do
  for v in $(printf '%s\n' "$@" | shuf); do
    if [ "$WHAT" = reload ]; then
      reload "${v#*=}"
    else
      rm -rf "$WORK/state"; cp -a "$WORK/saved" "$WORK/state"; rm -rf "$WORK/state/cache"
      start "${v#*=}" "$WORK/state"
    fi
    restored=$("${v#*=}/histctl" --socket "$WORK/sock" list | grep -c '^syscalls:' || true)
    [ "$restored" -eq $((N * E)) ] || { echo "${v%%=*}: $restored of $((N * E)) applied"; exit 1; }
    ms[${v%%=*}]+="$STARTED "
    units[${v%%=*}]="$(compiles "${v#*=}")"
    stop
  done
  echo "round $r done (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done
if [ "$WHAT" = reload ]; then
  echo "reload applying $((N * E)) declared triggers ($N on each of $E events, each its own shape), empty object cache"
else
  echo "restore of $((N * E)) saved triggers ($N on each of $E events, each its own shape), empty object cache"
fi
for v in "$@"; do
  python3 - "${v%%=*}" "${units[${v%%=*}]}" ${ms[${v%%=*}]} <<'PY'
import statistics, sys
name, units, xs = sys.argv[1], sys.argv[2], sorted(int(x) for x in sys.argv[3:])
print(f"  {name:<10} {statistics.median(xs):7.0f} ms ({xs[0]}..{xs[-1]})   {units} units compiled")
PY
done
