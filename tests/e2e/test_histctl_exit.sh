#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# histctl's exit status: what `histctl --help` and
# docs/histctl.md document (test_docs.sh holds them equal) is what histctl
# does: 0 success, 1 refused, 2 unreachable or wrong arguments, 3 denied.
# Wrong arguments used to exit with CLI11's own codes (106, 109, ...).
source "$(dirname "$0")/lib.sh"
histd_start
export HISTD_SOCKET=$WORK/histd.sock
FORMAT=$(dirname "$0")/../unit/fixtures/tracefs/events/syscalls/sys_enter_write/format

# rc COMMAND...: the exit status of histctl with these arguments.
rc() { local r=0; "$HISTCTL_BIN" "$@" >/dev/null 2>&1 || r=$?; echo "$r"; }

expect_eq "--help: 0" "0" "$(rc --help)"
expect_eq "--help ends with the exit status table" "Exit status:" \
  "$("$HISTCTL_BIN" --help | grep -m1 '^Exit status:')"
expect_eq "a command that succeeds: 0" "0" "$(rc list)"
expect_eq "a command histd refuses: 1" "1" "$(rc add syscalls:sys_enter_write 'hist:keys=fd:sort=bogus')"
expect_eq "removing a trigger that is not there: 1" "1" "$(rc remove syscalls:sys_enter_write 'hist:keys=fd')"
expect_eq "check: a command that does not compile: 1" "1" "$(rc check 'hist:keys=bogus' --format "$FORMAT")"
expect_eq "check: a command that compiles: 0" "0" "$(rc check 'hist:keys=fd' --format "$FORMAT")"
expect_eq "explain: an event histd runs no program on: 1" "1" "$(rc explain syscalls:sys_enter_write)"
expect_eq "explain: an event histd does not have: 1" "1" "$(rc explain syscalls:sys_enter_bogus)"
"$HISTCTL_BIN" add syscalls:sys_enter_write 'hist:keys=fd' >/dev/null
expect_eq "explain: the program histd runs: 0" "0" "$(rc explain syscalls:sys_enter_write)"
expect_eq "explain: the trigger's plan first" "trigger: hist:keys=fd:vals=hitcount:sort=hitcount:size=2048" \
  "$("$HISTCTL_BIN" explain syscalls:sys_enter_write | head -1)"
# A plain trigger runs in the event's chain, after the event program.
expect_eq "explain: the program is the one histd loaded" "/* histd: chain slot 1 */ tbl0" \
  "$("$HISTCTL_BIN" explain syscalls:sys_enter_write | grep -o -e '^/\* histd: chain slot 1 \*/' -e '^} tbl0' |
    sed 's/^} //' | tr '\n' ' ' | sed 's/ $//')"
expect_eq "explain: --raw-syscalls without a command: 2" "2" "$(rc explain syscalls:sys_enter_write --raw-syscalls)"
expect_eq "explain: histd not there: 2" "2" "$(rc --socket "$WORK/none.sock" explain syscalls:sys_enter_write)"
"$HISTCTL_BIN" remove syscalls:sys_enter_write 'hist:keys=fd' >/dev/null

# explain of a command that needs what histd has (another event's variable,
# a synthetic event) asks histd, which builds it with them and changes
# nothing; what it refuses is a refusal (1) with the kernel's words.
: >"$MNT/error_log"
echo 'wakeup_lat int pid; u64 lat' >"$MNT/synthetic_events"
"$HISTCTL_BIN" add sched:sched_waking 'hist:keys=pid:ts0=common_timestamp.usecs' >/dev/null
SWITCH='hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_lat(next_pid,$lat)'
rc=0; "$HISTCTL_BIN" explain sched:sched_switch "$SWITCH" >"$WORK/preview" 2>"$WORK/preview.err" || rc=$?
expect_eq "explain through histd: 0" "0" "$rc"
expect_eq "explain through histd: the command's plan first" \
  "trigger: hist:keys=next_pid:vals=hitcount:lat=common_timestamp.usecs-\$ts0:sort=hitcount:size=2048:clock=global:onmatch(sched.sched_waking).wakeup_lat(next_pid,\$lat)" \
  "$(head -1 "$WORK/preview")"
expect_eq "explain through histd: nothing on stderr" "" "$(cat "$WORK/preview.err")"
expect_eq "explain through histd: the trigger is not added" "0" \
  "$(grep -c '^hist:' "$MNT/events/sched/sched_switch/trigger")"
expect_eq "explain through histd: nothing logged" "" "$(cat "$MNT/error_log")"
rc=0; err=$("$HISTCTL_BIN" explain sched:sched_switch 'hist:keys=next_pid:lat=common_timestamp.usecs-$nope' 2>&1) ||
  rc=$?
expect_eq "explain through histd of a variable nobody has: 1" "1" "$rc"
expect_eq "with the kernel's words and caret" "error: Couldn't find variable|  hist:keys=next_pid:lat=common_timestamp.usecs-\$nope|                                                ^" \
  "$(tr '\n' '|' <<<"$err" | sed 's/|$//')"
expect_eq "and nothing logged" "" "$(cat "$MNT/error_log")"
# Once added, histd runs the program explain showed (but the slots' values
# it is loaded with, said in its last line).
"$HISTCTL_BIN" add sched:sched_switch "$SWITCH" >/dev/null
expect_eq "explain through histd showed the program histd then runs" "" \
  "$(diff <("$HISTCTL_BIN" explain sched:sched_switch | grep -v '^/\* histd: histd_k') "$WORK/preview")"
# A synthetic event's format is histd's (the kernel's tracefs has none):
# histd explains a command on it; an event neither has is a bad argument.
rc=0; "$HISTCTL_BIN" explain synthetic:wakeup_lat 'hist:keys=lat.log2' >"$WORK/synth" 2>"$WORK/synth.err" || rc=$?
expect_eq "explain of a synthetic event's command: 0" "0" "$rc"
expect_eq "its plan first, nothing on stderr" "trigger: hist:keys=lat.log2:vals=hitcount:sort=hitcount:size=2048|" \
  "$(head -1 "$WORK/synth" | tr '\n' '|')$(cat "$WORK/synth.err")"
expect_eq "its key read from the synthetic record" "1" "$(grep -c '^key 0: lat.log2 <- record offset 16 size 8' "$WORK/synth")"
expect_eq "and it is not added" "0" "$(grep -c '^hist:' "$MNT/events/synthetic/wakeup_lat/trigger")"
rc=0; err=$("$HISTCTL_BIN" explain synthetic:wakeup_lat 'hist:keys=nope' 2>&1) || rc=$?
expect_eq "a synthetic event's command histd refuses: 1, the kernel's words" "1 error: Couldn't find field" \
  "$rc $(head -1 <<<"$err")"
expect_eq "a synthetic event nobody has: 2" "2" "$(rc explain synthetic:nope 'hist:keys=lat')"
expect_eq "an event nobody has: 2" "2" "$(rc explain sched:nope 'hist:keys=lat')"
"$HISTCTL_BIN" remove sched:sched_switch "$SWITCH" >/dev/null
"$HISTCTL_BIN" remove sched:sched_waking 'hist:keys=pid:ts0=common_timestamp.usecs' >/dev/null
expect_eq "no command: 2" "2" "$(rc)"
expect_eq "an unknown command: 2" "2" "$(rc bogus)"
expect_eq "an unknown option: 2" "2" "$(rc list --bogus)"
expect_eq "a missing argument: 2" "2" "$(rc add syscalls:sys_enter_write)"
expect_eq "an option without its value: 2" "2" "$(rc watch syscalls:sys_enter_write --interval)"
expect_eq "a bad value: 2" "2" "$(rc watch syscalls:sys_enter_write --interval -1)"
expect_eq "not SYSTEM:EVENT: 2" "2" "$(rc explain sys_enter_write 'hist:keys=fd')"
expect_eq "check: a format file that cannot be read: 2" "2" "$(rc check 'hist:keys=fd' --format "$WORK/none")"
expect_eq "histd not there: 2" "2" "$(rc --socket "$WORK/none.sock" list)"
# A copy another user can run; the socket is root's alone (0600).
chmod 755 "$WORK"
cp "$HISTCTL_BIN" "$WORK/histctl"; chmod 755 "$WORK/histctl"
expect_eq "the caller may not use the socket: 3" "3" \
  "$(r=0; setpriv --reuid=65534 --regid=65534 --clear-groups "$WORK/histctl" list >/dev/null 2>&1 || r=$?; echo "$r")"
# An offline explain by a user tracefs is closed to (root's, 0700, unless
# mounted with gid=) says so, and what to do.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
r=0; out=$(as_nobody "$WORK/histctl" explain syscalls:sys_enter_write 'hist:keys=fd' 2>&1 >/dev/null) || r=$?
if as_nobody test -x /sys/kernel/tracing; then
  expect_eq "explain by a user tracefs is open to: 0" "0" "$r"
else
  expect_eq "explain by a user tracefs is closed to: 2" "2" "$r"
  expect_eq "it says the tracefs is closed to the user, and what to do" \
    "histctl: no tracefs for this user: /sys/kernel/tracing is closed to it (tracefs is root's unless mounted with gid=); run as root, or give --tracefs a directory holding a readable copy of its events/" \
    "$out"
fi
finish
