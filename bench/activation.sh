#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Activation: how long a write of a new trigger to a running histd takes (the
# write returns once the program is attached), with a cold object cache and
# with the object cached. Each variant is a histd binary, optionally with
# environment settings; every round runs each variant once in turn
# (interleaved), each in a fresh histd given SETTLE seconds to start. Prints
# medians (min..max) in ms. "cold" is the histd's first trigger; "new number":
# a trigger with a filter is written and removed, then the same with another
# number in its filter (`if common_pid != 1`, then 2): what the second write
# takes; "new field": likewise on sys_enter_read, `vals=fd` then `vals=count`
# (another field of the same size, at another offset); "cold again": the first trigger once more, its object dropped from
# the cache, on the histd that has compiled the others (what a new trigger
# costs a histd that has been running).
#   bash bench/activation.sh [name=binary[,VAR=value...] ...]
#   (as root, from a built tree; ROUNDS=7 SETTLE=2 by default)
# Default variants: histd (histd-cc) and histd with HISTD_CC= (spawning clang).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
SETTLE=${SETTLE:-2}
B=$PWD/build
if [ $# -eq 0 ]; then set -- "histd-cc=$B/histd" "clang=$B/histd,HISTD_CC="; fi
WORK=$(mktemp -d /tmp/histd-activation.XXXXXX)
HISTD=
cleanup() {
  if [ -n "$HISTD" ]; then kill -TERM "$HISTD" 2>/dev/null || true; wait "$HISTD" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
CMD='hist:keys=common_pid:vals=__syscall_nr'

source bench/rounds.sh  # timed_write

# One round of one variant: prints "cold cached renumbered refielded cold-again".
run_once() {
  local spec=$1 bin env=()
  IFS=, read -r bin rest <<<"$spec"
  if [ -n "${rest:-}" ]; then IFS=, read -ra env <<<"$rest"; fi
  local W=$WORK/run
  rm -rf "$W"
  mkdir -p "$W/mnt"
  env "${env[@]}" "$bin" --foreground --mount "$W/mnt" --socket "$W/sock" --state-dir "$W/state" --pin-dir "" \
    >>"$WORK/histd.log" 2>&1 &
  HISTD=$!
  for _ in $(seq 100); do [ -e "$W/mnt/events" ] && break; sleep 0.1; done
  sleep "$SETTLE"
  local T=$W/mnt/events/syscalls/sys_enter_getppid/trigger
  local cold cached
  cold=$(timed_write "$T" "$CMD")
  echo "!$CMD" >"$T"
  cached=$(timed_write "$T" "$CMD")
  echo "!$CMD" >"$T"
  local renumbered
  timed_write "$T" "$CMD if common_pid != 1" >/dev/null
  echo "!$CMD if common_pid != 1" >"$T"
  renumbered=$(timed_write "$T" "$CMD if common_pid != 2")
  echo "!$CMD if common_pid != 2" >"$T"
  local R=$W/mnt/events/syscalls/sys_enter_read/trigger refielded
  timed_write "$R" "hist:keys=common_pid:vals=fd" >/dev/null
  echo "!hist:keys=common_pid:vals=fd" >"$R"
  refielded=$(timed_write "$R" "hist:keys=common_pid:vals=count")
  echo "!hist:keys=common_pid:vals=count" >"$R"
  rm -rf "$W/state/cache"/*
  local again
  again=$(timed_write "$T" "$CMD")
  echo "!$CMD" >"$T"
  kill -TERM "$HISTD"
  wait "$HISTD" 2>/dev/null || true
  HISTD=
  echo "$cold $cached $renumbered $refielded $again"
}

declare -A COLD CACHED RENUMBERED REFIELDED AGAIN
for r in $(seq "$ROUNDS"); do
  for v in "$@"; do
    name=${v%%=*}
    read -r c k n f a < <(run_once "${v#*=}")
    COLD[$name]+="$c "
    CACHED[$name]+="$k "
    RENUMBERED[$name]+="$n "
    REFIELDED[$name]+="$f "
    AGAIN[$name]+="$a "
  done
  echo "round $r done (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done

stats() {
  python3 -c 'import sys, statistics as s; v=[float(x) for x in sys.argv[1:]]; print("%.1f (%.1f..%.1f)" % (s.median(v), min(v), max(v)))' "$@"
}
printf '%-12s %-24s %-24s %-24s %-24s %-24s\n' variant "cold ms" "cached ms" "new number ms" "new field ms" "cold again ms"
for v in "$@"; do
  name=${v%%=*}
  # shellcheck disable=SC2086
  printf '%-12s %-24s %-24s %-24s %-24s %-24s\n' "$name" "$(stats ${COLD[$name]})" "$(stats ${CACHED[$name]})" \
    "$(stats ${RENUMBERED[$name]})" "$(stats ${REFIELDED[$name]})" "$(stats ${AGAIN[$name]})"
done
