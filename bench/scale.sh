#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Start and reload at scale: N triggers (200) over ten
# syscall events a python3 process can call harmlessly (20 per event, each
# its own filter on common_pid, so every call counts for all 20):
#   restore  a histd started on a state directory that saved the N triggers,
#            its object cache warm: from exec to the tree served with every
#            trigger restored (histd restores before it mounts);
#   reload   a histd started with no trigger and the same warm cache, whose
#            configuration directory then declares the N triggers: how long
#            `histctl reload` takes to apply them;
#   cold     the same reload with an empty object cache (every unit compiled).
# After each, one call of each syscall: the tables whose Hits are 1 or more
# (every trigger must count its first event; the kernel may skip an event
# while other BPF work runs on that CPU, which the table's Missed says).
# Rounds interleaved; medians (min..max) in ms.
#   bash bench/scale.sh    (root; ROUNDS=5 N=200, HISTD_BUILD=dir: that build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
N=${N:-200}
B=$(realpath "${HISTD_BUILD:-build}")
WORK=$(mktemp -d /tmp/histd-bench-scale.XXXXXX)
HISTD=
cleanup() {
  if [ -n "$HISTD" ]; then kill -TERM "$HISTD" 2>/dev/null || true; wait "$HISTD" 2>/dev/null || true; fi
  mountpoint -q "$WORK/mnt" && fusermount3 -u "$WORK/mnt"
  rm -rf "$WORK"
}
trap cleanup EXIT
EVENTS=(getppid getpid getuid getgid geteuid getegid gettid sched_yield getpgrp times)
PER=$(((N + ${#EVENTS[@]} - 1) / ${#EVENTS[@]}))
# The declarations, one per line: "syscalls:sys_enter_EVENT COMMAND".
declarations() {
  local i=0 e k
  for e in "${EVENTS[@]}"; do
    for k in $(seq "$PER"); do
      [ "$i" -lt "$N" ] || return 0
      echo "syscalls:sys_enter_$e hist:keys=common_pid:vals=hitcount if common_pid != $((1000000 + k))"
      i=$((i + 1))
    done
  done
}
declarations >"$WORK/declared"
mkdir -p "$WORK/mnt" "$WORK/conf"
now_ms() { date +%s%3N; }
# start STATE [CONFIG_DIR]: a histd on $WORK/mnt; STARTED: the ms until it serves.
start() {
  local t0; t0=$(now_ms)
  "$B/histd" --foreground --mount "$WORK/mnt" --socket "$WORK/sock" --state-dir "$1" --pin-dir "" \
    --config-dir "${2:-}" --max-triggers $((N + 16)) >>"$WORK/histd.log" 2>&1 &
  HISTD=$!
  for _ in $(seq 6000); do [ -e "$WORK/mnt/events" ] && { STARTED=$(($(now_ms) - t0)); return; }; sleep 0.005; done
  echo "histd did not start"; tail "$WORK/histd.log"; exit 1
}
stop() { kill -TERM "$HISTD"; wait "$HISTD" 2>/dev/null || true; HISTD=; }
ctl() { "$B/histctl" --socket "$WORK/sock" "$@"; }
# Tables that counted their first event, of N; and the events missed.
counted() {
  python3 -c 'import os, threading
for f in (os.getppid, os.getpid, os.getuid, os.getgid, os.geteuid, os.getegid, threading.get_native_id,
          os.sched_yield, os.getpgrp, os.times): f()'
  local e hits=0 missed=0
  for e in "${EVENTS[@]}"; do
    read -r h m < <(awk '/^    Hits: / {if ($2 > 0) h++} /^    Missed: / {m += $2} END {print h + 0, m + 0}' \
      "$WORK/mnt/events/syscalls/sys_enter_$e/hist")
    hits=$((hits + h)); missed=$((missed + m))
  done
  echo "$hits/$N ($missed missed)"
}

# The saved state and the warm cache, once.
start "$WORK/saved"
while read -r ev cmd; do ctl add "$ev" "$cmd" >/dev/null; done <"$WORK/declared"
stop
cp -a "$WORK/saved/cache" "$WORK/cache"
declare -A ms=() seen=()
for r in $(seq "$ROUNDS"); do
  for kind in $( ((r % 2)) && echo "restore reload cold" || echo "cold reload restore"); do
    case $kind in
      restore)
        start "$WORK/saved"
        ms[$kind]+="$STARTED "
        [ "$(ctl list | grep -c '^syscalls:')" -eq "$N" ] || { echo "restore: not every trigger"; exit 1; } ;;
      reload | cold)
        rm -rf "$WORK/fresh" "$WORK/conf"/*; mkdir -p "$WORK/fresh"
        [ "$kind" = reload ] && cp -a "$WORK/cache" "$WORK/fresh/cache"
        start "$WORK/fresh" "$WORK/conf"
        cp "$WORK/declared" "$WORK/conf/bench.conf"
        t0=$(now_ms); ctl reload >/dev/null; ms[$kind]+="$(($(now_ms) - t0)) " ;;
    esac
    seen[$kind]="$(counted)"
    stop
  done
done
python3 - "$N" "${ms[restore]}" "${ms[reload]}" "${ms[cold]}" "${seen[restore]}" "${seen[reload]}" "${seen[cold]}" <<'PY'
import statistics, sys
n = sys.argv[1]
names = [f"restore {n} saved triggers at start (warm cache)", f"reload: apply {n} declared (warm cache)",
         f"reload: apply {n} declared (cold cache)"]
print(f"{n} triggers over 10 events, ms, median (min..max); first event counted (last round)")
for name, xs, seen in zip(names, sys.argv[2:5], sys.argv[5:8]):
    v = [float(x) for x in xs.split()]
    print(f"  {name:<44} {statistics.median(v):8.0f} ({min(v):.0f}..{max(v):.0f})   {seen}")
PY
