#!/usr/bin/env bash
# Fault: an event that appears and disappears while histd runs (a kprobe or
# uprobe event made through tracefs). histd finds it by name, serves its
# format, refuses a hist trigger on it with the reason (the kernel runs only
# kprobe-type programs there), and stops serving it once it is deleted;
# nothing else is disturbed. See docs/reliability.md for why a trigger on
# such an event cannot exist when it goes.
source "$(dirname "$0")/lib.sh"

T=/sys/kernel/tracing
[ -d "$T/events" ] || mount -t tracefs nodev "$T"
NAME=histd_fault_$$
if [ -w "$T/kprobe_events" ]; then
  PROBES=$T/kprobe_events GROUP=kprobes DEF="p:$NAME do_sys_openat2"
elif [ -w "$T/uprobe_events" ]; then
  # The entry point of a binary; its text segment maps at its file offset.
  BIN=$(readlink -f /usr/bin/true)
  ENTRY=$(readelf -h "$BIN" | awk '/Entry point/ {print $4}')
  PROBES=$T/uprobe_events GROUP=uprobes DEF="p:$NAME $BIN:$ENTRY"
else
  echo "FAIL: this kernel has neither kprobe_events nor uprobe_events"; exit 1
fi
test_cleanup() { echo "-:$GROUP/$NAME" >>"$PROBES" 2>/dev/null || true; }
HISTCTL=("$HISTCTL_BIN" --socket "$WORK/histd.sock")

histd_start
counted_writes
writes 2

echo "$DEF" >>"$PROBES"
P=$MNT/events/$GROUP/$NAME
expect_eq "an event made after start is served by name" "$(cat "$T/events/$GROUP/$NAME/format")" "$(cat "$P/format")"
expect_eq "with its id" "$(cat "$T/events/$GROUP/$NAME/id")" "$(cat "$P/id")"
expect_eq "its system lists it" "1" "$(ls "$MNT/events/$GROUP" | grep -cx "$NAME")"
expect_eq "available_events lists it once seen" "1" "$(grep -cx "$GROUP:$NAME" "$MNT/available_events")"

: >"$MNT/error_log"
err=$( (echo 'hist:keys=common_pid' >"$P/trigger") 2>&1 || true)
expect_eq "a hist trigger on it is refused: EINVAL" "1" "$(grep -c 'Invalid argument' <<<"$err")"
expect_eq "with the reason in error_log" "1" \
  "$(grep -c "error: command failed: $GROUP:$NAME is a kprobe or uprobe event: the kernel runs only kprobe programs" "$MNT/error_log")"
expect_eq "its trigger file is unchanged" "$(printf '# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist')" "$(cat "$P/trigger")"
rc=0; out=$("${HISTCTL[@]}" add "$GROUP:$NAME" 'hist:keys=common_pid' 2>&1) || rc=$?
expect_eq "histctl: refused with the reason" "1:1" "$rc:$(grep -c 'is a kprobe or uprobe event' <<<"$out")"
expect_eq "nothing is attached to it: the kernel deletes it" "0" \
  "$( (echo "-:$GROUP/$NAME" >>"$PROBES") 2>&1 | grep -c . )"

expect_eq "a deleted event is no longer served" "no" "$([ -e "$P/format" ] && echo yes || echo no)"
expect_eq "nor listed" "0" "$(ls "$MNT/events/$GROUP" 2>/dev/null | grep -cx "$NAME")"
rc=0; out=$("${HISTCTL[@]}" add "$GROUP:$NAME" 'hist:keys=common_pid' 2>&1) || rc=$?
expect_eq "histctl: no such event" "1:1" "$rc:$(grep -c "no event $GROUP:$NAME" <<<"$out")"
writes 3
expect_eq "histd is alive and other triggers count on" "5" "$(hits)"

# Made again under the same name: served again.
echo "$DEF" >>"$PROBES"
expect_eq "an event made again is served again" "$(cat "$T/events/$GROUP/$NAME/format")" "$(cat "$P/format")"
test_cleanup
expect_eq "and goes again" "no" "$([ -e "$P/format" ] && echo yes || echo no)"
kill -0 "$HISTD_PID" && echo "ok: histd still running"
finish
