#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# SIGHUP is the unit's ExecReload= (`systemctl reload histd`): it must leave
# histd serving its tree, with its triggers and counts. libfuse's handlers
# made it end histd as SIGTERM does.
source "$(dirname "$0")/lib.sh"
histd_start
counted_writes
writes 3
kill -HUP "$HISTD_PID"
sleep 0.5
expect_eq "histd is still running after SIGHUP" "yes" "$(kill -0 "$HISTD_PID" 2>/dev/null && echo yes || echo no)"
expect_eq "its tree is still mounted" "yes" "$(mountpoint -q "$MNT" && echo yes || echo no)"
writes 2
expect_eq "and counts on, nothing lost" "5" "$(hits)"
expect_eq "histctl still answers" "1" \
  "$("$HISTCTL_BIN" --socket "$WORK/histd.sock" list | grep -c "hist:keys=count:vals=hitcount" || true)"
kill -TERM "$HISTD_PID"
rc=0; wait "$HISTD_PID" || rc=$?
expect_eq "SIGTERM still stops it, exit 0" "0" "$rc"
finish
