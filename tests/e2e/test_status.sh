#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# histctl status, text and JSON: which histd (version,
# pid, uptime), the records the ring buffer to histd lost while histd was
# stopped (SIGSTOP: nothing drains the ring; the trace says so too, as
# tracefs does), and the resident compiler: running, restarted, given up.
source "$(dirname "$0")/lib.sh"
histd_start --trace-buffer-size 32M
ctl() { "$HISTCTL_BIN" --socket "$WORK/histd.sock" "$@"; }
# field EXPR: EXPR over the JSON document d, a tuple printed space-separated.
field() { python3 -c "import json,sys; d=json.load(sys.stdin); v=($1); print(*v) if isinstance(v, tuple) else print(v)"; }
compiler() { field "tuple(d['compiler'][k] for k in '$1'.split())"; }
VERSION=$(sed -n 's/^project(histd VERSION \([0-9.]*\).*/\1/p' "$(dirname "$0")/../../CMakeLists.txt")
server() { ps -o pid= --ppid "$HISTD_PID" | tr -d ' ' | while read -r p; do
  [ "$(cat "/proc/$p/comm" 2>/dev/null)" = histd-cc ] && echo "$p"; done; }
# A histd-cc other than $1 (none: any).
next_server() { local s=; for _ in $(seq 100); do s=$(server); [ -n "$s" ] && [ "$s" != "${1:-}" ] && break; sleep 0.1; done; echo "$s"; }

cc=$(next_server)
out=$(ctl status)
expect_eq "status: version, pid and uptime first" "yes" \
  "$(head -1 <<<"$out" | grep -qE "^histd $VERSION \(pid $HISTD_PID\), up [0-9]+s$" && echo yes || head -1 <<<"$out")"
expect_eq "status: nothing lost yet" "lost in the ring buffer: 0 trace records, 0 snapshot notices" \
  "$(grep '^lost in the ring buffer' <<<"$out")"
expect_eq "status: the resident compiler runs" "compiler: histd-cc running (pid $cc)
  0 restarts, 0 idle stops, 0 compiles served by histd-cc, 0 by clang" "$(grep -A1 '^compiler:' <<<"$out")"
json=$(ctl status --json)
expect_eq "status --json: version, pid" "$VERSION $HISTD_PID" "$(field 'd["version"], d["pid"]' <<<"$json")"
expect_eq "status --json: uptime in seconds" "True" "$(field 'd["uptime_seconds"] >= 0' <<<"$json")"
expect_eq "status --json: the compiler" "running $cc 1 0 0 0" \
  "$(compiler 'state pid starts restarts compiles_served clang_compiles' <<<"$json")"

# ---- the ring: a flood of traced synthetic events while histd is stopped.
# 64 bytes a record: the 4 MiB ring holds 65536 of the 200000.
N=200000
echo 'lostev unsigned int fd' >>"$MNT/synthetic_events"
echo 1 >"$MNT/events/synthetic/lostev/enable"
mkfifo "$WORK/go"
WCOMM=$(own_comm closer)  # the worker's name: the trigger's filter (lib.sh)
"$(comm_link "$WCOMM" "$(dirname "$HISTD_BIN")/histd_bench_close")" "$N" <"$WORK/go" >"$WORK/worker.pid" &
CHILD=$!
exec 3>"$WORK/go"
for _ in $(seq 50); do [ -s "$WORK/worker.pid" ] && break; sleep 0.1; done
echo "hist:keys=common_pid:f=fd:onchange(\$f).trace(lostev,\$f) if common_comm == \"$WCOMM\"" \
  >"$MNT/events/syscalls/sys_enter_close/trigger"
kill -STOP "$HISTD_PID"
echo go >&3
exec 3>&-
wait "$CHILD" || true
kill -CONT "$HISTD_PID"
# The consumer drains the ring, then says what it lost (each close changes
# fd: every one of them fired).
for _ in $(seq 100); do sed -n 3p "$MNT/trace" | grep -q "entries-written: [0-9]*/$N " && break; sleep 0.1; done
lost=$(ctl status | sed -n 's/^lost in the ring buffer: \([0-9]*\) trace records, 0 snapshot notices$/\1/p')
expect_eq "status: the records the full ring turned away" "yes" \
  "$([ "${lost:-0}" -gt 0 ] && [ "$lost" -lt "$N" ] && echo yes || echo "no: '$lost'")"
expect_eq "status --json: the same count" "$lost 0" \
  "$(ctl status --json | field 'd["ring_lost"]["trace_records"], d["ring_lost"]["snapshot_notices"]')"
expect_eq "trace: the lost records in CPU:N [LOST M EVENTS] lines" "$lost" \
  "$(sed -n 's/^CPU:[0-9]* \[LOST \([0-9]*\) EVENTS\]$/\1/p' "$MNT/trace" | awk '{s += $1} END {print s + 0}')"
expect_eq "trace: entries-written counts every record, kept or lost" \
  "# entries-in-buffer/entries-written: $((N - lost))/$N   #P:$(ctl status --json | field 'd["possible_cpus"]')" \
  "$(sed -n 3p "$MNT/trace")"
: >"$MNT/events/syscalls/sys_enter_close/trigger"

# ---- the compiler: a killed histd-cc is replaced; the third death in a row
# is the last, and clang compiles from then on.
expect_eq "status: the trigger was compiled by histd-cc" "  0 restarts, 0 idle stops, 1 compiles served by histd-cc, 0 by clang" \
  "$(ctl status | grep -A1 '^compiler:' | tail -1)"
for i in 1 2 3; do
  kill -KILL "$cc"
  [ "$i" -lt 3 ] && cc=$(next_server "$cc")
done
for _ in $(seq 50); do grep -q '^compiler: histd-cc given up' <(ctl status) && break; sleep 0.1; done
echo 'hist:keys=fd' >"$MNT/events/syscalls/sys_enter_close/trigger"
expect_eq "status: given up, clang compiles" \
  "compiler: histd-cc given up after 3 failures in a row: clang compiles every unit
  2 restarts, 0 idle stops, 1 compiles served by histd-cc, 1 by clang" "$(ctl status | grep -A1 '^compiler:')"
expect_eq "status --json: given up" "given up 0 3 2 3 1" \
  "$(ctl status --json | compiler 'state pid starts restarts failures_in_row clang_compiles')"
finish
