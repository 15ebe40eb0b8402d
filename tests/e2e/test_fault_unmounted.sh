#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fault: the tree is unmounted under histd (umount -l, as an admin or a
# cleanup script might). The FUSE session ends; histd says why and exits
# with a failure status (systemd's Restart=on-failure brings it back), its
# triggers saved and its tables pinned, so a new histd carries on counting.
source "$(dirname "$0")/lib.sh"
HISTCTL=("$HISTCTL_BIN" --socket "$WORK/histd.sock")

histd_start
counted_writes
writes 2
expect_eq "counting before" "2" "$(hits)"
triggers=$(cat "$W/trigger")

umount -l "$MNT"
rc=
for _ in $(seq 100); do
  if ! kill -0 "$HISTD_PID" 2>/dev/null; then rc=0; wait "$HISTD_PID" || rc=$?; break; fi
  sleep 0.1
done
expect_eq "histd exits by itself, with a failure status" "1" "${rc:-still running}"
expect_eq "saying why" "1" \
  "$(grep -c "^histd: the tree at $MNT was unmounted under histd (the FUSE session ended): exiting" "$WORK/histd.log")"
expect_eq "its socket is gone" "no" "$([ -e "$WORK/histd.sock" ] && echo yes || echo no)"
expect_eq "its tables stay pinned" "2" "$(ls "$PIN" | grep -c -e '_table$' -e '_stats$')"
expect_eq "its triggers are in the state file" "1" "$(grep -c "count == $SIZE" "$WORK/state/triggers.json")"

# What systemd would do next: start it again.
histd_start
expect_eq "a new histd restores the trigger" "$triggers" "$(cat "$W/trigger")"
expect_eq "with its counts" "2" "$(hits)"
writes 1
expect_eq "and counts on" "3" "$(hits)"
expect_eq "histctl works" "syscalls:sys_enter_write $triggers" "$("${HISTCTL[@]}" list)"

# A plain SIGTERM is a clean stop: status 0, no fault reported.
kill -TERM "$HISTD_PID"
rc=0; wait "$HISTD_PID" || rc=$?
HISTD_PID=
expect_eq "SIGTERM: exit status 0" "0" "$rc"
expect_eq "and no unmount reported" "1" "$(grep -c 'was unmounted under histd' "$WORK/histd.log")"
finish
