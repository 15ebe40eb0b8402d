#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Activation: how long a write of a new trigger to a running histd takes (the
# write returns once the program is attached), with a cold object cache and
# with the object cached. Each variant is a histd binary, optionally with
# environment settings; every round runs each variant once in turn
# (interleaved), each in a fresh histd given SETTLE seconds to start. Prints
# medians (min..max) in ms. "cold" is the histd's first trigger; "cached":
# the same once more; each "new ..." column: a trigger is written and
# removed, then one that differs from it only in a filter's number
# (`if common_pid != 1`, then 2), a field (`vals=fd`, then `vals=count` on
# sys_enter_read: another field of the same size, at another offset), a
# filter's string (`comm == "bash"`, then "zsh") or the table's size
# (`size=4096`, then 8192): what the second write takes; "cold again": the
# first trigger once more, its object dropped from the cache, on the histd
# that has compiled the others (what a new trigger costs a histd that has
# been running).
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

source bench/rounds.sh  # timed_write, start_variant

# The "new ..." columns: name|event|first trigger|the one timed.
SIBLINGS=(
  "new number|sys_enter_getppid|$CMD if common_pid != 1|$CMD if common_pid != 2"
  "new field|sys_enter_read|hist:keys=common_pid:vals=fd|hist:keys=common_pid:vals=count"
  "new string|sys_enter_getppid|$CMD if comm == \"bash\"|$CMD if comm == \"zsh\""
  "new size|sys_enter_getppid|$CMD:size=4096|$CMD:size=8192"
)
COLUMNS=("cold" "cached")
for s in "${SIBLINGS[@]}"; do COLUMNS+=("${s%%|*}"); done
COLUMNS+=("cold again")

# One round of one variant: prints a time for each of COLUMNS.
run_once() {
  start_variant "$1"
  local W=$WORK/run
  sleep "$SETTLE"
  local T=$W/mnt/events/syscalls/sys_enter_getppid/trigger times=() name event first second
  times+=("$(timed_write "$T" "$CMD")")
  echo "!$CMD" >"$T"
  times+=("$(timed_write "$T" "$CMD")")
  echo "!$CMD" >"$T"
  for s in "${SIBLINGS[@]}"; do
    IFS='|' read -r name event first second <<<"$s"
    local F=$W/mnt/events/syscalls/$event/trigger
    timed_write "$F" "$first" >/dev/null
    echo "!$first" >"$F"
    times+=("$(timed_write "$F" "$second")")
    echo "!$second" >"$F"
  done
  rm -rf "$W/state/cache"/*
  times+=("$(timed_write "$T" "$CMD")")
  echo "!$CMD" >"$T"
  kill -TERM "$HISTD"
  wait "$HISTD" 2>/dev/null || true
  HISTD=
  echo "${times[*]}"
}

declare -A TIMES  # [variant column-number] = "ms ms ..."
for r in $(seq "$ROUNDS"); do
  for v in "$@"; do
    name=${v%%=*}
    read -ra t < <(run_once "${v#*=}")
    for c in "${!COLUMNS[@]}"; do TIMES[$name $c]+="${t[$c]} "; done
  done
  echo "round $r done (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done

stats() {
  python3 -c 'import sys, statistics as s; v=[float(x) for x in sys.argv[1:]]; print("%.1f (%.1f..%.1f)" % (s.median(v), min(v), max(v)))' "$@"
}
printf '%-12s' variant
for c in "${COLUMNS[@]}"; do printf ' %-22s' "$c ms"; done
echo
for v in "$@"; do
  name=${v%%=*}
  printf '%-12s' "$name"
  # shellcheck disable=SC2086
  for c in "${!COLUMNS[@]}"; do printf ' %-22s' "$(stats ${TIMES[$name $c]})"; done
  echo
done
