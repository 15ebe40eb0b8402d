#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Triggers on one event run in a chain of programs, four to a program
# (docs/design/bpf.md, "Program chains"). Through histd: 10 plain triggers
# (three programs) and 6 with a variable (the event program's four, two in
# the chain) each count every call; a kill -9 leaves the whole chain counting
# while histd is down and the next histd takes it over; removals and a clean
# restart keep every count.
source "$(dirname "$0")/lib.sh"
histd_start
E=$MNT/events/syscalls/sys_enter_getppid
# Calls from a process of our own name, counted by comm.
cp /usr/bin/python3 "$WORK/chaincall"
calls() { "$WORK/chaincall" -c "import os
for _ in range($1): os.getppid()"; }
trigger() { echo "hist:keys=common_pid:vals=hitcount if comm == \"chaincall\" && common_pid != $((4000000 + $1))"; }
with_var() { echo "hist:keys=common_pid:v$1=common_pid if comm == \"chaincall\" && common_pid != $((4000000 + $1))"; }
# Every trigger's Hits, one line each, as "N x HITS".
all_hits() { grep -E '^    Hits: ' "$E/hist" | sort | uniq -c | awk '{print $1 " x " $3}' | sort -n | paste -sd' '; }

for i in $(seq 10); do trigger "$i" >>"$E/trigger"; done
for i in $(seq 21 26); do with_var "$i" >>"$E/trigger"; done
calls 100
expect_eq "16 triggers in four programs each count every call" "16 x 100" "$(all_hits)"

kill -KILL "$HISTD_PID"; wait "$HISTD_PID" 2>/dev/null || true
calls 50
histd_start
calls 25
expect_eq "the chain counted while histd was down, and counts on after the restore" "16 x 175" "$(all_hits)"
expect_eq "nothing reported as unrestorable" "0" "$(grep -c 'could not restore' "$WORK/histd.log")"

# The second program's four go (it stays, passing on), and one of the first's.
for i in 2 5 6 7 8; do echo "!$(trigger "$i")" >>"$E/trigger"; done
calls 10
expect_eq "the other eleven count on" "11 x 185" "$(all_hits)"
for i in 11 12; do trigger "$i" >>"$E/trigger"; done
calls 5
expect_eq "new triggers join and count" "2 x 5 11 x 190" "$(all_hits)"

kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start
calls 1
expect_eq "after a clean restart every count goes on" "2 x 6 11 x 191" "$(all_hits)"
: >"$E/trigger"
expect_eq "no trigger, no program left" "0" "$(ls "$PIN" | grep -c '_slots$' || true)"
finish
