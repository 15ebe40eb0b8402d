#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Blocked trace_pipe readers hold no FUSE worker: with 8, then 32 readers
# waiting for lines, other files, listings and trigger writes answer within
# a second; a line written reaches one reader; each reader ends at once on
# SIGINT, SIGTERM or SIGKILL; SIGTERM to histd exits within 2 s, ends every
# reader and leaves no mount. (Before: 8 readers took every worker, the tree
# hung, the readers could not be killed and SIGTERM was ignored.)
source "$(dirname "$0")/lib.sh"
READERS=()
test_cleanup() { for r in "${READERS[@]}"; do kill -KILL "$r" 2>/dev/null || true; done; }
histd_start
W=$MNT/events/syscalls/sys_enter_write
echo 'hist:keys=common_pid if common_pid == 1' >"$W/trigger"

# start_readers N: N readers blocked on trace_pipe. SIGINT is set back to
# its default: a background job of a script ignores it.
start_readers() {
  for _ in $(seq "$1"); do
    perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' cat "$MNT/trace_pipe" >>"$WORK/lines" 2>>"$WORK/reader_errors" &
    READERS+=($!)
    disown $!  # not waited for: their kill -9 is not reported
  done
  sleep 1  # let every read reach histd
}
alive() { local n=0; for r in "${READERS[@]}"; do kill -0 "$r" 2>/dev/null && n=$((n + 1)); done; echo "$n"; }
# answers CMD...: whether CMD completes within a second.
answers() { timeout 1 "$@" >/dev/null 2>&1 && echo yes || echo no; }
# gone PID: whether PID ends within a second.
gone() {
  for _ in $(seq 20); do kill -0 "$1" 2>/dev/null || { echo yes; return; }; sleep 0.05; done
  echo no
}

the_tree_answers() {  # $1: how many readers wait
  expect_eq "$1 readers: README answers" "yes" "$(answers cat "$MNT/README")"
  expect_eq "$1 readers: a hist file answers" "yes" "$(answers cat "$W/hist")"
  expect_eq "$1 readers: a listing answers" "yes" "$(answers ls "$MNT/events/syscalls")"
  expect_eq "$1 readers: a trigger write answers" "yes" \
    "$(answers bash -c "echo 'hist:keys=common_pid:pause if common_pid == 1' >> '$W/trigger'")"
  expect_eq "$1 readers: and another" "yes" \
    "$(answers bash -c "echo 'hist:keys=common_pid:cont if common_pid == 1' >> '$W/trigger'")"
  expect_eq "$1 readers: a non-blocking read of trace_pipe answers EAGAIN" "yes" \
    "$(timeout 5 python3 -c "
import os, errno
fd = os.open('$MNT/trace_pipe', os.O_RDONLY | os.O_NONBLOCK)
try:
    os.read(fd, 4096)
except BlockingIOError:
    print('yes')" 2>/dev/null)"
}

start_readers 8
expect_eq "8 readers wait" "8" "$(alive)"
the_tree_answers 8
# Bounded: a hung tree (the fault) must fail the test, not hang it.
mark() { timeout 1 bash -c "echo '$1' > '$MNT/trace_marker'" 2>/dev/null || true; }
mark "one line"
for _ in $(seq 20); do [ -s "$WORK/lines" ] && break; sleep 0.05; done
expect_eq "a line written reaches exactly one reader" "1" "$(grep -c 'tracing_mark_write: one line' "$WORK/lines" || true)"
kill -INT "${READERS[0]}"
expect_eq "a reader ends at once on SIGINT (Ctrl-C)" "yes" "$(gone "${READERS[0]}")"
kill -TERM "${READERS[1]}"
expect_eq "on SIGTERM" "yes" "$(gone "${READERS[1]}")"
kill -KILL "${READERS[2]}"
expect_eq "on SIGKILL" "yes" "$(gone "${READERS[2]}")"
expect_eq "the other readers still wait" "5" "$(alive)"

start_readers 27
expect_eq "32 readers wait" "32" "$(alive)"
the_tree_answers 32
mark "second line"
for _ in $(seq 20); do grep -q 'second line' "$WORK/lines" && break; sleep 0.05; done
expect_eq "a line still reaches one reader" "1" "$(grep -c 'tracing_mark_write: second line' "$WORK/lines" || true)"

kill -TERM "$HISTD_PID"
stopped=no
for _ in $(seq 40); do kill -0 "$HISTD_PID" 2>/dev/null || { stopped=yes; break; }; sleep 0.05; done
expect_eq "SIGTERM stops histd within 2 s with 32 readers waiting" "yes" "$stopped"
expect_eq "its exit status is 0" "0" "$(if [ "$stopped" = yes ]; then wait "$HISTD_PID"; echo $?; else echo running; fi)"
expect_eq "no mount is left" "no" "$(timeout 1 mountpoint -q "$MNT" && echo yes || echo no)"
for _ in $(seq 20); do [ "$(alive)" = 0 ] && break; sleep 0.1; done
expect_eq "every reader ended (end of file)" "0" "$(alive)"
expect_eq "no reader saw an error" "" "$(cat "$WORK/reader_errors")"
# A histd that ignored SIGTERM (the fault) is killed here: cleanup would
# wait on its hung tree.
if [ "$stopped" = yes ]; then HISTD_PID=; else kill -KILL "$HISTD_PID"; fi
finish
