#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# histd's limits through the mounted tree: --max-triggers on the command
# line, --max-map-memory and --max-synthetic-events from the config file. A
# command over a limit changes nothing, fails the writer's write(2) with
# ENOSPC and leaves an error_log entry; `histctl list --json` and
# hist_debug report map memory.
source "$(dirname "$0")/lib.sh"

# Out-of-range limits stop histd before it mounts anything.
rc=0; out=$("$HISTD_BIN" --foreground --mount "$WORK/never" --max-triggers 5000 2>&1) || rc=$?
expect_eq "--max-triggers above the control array is refused" "1 1" \
  "$([ "$rc" -ne 0 ] && echo 1) $(grep -c -- '--max-triggers' <<<"$out")"
rc=0; out=$("$HISTD_BIN" --foreground --mount "$WORK/never" --max-synthetic-events 2049 2>&1) || rc=$?
expect_eq "--max-synthetic-events above its ceiling is refused" "1 1" \
  "$([ "$rc" -ne 0 ] && echo 1) $(grep -c -- '--max-synthetic-events' <<<"$out")"
rc=0; out=$("$HISTD_BIN" --foreground --mount "$WORK/never" --max-map-memory lots 2>&1) || rc=$?
expect_eq "a size that is not one is refused" "1" "$([ "$rc" -ne 0 ] && echo 1)"

printf 'max-map-memory = 1M\ntrace-buffer-size = 64K\npercpu-table-limit = 64K\nmax-synthetic-events = 2\nmax-instances = 1\n' >"$WORK/histd.conf"
histd_start --max-triggers 2 --config "$WORK/histd.conf"
export HISTD_SOCKET=$WORK/histd.sock
W=$MNT/events/syscalls/sys_enter_write
last_error() { grep -o "error: .*" "$MNT/error_log" | tail -1 | sed 's/^error: //'; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# --- the trigger limit ----------------------------------------------------
echo 'hist:keys=fd' >"$W/trigger"
echo 'hist:keys=count' >>"$W/trigger"
before=$(cat "$W/trigger")
rc=0; err=$( { echo 'hist:keys=common_pid' >>"$W/trigger"; } 2>&1 ) || rc=$?
expect_eq "the third trigger fails the write" "1" "$rc"
expect_eq "with ENOSPC" "No space left on device" "$(grep -o 'No space left on device' <<<"$err")"
expect_eq "error_log says why" "too many triggers: the limit is 2 and 2 are in use" "$(last_error)"
expect_eq "the trigger file is unchanged" "$before" "$(cat "$W/trigger")"

# --- the map memory limit (from the config file) --------------------------
echo '!hist:keys=count' >>"$W/trigger"
rc=0; err=$( { echo 'hist:keys=common_pid:size=131072' >>"$W/trigger"; } 2>&1 ) || rc=$?
expect_eq "a table over the memory limit fails the write" "1" "$rc"
expect_eq "with ENOSPC too" "No space left on device" "$(grep -o 'No space left on device' <<<"$err")"
expect_eq "error_log names the limit" "1" \
  "$(last_error | grep -c '^hist trigger would exceed the map memory limit: it needs [0-9]* bytes, [0-9]* of the 1048576 bytes allowed are in use$')"
expect_eq "the caret is under size=" "$(printf '%*s^' 32 '')" "$(tail -1 "$MNT/error_log")"
expect_eq "only the first trigger is left" "hist:keys=fd:vals=hitcount:sort=hitcount:size=2048 [active]" "$(cat "$W/trigger")"
rc=0; out=$("$HISTCTL_BIN" add syscalls:sys_enter_write 'hist:keys=common_pid:size=131072' 2>&1) || rc=$?
expect_eq "histctl add is refused the same way" "1 1" "$rc $(grep -c 'would exceed the map memory limit' <<<"$out")"

# --- the synthetic event limit (from the config file), apart from triggers --
echo 'one u64 a' >>"$MNT/synthetic_events"
"$HISTCTL_BIN" synth add 'two u64 a'
rc=0; err=$( { echo 'three u64 a' >>"$MNT/synthetic_events"; } 2>&1 ) || rc=$?
expect_eq "the third synthetic event fails the write with ENOSPC" "1 No space left on device" \
  "$rc $(grep -o 'No space left on device' <<<"$err")"
expect_eq "error_log names the limit" "too many synthetic events: the limit is 2 and 2 are defined" "$(last_error)"
rc=0; out=$("$HISTCTL_BIN" synth add 'three u64 a' 2>&1) || rc=$?
expect_eq "histctl synth add is refused the same way" "1 1" "$rc $(grep -c 'too many synthetic events' <<<"$out")"
expect_eq "the definitions are unchanged" "$(printf 'one\tu64 a\ntwo\tu64 a')" "$(cat "$MNT/synthetic_events")"
expect_eq "status shows both counts" "triggers: 1 of 2
synthetic events: 2 of 2" "$("$HISTCTL_BIN" status | grep -E "^(triggers|synthetic events): ")"
expect_eq "list --json: the synthetic events against their limit" "2 2" \
  "$("$HISTCTL_BIN" list --json | json 'd["usage"]["synthetic_events"], d["usage"]["max_synthetic_events"]')"
echo '!one' >>"$MNT/synthetic_events"; echo '!two' >>"$MNT/synthetic_events"

# --- what is reported ------------------------------------------------------
list=$("$HISTCTL_BIN" list --json)
expect_eq "list --json: the limits" "2 1048576 65536" \
  "$(json 'd["usage"]["max_triggers"], d["usage"]["max_map_memory"], d["usage"]["trace_buffer_size"]' <<<"$list")"
expect_eq "list --json: one trigger, its memory is the total in use" "1 True" \
  "$(json 'd["usage"]["triggers"], d["usage"]["map_memory"] == d["triggers"][0]["map_memory"]["total"] > 0' <<<"$list")"
total=$(json 'd["triggers"][0]["map_memory"]["total"]' <<<"$list")
expect_eq "hist_debug shows the same figure" "1" "$(grep -c "^  map memory: $total bytes " "$W/hist_debug")"
expect_eq "and, over percpu-table-limit, one shared hash" "1" \
  "$(grep -c '^  map: hash (shared by all CPUs, atomic adds), max_entries: 2048' "$W/hist_debug")"
expect_eq "show --json carries it per table" "$total" \
  "$("$HISTCTL_BIN" show --json syscalls:sys_enter_write | json 'd["tables"][0]["map_memory"]["total"]')"
# --- one map memory limit for the top tree and its instances --------------
mkdir "$MNT/instances/b$$"
IW=$MNT/instances/b$$/events/syscalls/sys_enter_write
rc=0; err=$( { echo 'hist:keys=common_pid:size=131072' >>"$IW/trigger"; } 2>&1 ) || rc=$?
expect_eq "an instance's table is refused against the same limit (ENOSPC)" "1 No space left on device" \
  "$rc $(grep -o 'No space left on device' <<<"$err")"
expect_eq "its error_log counts what the other trees hold" "1" \
  "$(grep -c "of the 1048576 bytes allowed are in use ($total of them by other trees)\$" "$MNT/instances/b$$/error_log")"
echo 'hist:keys=common_pid' >>"$IW/trigger"
expect_eq "histctl status: the top tree's memory, and with the instances" "yes" \
  "$(grep -qE "^map memory: $total of 1048576 bytes \([0-9]+ with the instances\)\$" <("$HISTCTL_BIN" status) && echo yes)"
rc=0; err=$(mkdir "$MNT/instances/c$$" 2>&1) || rc=$?
expect_eq "--max-instances 1: a second instance is refused (ENOSPC)" "1 No space left on device" \
  "$rc $(grep -o 'No space left on device' <<<"$err")"
expect_eq "and the top tree's error_log says why" "too many instances: the limit is 1 (--max-instances) and 1 exist" \
  "$(last_error)"
rmdir "$MNT/instances/b$$"

# (only its ERROR: lines, about the last command, quote the bytes in use)
expect_eq "the hist file does not" "0" "$(sed '/^ERROR:/,$d' "$W/hist" | grep -c -e "$total" -e 'memory')"
expect_eq "plain list is unchanged" "syscalls:sys_enter_write hist:keys=fd:vals=hitcount:sort=hitcount:size=2048 [active]" \
  "$("$HISTCTL_BIN" list)"

: >"$W/trigger"
finish
