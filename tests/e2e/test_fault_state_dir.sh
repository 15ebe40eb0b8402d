#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fault: the state directory is full, or read-only. A change that could not
# be saved would silently vanish at the next start, so it is refused
# (ENOSPC, EROFS) before anything changes, with an error_log entry; once
# there is room again, the same command applies.
source "$(dirname "$0")/lib.sh"
HISTCTL=("$HISTCTL_BIN" --socket "$WORK/histd.sock")

STATE=$WORK/state
mkdir -p "$STATE"
mount -t tmpfs -o size=256k,mode=0700 histd-test-state "$STATE"
test_cleanup() { if mountpoint -q "$STATE"; then umount "$STATE"; fi; }

histd_start
counted_writes
writes 2
triggers=$(cat "$W/trigger")
state=$(cat "$STATE/triggers.json")

# Full: fill what is left.
dd if=/dev/zero of="$STATE/filler" bs=4k status=none 2>/dev/null || true
expect_eq "the state directory is full" "0" "$(df --output=avail -k "$STATE" | tail -1 | tr -d ' ')"
: >"$MNT/error_log"
B="hist:keys=common_pid:vals=hitcount if count == $SIZE"
err=$( (echo "$B" >>"$W/trigger") 2>&1 || true)
expect_eq "full: the writer gets ENOSPC" "1" "$(grep -c 'No space left on device' <<<"$err")"
expect_eq "full: trigger file unchanged" "$triggers" "$(cat "$W/trigger")"
expect_eq "full: state file unchanged" "$state" "$(cat "$STATE/triggers.json")"
expect_eq "full: error_log says so" "1" \
  "$(grep -c "error: command failed: cannot save triggers in $STATE: No space left on device" "$MNT/error_log")"
expect_eq "full: no temporary file left behind" "no" "$([ -e "$STATE/triggers.json.tmp" ] && echo yes || echo no)"
rc=0; out=$("${HISTCTL[@]}" add syscalls:sys_enter_write "$B" 2>&1) || rc=$?
expect_eq "full: histctl refused with the reason" "1:1" "$rc:$(grep -c 'No space left on device' <<<"$out")"
err=$( (: >"$W/trigger") 2>&1 || true)
expect_eq "full: removing every trigger is refused too" "1" "$(grep -c 'No space left on device' <<<"$err")"
expect_eq "full: and changes nothing" "$triggers" "$(cat "$W/trigger")"
writes 1
expect_eq "full: the trigger keeps counting" "3" "$(hits)"

rm "$STATE/filler"
echo "$B" >>"$W/trigger"
expect_eq "room again: the command applies" "2" "$(grep -c '^hist:' "$W/trigger")"
expect_eq "room again: and is saved" "1" "$(grep -c 'keys=common_pid' "$STATE/triggers.json")"

# Read-only.
state=$(cat "$STATE/triggers.json")
triggers=$(cat "$W/trigger")
mount -o remount,ro "$STATE"
: >"$MNT/error_log"
err=$( (echo "!$B" >>"$W/trigger") 2>&1 || true)
expect_eq "read-only: the writer gets EROFS" "1" "$(grep -c 'Read-only file system' <<<"$err")"
expect_eq "read-only: trigger file unchanged" "$triggers" "$(cat "$W/trigger")"
expect_eq "read-only: error_log says so" "1" \
  "$(grep -c "error: command failed: cannot save triggers in $STATE: Read-only file system" "$MNT/error_log")"
writes 1
expect_eq "read-only: counting goes on" "4" "$(hits)"
mount -o remount,rw "$STATE"
echo "!$B" >>"$W/trigger"
expect_eq "writable again: the removal applies" "1" "$(grep -c '^hist:' "$W/trigger")"
expect_eq "writable again: and is saved" "0" "$(grep -c 'keys=common_pid' "$STATE/triggers.json")"
expect_eq "state file equals what was there before the second trigger" "1" "$(grep -c "count == $SIZE" "$STATE/triggers.json")"

# A histd started on a read-only state directory says so at once.
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
mount -o remount,ro "$STATE"
histd_start
expect_eq "start on a read-only state directory: a warning" "1" \
  "$(grep -c "^histd: the state directory $STATE is not writable (Read-only file system)" "$WORK/histd.log")"
expect_eq "and the saved trigger is restored" "1" "$(grep -c '^hist:' "$W/trigger")"
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
HISTD_PID=
mount -o remount,rw "$STATE"
finish
