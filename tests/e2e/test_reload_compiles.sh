#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A reload compiles each program once, at its end. With one
# program an event (--triggers-per-program 0), 8 declarations of
# shapes of their own on one event are 1 compile; the program used to be
# compiled again with every trigger it gained (8 compiles, 7 thrown away).
# What only the compile finds (here: the 20th to 22nd trigger pass the 64
# maps of one program, beside the tree's own: control, ring, lost records,
# set_event_pid's list) is found at the end, and still reported at the
# declaration's file and line while the rest applies.
source "$(dirname "$0")/lib.sh"
CONF=$WORK/triggers.d
mkdir -p "$CONF"
histd_start --triggers-per-program 0
ctl() { "$HISTCTL_BIN" --socket "$WORK/histd.sock" "$@"; }
compiles() { ctl status --json |
  python3 -c "import json,sys; c=json.load(sys.stdin)['compiler']; print(c['compiles_served'] + c['clang_compiles'])"; }
declare_upto() { for k in $(seq 2 "$1"); do echo "syscalls:sys_enter_getppid hist:keys=common_pid.buckets=$k"; done; }
G=$MNT/events/syscalls/sys_enter_getppid
listed() { grep -c '^hist:keys=common_pid.buckets=' "$G/trigger" || true; }
counting() { python3 -c 'import os; [os.getppid() for _ in range(5)]'; grep -cE '^    Hits: [1-9]' "$G/hist" || true; }

before=$(compiles)
declare_upto 9 >"$CONF/many.conf"
ctl reload >"$WORK/reload.out" 2>&1
expect_eq "the reload applies the 8 declarations" "8" "$(listed)"
expect_eq "their program compiled once" "$((before + 1))" "$(compiles)"
expect_eq "and all 8 count" "8" "$(counting)"

declare_upto 23 >"$CONF/many.conf"
rc=0; ctl reload >"$WORK/reload.out" 2>&1 || rc=$?
expect_eq "22 declared, 3 too many for one program: the reload says so" "1" "$rc"
expect_eq "each at its file and line" "$CONF/many.conf:20: error $CONF/many.conf:21: error $CONF/many.conf:22: error" \
  "$(grep -o "^$CONF/many.conf:[0-9]*: error" "$WORK/reload.out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "with the reason" "3" "$(grep -c 'would use [0-9]* maps (at most 64 per program)' "$WORK/reload.out")"
expect_eq "and the 19 that fit count" "19 19" "$(listed) $(counting)"
finish
