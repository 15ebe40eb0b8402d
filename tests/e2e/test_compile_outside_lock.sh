#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A trigger's compile does not hold the tree: while the unit of a new trigger
# is compiling (tens of milliseconds, about a hundred after an idle, here
# held by a clang that waits for the test), hist files, trigger files,
# error_log and the control socket answer, and another event's trigger is
# added. Once the compile ends the held trigger is added and counts, nothing
# is logged for it, and the trigger file showed nothing of it before.
source "$(dirname "$0")/lib.sh"

REAL_CLANG=$(command -v clang) || { echo "FAIL: no clang in PATH"; exit 1; }
HISTCTL=("$HISTCTL_BIN" --socket "$WORK/histd.sock")
FORK=$MNT/events/sched/sched_process_fork
GETPPID=$MNT/events/syscalls/sys_enter_getppid
GETPID=$MNT/events/syscalls/sys_enter_getpid

# A clang that holds a unit reading a comm (the held trigger's key: units
# name their shape, not their event, and the others key on pids) until
# $WORK/go exists (at most 60 s), having said so in $WORK/held; any other
# compiles at once.
cat >"$WORK/clang" <<EOF
#!/usr/bin/env bash
for a in "\$@"; do
  case "\$a" in
    *.c) if grep -q 'histd_comm(' "\$a"; then
           : >'$WORK/held'
           for _ in \$(seq 600); do [ -e '$WORK/go' ] && break; sleep 0.1; done
         fi ;;
  esac
done
exec '$REAL_CLANG' "\$@"
EOF
chmod +x "$WORK/clang"

histd_start --clang "$WORK/clang"
echo 'hist:keys=common_pid' >"$GETPPID/trigger"

# The held write, in the background.
(echo 'hist:keys=common_comm:vals=hitcount' >"$FORK/trigger") 2>"$WORK/write.err" &
WRITER=$!
for _ in $(seq 300); do [ -e "$WORK/held" ] && break; sleep 0.1; done
expect_eq "the new trigger's unit is compiling" "yes" "$([ -e "$WORK/held" ] && echo yes || echo no)"

rc=0; timeout 10 cat "$GETPPID/hist" >"$WORK/hist" || rc=$?
expect_eq "meanwhile another event's hist file answers" "0" "$rc"
expect_eq "with its table" "1" "$(grep -c '^# event histogram' "$WORK/hist")"
rc=0; trig=$(timeout 10 cat "$FORK/trigger") || rc=$?
expect_eq "the held event's trigger file answers" "0" "$rc"
expect_eq "and shows nothing of the trigger yet" "0" "$(grep -c '^hist:' <<<"$trig")"
rc=0; timeout 10 cat "$MNT/error_log" >"$WORK/error_log" || rc=$?
expect_eq "error_log answers" "0" "$rc"
rc=0; timeout 10 "${HISTCTL[@]}" status >"$WORK/status" || rc=$?
expect_eq "the control socket answers" "0" "$rc"
rc=0; timeout 30 bash -c "echo 'hist:keys=common_pid:vals=hitcount' >'$GETPID/trigger'" || rc=$?
expect_eq "another event's trigger is added" "0" "$rc"
expect_eq "the held write still waits" "yes" "$(kill -0 "$WRITER" 2>/dev/null && echo yes || echo no)"

: >"$WORK/go"
rc=0; wait "$WRITER" || rc=$?
expect_eq "once compiled, the held write succeeds" "0" "$rc"
expect_eq "with nothing on its stderr" "" "$(cat "$WORK/write.err")"
expect_eq "its trigger is listed" "1" "$(grep -c '^hist:keys=common_comm:vals=hitcount' "$FORK/trigger")"
for _ in 1 2 3; do /bin/true & wait $!; done
expect_eq "and counts forks" "yes" "$(grep -q '^{ common_comm: .*hitcount: *[1-9]' "$FORK/hist" && echo yes || echo no)"
expect_eq "nothing was logged" "" "$(cat "$MNT/error_log")"
finish
