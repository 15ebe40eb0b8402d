#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A clean stop with many events: SIGTERM with a hist trigger on each of 300
# syscalls:sys_enter_* events took 21 s (each detach waits for RCU grace
# periods under a kernel-wide mutex); it must take under 2 s, the test
# allows 5 on a loaded machine and prints the figure. Every program is still
# detached (shortly after histd exits, by the kernel), and neither the start
# nor a clean restart prints libbpf's "failed to open link" per event.
source "$(dirname "$0")/lib.sh"
EVENTS=${HISTD_SHUTDOWN_EVENTS:-300}
HISTCTL=("$HISTCTL_BIN" --socket "$WORK/histd.sock")

histd_start
mapfile -t events < <(ls /sys/kernel/tracing/events/syscalls | grep '^sys_enter_' | head -n "$EVENTS")
added=0
for e in "${events[@]}"; do
  echo 'hist:keys=common_pid' >"$MNT/events/syscalls/$e/trigger" && added=$((added + 1))
done
expect_eq "a trigger on each of $EVENTS events" "$EVENTS" "$added"
# The dispatcher programs, by id, to see them go.
progs=$(for p in "$PIN"/event-*_link; do bpftool link show pinned "$p" 2>/dev/null |
  sed -n 's/.*prog \([0-9]*\).*/\1/p' || true; done | sort -u)
expect_eq "$EVENTS dispatchers attached" "$EVENTS" "$(wc -w <<<"$progs")"

start=$(date +%s%N)
kill -TERM "$HISTD_PID"
rc=0; wait "$HISTD_PID" || rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
echo "SIGTERM with $EVENTS events: histd exited after $ms ms"
expect_eq "it exits 0" "0" "$rc"
expect_eq "within 5 s (it must take under 2 s)" "yes" "$([ "$ms" -lt 5000 ] && echo yes || echo "no: $ms ms")"
left=
for _ in $(seq 50); do
  left=$(for id in $progs; do if bpftool prog show id "$id" >/dev/null 2>&1; then echo "$id"; fi; done)
  [ -z "$left" ] && break
  sleep 0.1
done
expect_eq "every dispatcher detached within 5 s of the exit" "" "$left"
expect_eq "no link pin left" "0" "$(ls "$PIN" | grep -c '_link$' || true)"
expect_eq "no 'failed to open link' at start" "0" "$(grep -c 'failed to open link' "$WORK/histd.log" || true)"

# A clean restart restores every trigger (from the object cache) without a
# warning per event.
: >"$WORK/histd.log"
HISTD_START_TIMEOUT=120 histd_start
expect_eq "a clean restart restores them" "$EVENTS" "$("${HISTCTL[@]}" list | grep -c 'hist:keys=common_pid')"
expect_eq "no 'failed to open link' at a clean restart" "0" "$(grep -c 'failed to open link' "$WORK/histd.log" || true)"
finish
