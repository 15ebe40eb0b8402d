#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# All of histd's memory: the resident size (RSS) of
# every process histd runs — histd and histd-cc; the exporter only runs
# with --metrics-listen — and what the first trigger after an idle while
# pays. ROUNDS rounds (default 3), each in a fresh histd and state
# directory (a cold object cache); medians (min..max).
#   idle           histd started, histd-cc shed (--compiler-idle-shed 1)
#   100 triggers   10 syscall events x 10 triggers, each table read once,
#                  then idle (histd-cc shed)
#   activation     ms one write of a new trigger (never compiled: a cold
#                  cache) takes: right after a compile (histd-cc warm),
#                  after histd-cc shed (3 s idle), after LONG_IDLE more
#                  seconds of idle when set (the page cache may have let go
#                  of the compiler's libraries by then), and after it
#                  stopped (a histd with --compiler-idle-stop 1 instead);
#                  and the MiB histd-cc maps back in the compile after its
#                  shed
#   first touch    then histd_bench_refault on histd-cc's libLLVM: what a
#                  page costs when touched again after the shed unmapped it
#                  (the floor under the activation after a shed)
#   bash bench/memory.sh   (as root, from a built tree; HISTD_BUILD=dir: that
#                          build, histd and histd-cc; LONG_IDLE=0 seconds)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/rounds.sh
ROUNDS=${ROUNDS:-3}
LONG_IDLE=${LONG_IDLE:-0}
B=$(realpath "${HISTD_BUILD:-build}")
WORK=$(mktemp -d /tmp/histd-memory.XXXXXX)
HISTD=
trap bench_cleanup EXIT
EVENTS="getppid getpid getuid getgid geteuid getegid gettid getpgrp umask sched_yield"

# KiB resident in histd and its children, or in the given pid alone.
rss_kib() {
  local total=0 p
  for p in ${1:-"$HISTD" $(ps -o pid= --ppid "$HISTD")}; do
    total=$((total + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

# Milliseconds one write of a new trigger to sys_enter_$1 takes, its object
# never compiled: the cache is emptied first (a trigger differing only in
# its numbers would reuse a compiled object, since they are loaded).
timed_trigger() {
  rm -rf "$WORK/state/cache"
  timed_write "$WORK/mnt/events/syscalls/sys_enter_$1/trigger" "hist:keys=common_pid if common_pid != $RANDOM$RANDOM"
}

fresh_histd() {
  bench_cleanup_histd
  mkdir -p "$WORK"
  start_histd "$@"
  sleep 1
}

bench_cleanup_histd() {
  [ -z "$HISTD" ] || { kill -TERM "$HISTD" 2>/dev/null || true; wait "$HISTD" 2>/dev/null || true; }
  HISTD=
  rm -rf "$WORK/state"
}

declare -A F=()
for r in $(seq "$ROUNDS"); do
  fresh_histd --compiler-idle-shed 1
  sleep 2
  F[idle]+="$(rss_kib) "
  F[warm]+="$(timed_trigger getppid) "
  F[after_compile]+="$(timed_trigger getpid) "
  sleep 3
  CC=$(ps -o pid= --ppid "$HISTD" | head -1 | tr -d " ")
  LIBLLVM=$(awk '$6 ~ /libLLVM/ {print $6; exit}' "/proc/$CC/maps")
  before=$(rss_kib "$CC")
  F[after_shed]+="$(timed_trigger getuid) "
  F[remapped]+="$(($(rss_kib "$CC") - before)) "
  if [ "$LONG_IDLE" -gt 0 ]; then
    sleep "$LONG_IDLE"
    F[after_long_idle]+="$(timed_trigger getgid) "
  fi
  for e in $EVENTS; do
    for k in $(seq 10); do
      echo "hist:keys=common_pid:vals=hitcount if common_pid != $k$r" >>"$WORK/mnt/events/syscalls/sys_enter_$e/trigger"
    done
  done
  for e in $EVENTS; do cat "$WORK/mnt/events/syscalls/sys_enter_$e/hist" >/dev/null; done
  sleep 3
  F[triggers]+="$(rss_kib) "
  fresh_histd --compiler-idle-stop 1
  sleep 3
  F[stopped_idle]+="$(rss_kib) "
  F[after_stop]+="$(timed_trigger getppid) "
  echo "round $r done" >&2
done

med() { python3 -c 'import sys, statistics as s; d=float(sys.argv[1]); v=[float(x)/d for x in sys.argv[2:]]; print("%.1f (%.1f..%.1f)" % (s.median(v), min(v), max(v)))' "$@"; }
echo "resident size of histd and its processes, MiB"
echo "  idle (histd-cc shed)                      $(med 1024 ${F[idle]})"
echo "  100 triggers, idle (histd-cc shed)        $(med 1024 ${F[triggers]})"
echo "  idle with --compiler-idle-stop (histd alone) $(med 1024 ${F[stopped_idle]})"
echo "activation of a new trigger, ms"
echo "  first after start                         $(med 1 ${F[warm]})"
echo "  right after a compile                     $(med 1 ${F[after_compile]})"
echo "  after histd-cc shed                       $(med 1 ${F[after_shed]})"
[ "$LONG_IDLE" -eq 0 ] || echo "  after $LONG_IDLE s idle (histd-cc shed)          $(med 1 ${F[after_long_idle]})"
echo "  after histd-cc stopped                    $(med 1 ${F[after_stop]})"
echo "MiB histd-cc mapped back in the compile after its shed $(med 1024 ${F[remapped]})"
"$B/histd_bench_refault" "$LIBLLVM" 64 "$((ROUNDS * 3))"
