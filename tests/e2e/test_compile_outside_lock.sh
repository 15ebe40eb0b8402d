#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A compile does not hold the tree: while the unit of a new trigger
# is compiling (tens of milliseconds, about a hundred after an idle, here
# held by a clang that waits for the test), hist files, trigger files,
# error_log and the control socket answer, and another event's trigger is
# added. Once the compile ends the held trigger is added and counts, nothing
# is logged for it, and the trigger file showed nothing of it before. The
# same for a trigger on a synthetic event, whose generating event's program
# (the kernel's run-queue latency form: sched_switch's) is held, and for an
# event's enable (the program that records it).
source "$(dirname "$0")/lib.sh"

REAL_CLANG=$(command -v clang) || { echo "FAIL: no clang in PATH"; exit 1; }
HISTCTL=("$HISTCTL_BIN" --socket "$WORK/histd.sock")
FORK=$MNT/events/sched/sched_process_fork
GETPPID=$MNT/events/syscalls/sys_enter_getppid
GETPID=$MNT/events/syscalls/sys_enter_getpid

# A clang that holds a unit holding the text in $WORK/pattern (units name
# their shape, not their event) until $WORK/go exists (at most 60 s),
# having said so in $WORK/held; any other compiles at once.
cat >"$WORK/clang" <<EOF
#!/usr/bin/env bash
for a in "\$@"; do
  case "\$a" in
    *.c) if [ -s '$WORK/pattern' ] && grep -qF -f '$WORK/pattern' "\$a"; then
           : >'$WORK/held'
           for _ in \$(seq 600); do [ -e '$WORK/go' ] && break; sleep 0.1; done
         fi ;;
  esac
done
exec '$REAL_CLANG' "\$@"
EOF
chmod +x "$WORK/clang"

# hold PATTERN FILE COMMAND: writes COMMAND to FILE in the background (its
# pid in WRITER) with units holding PATTERN held, and waits until one is.
hold() {
  rm -f "$WORK/held" "$WORK/go"
  printf '%s\n' "$1" >"$WORK/pattern"
  (echo "$3" >"$2") 2>"$WORK/write.err" &
  WRITER=$!
  for _ in $(seq 300); do [ -e "$WORK/held" ] && break; sleep 0.1; done
  expect_eq "$4: its unit is compiling" "yes" "$([ -e "$WORK/held" ] && echo yes || echo no)"
}

# answers WHAT: the tree and the control socket answer while a unit is held.
answers() {
  local rc=0
  timeout 10 cat "$GETPPID/hist" >"$WORK/hist" || rc=$?
  expect_eq "$1: meanwhile another event's hist file answers" "0" "$rc"
  expect_eq "$1: with its table" "1" "$(grep -c '^# event histogram' "$WORK/hist")"
  rc=0; timeout 10 cat "$MNT/error_log" >"$WORK/error_log" || rc=$?
  expect_eq "$1: error_log answers" "0" "$rc"
  rc=0; timeout 10 "${HISTCTL[@]}" status >"$WORK/status" || rc=$?
  expect_eq "$1: the control socket answers" "0" "$rc"
  expect_eq "$1: the held write still waits" "yes" "$(kill -0 "$WRITER" 2>/dev/null && echo yes || echo no)"
}

# release WHAT: the held unit compiles, and the write succeeds.
release() {
  local rc=0
  : >"$WORK/go"
  wait "$WRITER" || rc=$?
  expect_eq "$1: once compiled, the held write succeeds" "0" "$rc"
  expect_eq "$1: with nothing on its stderr" "" "$(cat "$WORK/write.err")"
  : >"$WORK/pattern"
}

histd_start --clang "$WORK/clang"
echo 'hist:keys=common_pid' >"$GETPPID/trigger"

# 1. A trigger keyed on a comm (the other triggers key on pids).
hold 'histd_comm(' "$FORK/trigger" 'hist:keys=common_comm:vals=hitcount' "a new trigger"
answers "a new trigger"
rc=0; trig=$(timeout 10 cat "$FORK/trigger") || rc=$?
expect_eq "the held event's trigger file answers" "0" "$rc"
expect_eq "and shows nothing of the trigger yet" "0" "$(grep -c '^hist:' <<<"$trig")"
rc=0; timeout 30 bash -c "echo 'hist:keys=common_pid:vals=hitcount' >'$GETPID/trigger'" || rc=$?
expect_eq "another event's trigger is added" "0" "$rc"
release "a new trigger"
expect_eq "its trigger is listed" "1" "$(grep -c '^hist:keys=common_comm:vals=hitcount' "$FORK/trigger")"
for _ in 1 2 3; do /bin/true & wait $!; done
expect_eq "and counts forks" "yes" "$(grep -q '^{ common_comm: .*hitcount: *[1-9]' "$FORK/hist" && echo yes || echo no)"

# 2. The run-queue latency form's table: its own program compiles at once,
# its generator's (the switch's, which begins the synthetic record) is held.
echo 'wakeup_lat int pid; u64 lat' >"$MNT/synthetic_events"
echo 'hist:keys=pid:ts0=common_timestamp.usecs' >"$MNT/events/sched/sched_waking/trigger"
echo 'hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_lat(next_pid,$lat)' \
  >"$MNT/events/sched/sched_switch/trigger"
LAT=$MNT/events/synthetic/wakeup_lat
hold 'histd_synth_begin(' "$LAT/trigger" 'hist:keys=lat.log2' "a synthetic event's trigger"
answers "a synthetic event's trigger"
expect_eq "its trigger file shows nothing of it yet" "0" "$(timeout 10 cat "$LAT/trigger" | grep -c '^hist:')"
release "a synthetic event's trigger"
expect_eq "its trigger is listed" "1" "$(grep -c '^hist:keys=lat.log2' "$LAT/trigger")"
for _ in 1 2 3; do sleep 0.05; done
expect_eq "and counts latencies" "yes" "$(grep -q '^{ lat: ~ 2^.*hitcount: *[1-9]' "$LAT/hist" && echo yes || echo no)"

# 3. An event's enable: the program that records it (histd_record_out).
EXEC=$MNT/events/sched/sched_process_exec
hold 'histd_record_out(' "$EXEC/enable" 1 "an enable"
answers "an enable"
expect_eq "its enable file still says 0" "0" "$(timeout 10 cat "$EXEC/enable")"
release "an enable"
expect_eq "its enable file says 1" "1" "$(cat "$EXEC/enable")"
/bin/true
expect_eq "and the exec is in the trace" "yes" \
  "$(timeout 10 grep -q 'sched_process_exec: filename=/bin/true' "$MNT/trace" && echo yes || echo no)"
echo 0 >"$EXEC/enable"
expect_eq "nothing was logged" "" "$(cat "$MNT/error_log")"
finish
