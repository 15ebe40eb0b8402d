#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The foundation end to end: histd mounted in a temp dir, a trigger on
# syscalls:sys_enter_write filtered on a child's comm (lib.sh: never on its
# pid), known writes, the exact hist text; errors, removal and truncation through the tree.
source "$(dirname "$0")/lib.sh"
histd_start
EV=$MNT/events/syscalls/sys_enter_write
HISTCTL=("$HISTCTL_BIN" --socket "$WORK/histd.sock")

# The child blocks on a fifo until the trigger is in place, then makes
# exactly three 5-byte writes and two 7-byte writes (bash's printf builtin
# writes to fd 1, here redirected to /dev/null).
child_start 'for i in 1 2 3; do printf abcde >/dev/null; done; for i in 1 2; do printf abcdefg >/dev/null; done'
MINE="common_comm == \"$CHILD_COMM\""

echo "hist:keys=fd,count:vals=hitcount,count if $MINE" >> "$EV/trigger"
expect_eq "trigger file lists the trigger" \
  "hist:keys=fd,count:vals=hitcount,count:sort=hitcount:size=2048 if $MINE [active]" \
  "$(cat "$EV/trigger")"

echo go > "$WORK/go"
wait "$CHILD"

expected="# event histogram
#
# trigger info: hist:keys=fd,count:vals=hitcount,count:sort=hitcount:size=2048 if $MINE [active]
#

{ fd:          1, count:          7 } hitcount:          2  count:         14
{ fd:          1, count:          5 } hitcount:          3  count:         15

Totals:
    Hits: 5
    Entries: 2
    Dropped: 0"
expect_eq "hist shows the child's writes exactly" "$expected" "$(cat "$EV/hist")"

expect_eq "hist.json holds the same table" \
  '[{"keys": {"count": 7, "fd": 1}, "values": {"count": 14, "hitcount": 2}}, {"keys": {"count": 5, "fd": 1}, "values": {"count": 15, "hitcount": 3}}] 5' \
  "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["tables"][0]; print(json.dumps(t["entries"], sort_keys=True), t["totals"]["hits"])' "$EV/hist.json")"

expect_eq "histctl watch shows values, their change and rate per refresh, in columns; then what changed" \
'keys count delta rate/s hitcount delta rate/s
{"count":5,"fd":1} 15 +15 - 3 +3 -
no entry changed (2 entries)' \
  "$("${HISTCTL[@]}" watch syscalls:sys_enter_write --interval 0.1 --count 2 |
    grep -F -e '{"count":5,"fd":1}' -e 'keys ' -e 'no entry changed' | tr -s ' ')"

# A bad command: EINVAL to the writer, a caret in error_log, nothing changed.
if echo 'hist:keys=fd,nosuchfield' >> "$EV/trigger" 2>"$WORK/err"; then
  expect_eq "bad command is refused" "refused" "accepted"
else
  expect_eq "writer sees EINVAL" "1" "$(grep -c 'Invalid argument' "$WORK/err")"
fi
expect_eq "error_log has the caret under the field" \
"hist:syscalls:sys_enter_write: error: Couldn't find field
  Command: hist:keys=fd,nosuchfield
                        ^" "$(sed 's/^\[ *[0-9.]*\] //' "$MNT/error_log")"
expect_eq "hist unchanged, with the error below, until the next command" "$expected

ERROR: Couldn't find field
  Last command: hist:keys=fd,nosuchfield" "$(cat "$EV/hist")"

# '!' with the printed line removes the trigger.
echo "!hist:keys=fd,count:vals=hitcount,count:sort=hitcount:size=2048 if $MINE" >> "$EV/trigger"
expect_eq "removed" "" "$(cat "$EV/hist")"

# '>' removes every trigger before adding the new one.
echo 'hist:keys=fd if common_pid == 1' >> "$EV/trigger"
echo 'hist:keys=count if common_pid == 1' >> "$EV/trigger"
echo 'hist:keys=common_pid if common_pid == 1' > "$EV/trigger"
expect_eq "truncating write leaves one trigger" \
  "hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 if common_pid == 1 [active]" "$(cat "$EV/trigger")"

# The tree looks like tracefs.
expect_eq "format file is the kernel's" "$(cat /sys/kernel/tracing/events/syscalls/sys_enter_write/format)" \
  "$(cat "$EV/format")"
expect_eq "available_events lists the event" "1" "$(grep -cx 'syscalls:sys_enter_write' "$MNT/available_events")"

# histctl drives the same engine through the control socket.
"${HISTCTL[@]}" add syscalls:sys_enter_write 'hist:keys=fd:vals=count if common_pid == 1'
expect_eq "histctl list shows both triggers" \
"syscalls:sys_enter_write hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 if common_pid == 1 [active]
syscalls:sys_enter_write hist:keys=fd:vals=hitcount,count:sort=hitcount:size=2048 if common_pid == 1 [active]" \
  "$("${HISTCTL[@]}" list)"
expect_eq "histctl show equals the hist file" "$(cat "$EV/hist")" "$("${HISTCTL[@]}" show syscalls:sys_enter_write)"
expect_eq "histctl show --json equals hist.json" "$(cat "$EV/hist.json")" "$("${HISTCTL[@]}" show --json syscalls:sys_enter_write)"
if "${HISTCTL[@]}" add syscalls:sys_enter_write 'hist:keys=fd:sort=bogus' 2>"$WORK/err"; then
  expect_eq "histctl refuses a bad sort key" "refused" "accepted"
else
  expect_eq "histctl prints the caret" \
"error: Sort field must be a key or a val
  hist:keys=fd:sort=bogus
                    ^" "$(cat "$WORK/err")"
fi
"${HISTCTL[@]}" remove syscalls:sys_enter_write 'hist:keys=fd:vals=count if common_pid == 1'
expect_eq "histctl remove" "1" "$("${HISTCTL[@]}" list | wc -l)"

# SIGTERM detaches everything and unmounts.
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
expect_eq "unmounted on SIGTERM" "no" "$(mountpoint -q "$MNT" && echo yes || echo no)"
finish
