#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# One histd per tree. A second histd on the same state
# directory, mount, socket or pin directory exits 1 with the reason and
# changes nothing: the first one's tree, socket and pins stay, and it goes on
# counting. After a kill -9, a new histd cleans up what the dead one left
# (its disconnected mount, its socket) and carries on with its counts.
source "$(dirname "$0")/lib.sh"
HISTCTL=("$HISTCTL_BIN" --socket "$WORK/histd.sock")

histd_start
counted_writes
writes 2
first=$HISTD_PID
pins=$(ls "$PIN")
mounts() { awk -v m="$MNT" '$5 == m' /proc/self/mountinfo | wc -l; }

# second STATE MOUNT SOCKET PIN: a histd on those paths; prints its exit
# status and what it said. A histd that starts anyway is stopped after 15 s
# (exit 124).
second() {
  local rc=0
  timeout 15 "$HISTD_BIN" --foreground --state-dir "$1" --mount "$2" --socket "$3" --pin-dir "$4" \
    >"$WORK/second.log" 2>&1 || rc=$?
  echo "$rc $(grep '^histd: another\|^histd: --' "$WORK/second.log")"
}
# The first histd is intact: one mount, its socket, its pins, counting.
intact() {
  expect_eq "$1: one mount at the tree" "1" "$(mounts)"
  expect_eq "$1: the tree answers" "1" "$(grep -c '^hist:' "$W/trigger")"
  expect_eq "$1: the socket answers" "0" "$("${HISTCTL[@]}" list >/dev/null 2>&1; echo $?)"
  expect_eq "$1: the pins are there" "$pins" "$(ls "$PIN")"
  local before; before=$(hits)
  writes 1
  expect_eq "$1: the trigger counts" "$((before + 1))" "$(hits)"
}

expect_eq "same paths: refused" "1 histd: another histd (pid $first) holds $WORK/state" \
  "$(second "$WORK/state" "$MNT" "$WORK/histd.sock" "$PIN")"
intact "after a second histd on the same paths"

mkdir -p "$WORK/mnt2"
expect_eq "another state directory, the same mount: refused" \
  "1 histd: another histd serves $MNT (its tree is mounted there)" \
  "$(second "$WORK/state2" "$MNT" "$WORK/s2.sock" "$PIN-2")"
intact "after a second histd on the same mount"
expect_eq "another state directory, the same socket: refused" \
  "1 histd: another histd (pid $first) listens on $WORK/histd.sock" \
  "$(second "$WORK/state3" "$WORK/mnt2" "$WORK/histd.sock" "$PIN-3")"
intact "after a second histd on the same socket"
expect_eq "another state directory, the same pin directory: refused" \
  "1 histd: another histd (pid $first) holds $PIN" \
  "$(second "$WORK/state4" "$WORK/mnt2" "$WORK/s4.sock" "$PIN")"
intact "after a second histd on the same pin directory"
expect_eq "nothing was mounted at the second mount point" "no" "$(mountpoint -q "$WORK/mnt2" && echo yes || echo no)"
expect_eq "no socket of a second histd" "no" "$(ls "$WORK"/s?.sock >/dev/null 2>&1 && echo yes || echo no)"
rm -rf "$PIN-2" "$PIN-3" "$PIN-4"

# A dead histd: its tree is disconnected, its socket stale; the next histd
# on the same paths starts, detaches the old tree, replaces the socket and
# adopts the pinned table.
counted=$(hits)
kill -KILL "$first"
wait "$first" 2>/dev/null || true
expect_eq "the dead histd's tree is disconnected" "Transport endpoint is not connected" \
  "$(stat "$MNT" 2>&1 | sed -n 's/.*: //p')"
expect_eq "its socket is stale" "yes" "$([ -S "$WORK/histd.sock" ] && echo yes)"
histd_start
expect_eq "after kill -9: a new histd started on the same paths" "yes" "$(kill -0 "$HISTD_PID" && echo yes)"
expect_eq "after kill -9: one mount (the dead one detached)" "1" "$(mounts)"
expect_eq "after kill -9: the socket answers" "0" "$("${HISTCTL[@]}" list >/dev/null 2>&1; echo $?)"
writes 1
expect_eq "after kill -9: counting goes on from the dead histd's count" "$((counted + 1))" "$(hits)"
finish
