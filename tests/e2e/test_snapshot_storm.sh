#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# An onchange(...).snapshot() that fires on every event
# of a getppid() loop, with the trace buffer full. Each snapshot once copied
# the whole buffer under the engine lock: `cat trigger` took minutes and
# SIGTERM went unanswered. Now a snapshot swaps the buffers (as the kernel
# does) and the ring consumer holds the lock for a bounded chunk at a time:
# reading the trigger file, a trigger write and SIGTERM each answer within
# two seconds while the notices pour in. (Named "storm":
# `ctest -E load` leaves out the long load test by name, not this one.)
source "$(dirname "$0")/lib.sh"
WORKER_BIN=${HISTD_LOAD_WORKER:-$(dirname "$HISTD_BIN")/histd_load_worker}
if [ ! -x "$WORKER_BIN" ]; then
  echo "FAIL: no workload at $WORKER_BIN (build the histd_load_worker target)"; exit 1
fi
WORKER_PIDS=()
load_cleanup() {
  for p in "${WORKER_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  cleanup
}
trap load_cleanup EXIT

histd_start --trace-buffer-size 16M
ENTER=$MNT/events/syscalls/sys_enter_getppid

# A full trace buffer: 16 MiB of trace_marker lines.
python3 - "$MNT/trace_marker" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
line = b"x" * 4000
for _ in range(16 * 1024 * 1024 // 4000 + 64):
    os.write(fd, line)
os.close(fd)
PY
lines=$(grep -vc '^#' "$MNT/trace" || true)
expect_eq "the trace buffer is full" "yes" "$([ "$lines" -ge 4000 ] && echo yes || echo "no: $lines lines")"

mkfifo "$WORK/go"
WORKER_COMM=$(own_comm storm)  # both workers' name: the filter (lib.sh)
for i in 1 2; do
  "$(comm_link "$WORKER_COMM" "$WORKER_BIN")" 20 <"$WORK/go" >"$WORK/worker.$i" &
  WORKER_PIDS+=($!)
done
FILTER="common_comm == \"$WORKER_COMM\""
SNAP='hist:keys=common_pid:t=common_timestamp:onchange($t).snapshot()'
echo "$SNAP if $FILTER" >>"$ENTER/trigger"
exec 3>"$WORK/go"; exec 3>&-  # go

ms() { echo $(($(date +%s%N) / 1000000)); }
# elapsed_ok NAME MS: within the 2 s bound
elapsed_ok() {
  echo "$1: $2 ms"
  expect_eq "$1 within 2 s under the snapshot storm" "yes" "$([ "$2" -le 2000 ] && echo yes || echo "no: $2 ms")"
}

sleep 3  # the ring fills with snapshot notices
t0=$(ms); timeout 60 cat "$ENTER/trigger" >/dev/null || true; t1=$(ms)
elapsed_ok "cat trigger" $((t1 - t0))
# write_trigger COMMAND: appended to the trigger file, at most 60 s.
write_trigger() { timeout 60 sh -c 'echo "$1" >>"$2"' _ "$1" "$ENTER/trigger" || true; }
t0=$(ms); write_trigger "$SNAP:pause if $FILTER"; t1=$(ms)
elapsed_ok "a trigger write (pause)" $((t1 - t0))
expect_eq "the pause applied" "1" "$(grep -c '\[paused\]$' "$ENTER/trigger")"
t0=$(ms); write_trigger "$SNAP:cont if $FILTER"; t1=$(ms)
elapsed_ok "a trigger write (cont)" $((t1 - t0))
t0=$(ms); timeout 60 cat "$ENTER/hist" >"$WORK/hist" || true; t1=$(ms)
elapsed_ok "cat hist" $((t1 - t0))
expect_eq "snapshots were taken" "1" "$(grep -c '^Snapshot taken (see tracing/snapshot).  Details:$' "$WORK/hist")"
hits=$(sed -n 's/^    Hits: //p' "$WORK/hist")
echo "events so far (each a snapshot notice): $hits"
expect_eq "the workers' events came by the thousand" "yes" "$([ "${hits:-0}" -ge 10000 ] && echo yes || echo "no: $hits")"

t0=$(ms)
kill -TERM "$HISTD_PID"
for _ in $(seq 600); do kill -0 "$HISTD_PID" 2>/dev/null || break; sleep 0.1; done
t1=$(ms)
elapsed_ok "SIGTERM (histd exited)" $((t1 - t0))
expect_eq "histd exited after SIGTERM" "gone" "$(kill -0 "$HISTD_PID" 2>/dev/null && echo running || echo gone)"
wait "$HISTD_PID" 2>/dev/null && rc=0 || rc=$?
expect_eq "histd exited 0" "0" "$rc"
finish
