#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fault: the tracefs histd reads formats from is unmounted while triggers
# exist. A private tracefs mount (--tracefs) keeps the system's own alone.
# Triggers keep counting and can be read and removed; formats already read
# are still served; a command needing a format not read yet is refused with
# the reason; histd keeps running.
source "$(dirname "$0")/lib.sh"

TFS=$WORK/tracefs
mkdir -p "$TFS"
mount -t tracefs nodev "$TFS"
test_cleanup() { if mountpoint -q "$TFS"; then umount "$TFS"; fi; }
HISTCTL=("$HISTCTL_BIN" --socket "$WORK/histd.sock")

histd_start --tracefs "$TFS"
counted_writes
writes 2
expect_eq "counting with formats from the private tracefs" "2" "$(hits)"
format=$(cat "$TFS/events/syscalls/sys_enter_write/format")

umount "$TFS"
expect_eq "the private tracefs is gone" "no" "$([ -d "$TFS/events" ] && echo yes || echo no)"
writes 3
expect_eq "the trigger keeps counting" "5" "$(hits)"
expect_eq "a format read before is still served" "$format" "$(cat "$W/format")"
expect_eq "the tree still lists the events it had" "1" "$(ls "$MNT/events/syscalls" | grep -cx sys_enter_read)"

: >"$MNT/error_log"
R=$MNT/events/syscalls/sys_enter_read
err=$( (echo 'hist:keys=common_pid' >"$R/trigger") 2>&1 || true)
expect_eq "a trigger needing an unread format is refused: ENOENT" "1" "$(grep -c 'No such file or directory' <<<"$err")"
expect_eq "error_log says tracefs is gone" "1" \
  "$(grep -c "error: command failed: cannot read the format of syscalls:sys_enter_read: tracefs is no longer mounted at $TFS" "$MNT/error_log")"
rc=0; out=$("${HISTCTL[@]}" add syscalls:sys_enter_read 'hist:keys=common_pid' 2>&1) || rc=$?
expect_eq "histctl: refused with the reason" "1:1" "$rc:$(grep -c 'tracefs is no longer mounted' <<<"$out")"

# Still a working daemon: a second trigger on the event whose format it has,
# then both removed.
echo "hist:keys=common_pid:vals=hitcount if count == $SIZE" >>"$W/trigger"
expect_eq "a trigger on an event read before still applies" "2" "$(grep -c '^hist:' "$W/trigger")"
writes 1
expect_eq "and counts" "6" "$(hits)"
: >"$W/trigger"
expect_eq "every trigger removed" "$(printf '# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist')" "$(cat "$W/trigger")"
expect_eq "histd still answers" "" "$("${HISTCTL[@]}" list)"
finish
