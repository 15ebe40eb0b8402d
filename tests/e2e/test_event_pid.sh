#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# set_event_pid and options/event-fork, beside a tracefs instance of this
# machine's kernel given the same writes: the list reads as the kernel's
# (its pids from the lowest), a write adds to it, an O_TRUNC open empties
# it, a bad word refuses the whole write (EINVAL; EPERM for a pid past the
# kernel's list). With a list, an enabled event is recorded only for a
# listed task, by the kernel's instance and by histd, and histd's hist
# triggers see only those events, as the kernel's do (its trace buffer
# gives no record to the triggers of an ignored task's event); sched_switch
# is recorded when either task is listed. With event-fork, what a listed
# task forks is listed while it lives. Both are kept across a restart.
# The pids are the machine's, as BPF sees them: learned from a table
# (shown_pid), never from $!, which in a container is another namespace's.
source "$(dirname "$0")/lib.sh"
T=/sys/kernel/tracing
[ -d "$T/instances" ] || mount -t tracefs nodev "$T"
INST=$T/instances/histd-evpid-$UNIQ
WORKERS=()
test_cleanup() {
  local p
  for p in "${WORKERS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  [ -d "$INST" ] && { echo 0 >"$INST/events/enable"; rmdir "$INST"; }
}
histd_start
mkdir "$INST"
err() { "$@" 2>&1 >/dev/null | sed -n 's/.*: \([A-Z][a-z][^:]*\)$/\1/p' | tail -1; }
# both FILE TEXT [>>]: the same write to the kernel's instance and to histd.
both() {
  if [ "${3:-}" = ">>" ]; then printf '%b' "$2" >>"$INST/$1" && printf '%b' "$2" >>"$MNT/$1"
  else printf '%b' "$2" >"$INST/$1" && printf '%b' "$2" >"$MNT/$1"; fi
}
lines() { tr '\n' ' ' <"$1" | sed 's/ $//'; }

# --- the file ---------------------------------------------------------------
expect_eq "set_event_pid reads as the kernel's: empty" "$(lines "$INST/set_event_pid")." \
  "$(lines "$MNT/set_event_pid")."
for w in '12 7 3' '0x10 010 +5\n' '1\n2\t3 ' '4294967296'; do
  both set_event_pid "$w"
  expect_eq "'$w' reads as the kernel's" "$(lines "$INST/set_event_pid")" "$(lines "$MNT/set_event_pid")"
done
expect_eq "  from the lowest pid" "3 7 12" "$(both set_event_pid '12 7 3' && lines "$MNT/set_event_pid")"
both set_event_pid '5\n' '>>'
expect_eq "an append adds, as the kernel's" "$(lines "$INST/set_event_pid")" "$(lines "$MNT/set_event_pid")"
expect_eq "  3 5 7 12" "3 5 7 12" "$(lines "$MNT/set_event_pid")"
both set_event_pid ' \n' '>>'
expect_eq "a blank append keeps the list" "3 5 7 12" "$(lines "$MNT/set_event_pid")"
for bad in '1 2 x' '-1' '0x' '08' "$(printf '1%.0s' $(seq 128))"; do
  expect_eq "'${bad:0:20}' is refused as the kernel refuses it" \
    "$(err bash -c "printf '%s' '$bad' >>'$INST/set_event_pid'")" "$(err bash -c "printf '%s' '$bad' >>'$MNT/set_event_pid'")"
done
expect_eq "  with EINVAL" "Invalid argument" "$(err bash -c "printf '%s' x >>'$MNT/set_event_pid'")"
expect_eq "a pid past the kernel's list" "Operation not permitted Operation not permitted" \
  "$(err bash -c "echo 1073741824 >>'$INST/set_event_pid'") $(err bash -c "echo 1073741824 >>'$MNT/set_event_pid'")"
expect_eq "  and the list is as it was" "3 5 7 12" "$(lines "$MNT/set_event_pid")"
both set_event_pid '\n'
expect_eq "echo > empties it" "." "$(lines "$INST/set_event_pid").$(lines "$MNT/set_event_pid")"
expect_eq "options/event-fork reads as the kernel's" "$(cat "$INST/options/event-fork")" \
  "$(cat "$MNT/options/event-fork")"
expect_eq "  and its trace_options line" "$(grep -x 'noevent-fork' "$INST/trace_options")" \
  "$(grep -x 'noevent-fork' "$MNT/trace_options")"
both options/event-fork '1\n'
expect_eq "switched on" "event-fork 1" "$(grep -x 'event-fork' "$MNT/trace_options") $(cat "$MNT/options/event-fork")"
both options/event-fork '0\n'

# --- what is recorded ---------------------------------------------------------
# Two workers named KEEP and DROP: each writes HELLO bytes until the test
# has learned its pid from a table, then does what its fifo says: three
# writes of SIZE bytes, a fork of a child (a program named CHILD that
# makes three such writes), or exit; it answers each on its own ack fifo.
KEEP=$(own_comm pidkeep)
DROP=$(own_comm piddrop)
HELLO=$(own_number 1000 500)
SIZE=$(own_number 1600 500)
E=$MNT/events/syscalls/sys_enter_write
shown_pid_on syscalls/sys_enter_write "$KEEP" "$DROP"
worker() {
  local fifo=$WORK/$1.fifo ack=$WORK/$1.ack
  mkfifo "$fifo" "$ack"
  # shellcheck disable=SC2016
  "$(comm_link "$1" bash)" -c '
    until [ -e "$1/learned" ]; do printf "%*s" "$2" x >/dev/null; sleep 0.05; done
    while read -r cmd arg <"$3"; do
      case $cmd in
        write) for _ in 1 2 3; do printf "%*s" "$4" x >/dev/null; done ;;
        fork) "$arg" -c "for _ in 1 2 3; do printf \"%*s\" $4 x >/dev/null; done" ;;
        exit) echo done >"$5"; exit 0 ;;
      esac
      echo done >"$5"
    done' _ "$WORK" "$HELLO" "$fifo" "$SIZE" "$ack" &
  WORKERS+=($!)  # to kill, should the test end early: never to filter on
}
tell() { echo "$2" >"$WORK/$1.fifo"; read -r _ <"$WORK/$1.ack"; }
worker "$KEEP"
worker "$DROP"
for _ in $(seq 100); do
  KEEP_PID=$(shown_pid syscalls/sys_enter_write "$KEEP")
  DROP_PID=$(shown_pid syscalls/sys_enter_write "$DROP")
  [ -n "$KEEP_PID" ] && [ -n "$DROP_PID" ] && break
  sleep 0.1
done
touch "$WORK/learned"
expect_eq "the workers' pids, from a table" "yes" "$([ -n "$KEEP_PID" ] && [ -n "$DROP_PID" ] && echo yes)"
echo "!hist:keys=common_pid.execname if common_comm == \"$KEEP\" || common_comm == \"$DROP\"" >>"$E/trigger"

# Each tree records the writes of SIZE bytes and the switches; histd counts
# the writes by comm too.
for tree in "$INST" "$MNT"; do
  echo "$KEEP_PID" >"$tree/set_event_pid"
  echo "count == $SIZE" >"$tree/events/syscalls/sys_enter_write/filter"
  echo 1 >"$tree/events/syscalls/sys_enter_write/enable"
  echo 1 >"$tree/events/sched/sched_switch/enable"
  : >"$tree/trace"
done
echo "hist:keys=common_comm if count == $SIZE" >>"$E/trigger"
tell "$KEEP" write
tell "$DROP" write
# A tree's trace lines of TASK's writes of SIZE bytes.
comm_writes() { grep "sys_write(fd: 1, .*count: $(printf '0x%x' "$SIZE"))" "$1/trace" | grep -c "^ *$2-" || true; }
expect_eq "the kernel records the listed task's three writes" "3" "$(comm_writes "$INST" "$KEEP")"
expect_eq "  and none of the other's" "0" "$(comm_writes "$INST" "$DROP")"
# A classic tracepoint's program is skipped while another BPF program runs
# on its CPU: a write may be missed, not all.
kept=$(comm_writes "$MNT" "$KEEP")
expect_eq "histd records the listed task's writes" "yes" "$([ "$kept" -ge 1 ] && [ "$kept" -le 3 ] && echo yes || echo "no ($kept)")"
expect_eq "  and none of the other's" "0" "$(comm_writes "$MNT" "$DROP")"
expect_eq "histd's hist trigger sees the listed task's writes only" "yes 0" \
  "$(grep -q "common_comm: $KEEP" "$E/hist" && echo yes) $(grep -c "common_comm: $DROP" "$E/hist" || true)"
switches() { grep 'sched_switch:' "$1/trace" || true; }
expect_eq "the kernel records switches of the listed task" "yes" "$(grep -q "$KEEP" <(switches "$INST") && echo yes)"
expect_eq "histd too" "yes" "$(grep -q "$KEEP" <(switches "$MNT") && echo yes)"
expect_eq "  each from or to it, as the kernel's" "0 0" \
  "$(switches "$INST" | grep -vc "$KEEP" || true) $(switches "$MNT" | grep -vc "$KEEP" || true)"

# --- event-fork -------------------------------------------------------------
# Without it the listed task's child is not listed; with it, it is while
# it lives, and its writes are recorded.
C0=$(own_comm pidchld0)
C1=$(own_comm pidchld1)
tell "$KEEP" "fork $(comm_link "$C0" bash)"
for tree in "$INST" "$MNT"; do echo 1 >"$tree/options/event-fork"; done
tell "$KEEP" "fork $(comm_link "$C1" bash)"
expect_eq "the kernel records the child forked with event-fork only" "0 3" \
  "$(comm_writes "$INST" "$C0") $(comm_writes "$INST" "$C1")"
c1=$(comm_writes "$MNT" "$C1")
expect_eq "histd too" "0 yes" "$(comm_writes "$MNT" "$C0") $([ "$c1" -ge 1 ] && echo yes || echo "no ($c1)")"
# The child leaves the list when it is freed (after its parent reaped it).
for _ in $(seq 50); do [ "$(lines "$MNT/set_event_pid")" = "$KEEP_PID" ] && break; sleep 0.1; done
expect_eq "the freed child is no longer listed, as in the kernel's" "$(lines "$INST/set_event_pid")" \
  "$(lines "$MNT/set_event_pid")"
expect_eq "  the list is the task's again" "$KEEP_PID" "$(lines "$MNT/set_event_pid")"

# --- no list: every task again --------------------------------------------------
: >"$MNT/set_event_pid"
: >"$MNT/trace"
tell "$DROP" write
expect_eq "without a list the other task is recorded" "yes" "$([ "$(comm_writes "$MNT" "$DROP")" -ge 1 ] && echo yes)"
for tree in "$INST" "$MNT"; do
  echo 0 >"$tree/events/enable"
  echo 0 >"$tree/options/event-fork"
  : >"$tree/set_event_pid"
done
echo "!hist:keys=common_comm if count == $SIZE" >>"$E/trigger"
tell "$KEEP" exit
tell "$DROP" exit
wait "${WORKERS[@]}"
WORKERS=()

# --- kept across a restart (this boot's) --------------------------------------
# Pids no task can have (from the kernel's highest, 4194304): with
# event-fork on, a listed task's fork or exit changes the list, and a real
# pid may be a new task's once pids wrap (at 32768 without systemd).
echo "4194400 4194304" >"$MNT/set_event_pid"
echo 1 >"$MNT/options/event-fork"
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start
expect_eq "set_event_pid is restored" "4194304 4194400" "$(lines "$MNT/set_event_pid")"
expect_eq "and options/event-fork" "1" "$(cat "$MNT/options/event-fork")"
: >"$MNT/set_event_pid"
echo 0 >"$MNT/options/event-fork"
finish
