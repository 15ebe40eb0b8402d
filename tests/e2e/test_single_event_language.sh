#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The single-event language end to end through the mounted tree: modifiers,
# string filters and globs, named tables, enable_hist/disable_hist, poll,
# hist_debug and error carets, against the test's own child processes
# (filtered on their comms: lib.sh, child_start).
source "$(dirname "$0")/lib.sh"
histd_start
E=$MNT/events
W=$E/syscalls/sys_enter_write

# --- .execname, .percent, .graph, .log2 on the child's five writes ---------
child_start 'for i in 1 2 3; do printf abcde >/dev/null; done; for i in 1 2; do printf abcdefg >/dev/null; done'
MINE="common_comm == \"$CHILD_COMM\""
echo "hist:keys=common_pid.execname:vals=hitcount if $MINE" > "$W/trigger"
echo "hist:keys=count:vals=count.percent,count.graph:sort=count if $MINE" >> "$W/trigger"
echo "hist:keys=count.log2:vals=hitcount if $MINE" >> "$W/trigger"
child_go
# The pid as the table shows it (the machine's, not $CHILD in a container).
pid=$(rows "$W/hist" | sed -n '1s/.*\[ *\([0-9]*\)\].*/\1/p')
expect_eq ".execname shows the comm" "$(printf '{ common_pid: %-16s[%10d] } hitcount:          5' "$CHILD_COMM" "${pid:-0}")" \
  "$(rows "$W/hist")"
# sort=count names the value (values are matched before keys, as in the
# kernel): ascending sums, 14 before 15.
expect_eq ".percent and .graph" \
"{ count:          7 } hitcount:          2  count (%):  48.27  count:   ##################
{ count:          5 } hitcount:          3  count (%):  51.72  count: ####################" \
  "$(awk '/keys=count:vals/ {t=1} t && /^\{/ {print} t && /^Totals/ {exit}' "$W/hist")"
expect_eq ".log2" \
"{ count: ~ 2^3  } hitcount:          5" "$(awk '/keys=count.log2/ {t=1} t && /^\{/ {print} t && /^Totals/ {exit}' "$W/hist")"
: > "$W/trigger"

# --- .syscall on raw_syscalls:sys_enter, string globs on comm ---------------
child_start 'for i in 1 2; do printf x >/dev/null; done'
MINE="common_comm == \"$CHILD_COMM\""
# The comm, child2-<suffix>, as a whole-word glob with ? and a class.
glob="${CHILD_COMM:0:1}?${CHILD_COMM:2:2}[c-e]${CHILD_COMM:5}"
echo "hist:keys=id.syscall:vals=hitcount if $MINE && id == 1" > "$E/raw_syscalls/sys_enter/trigger"
echo "hist:keys=fd:vals=hitcount if $MINE && comm ~ \"$glob\"" > "$W/trigger"
echo "hist:keys=fd:vals=hitcount if $MINE && comm ~ \"*zsh*\"" >> "$W/trigger"
child_go
expect_eq ".syscall" "$(printf '{ id: %-30s[%3d] } hitcount:          2' sys_write 1)" "$(rows "$E/raw_syscalls/sys_enter/hist")"
expect_eq "glob that matches the comm ($glob)" "{ fd:          1 } hitcount:          2" "$(rows "$W/hist")"
expect_eq "glob that does not" "1" "$(grep -c 'Hits: 0' "$W/hist")"
: > "$W/trigger"; : > "$E/raw_syscalls/sys_enter/trigger"

# --- named tables: one table behind two events ----------------------------
R=$E/syscalls/sys_enter_read
child_start 'printf x >/dev/null; read -r -n 1 _ </etc/passwd'
echo "hist:name=rw:keys=common_pid:vals=hitcount if common_comm == \"$CHILD_COMM\"" > "$W/trigger"
echo "hist:name=rw:keys=common_pid:vals=hitcount if common_comm == \"$CHILD_COMM\"" > "$R/trigger"
child_go
expect_eq "both events show the same table" "$(rows "$W/hist")" "$(rows "$R/hist")"
if echo "hist:name=rw:keys=fd" >> "$R/trigger" 2>/dev/null; then
  expect_eq "incompatible named table refused" refused accepted
else
  expect_eq "incompatible named table refused" "Named hist trigger doesn't match existing named trigger (includes variables)" \
    "$(grep -o "error: .*" "$MNT/error_log" | tail -1 | sed 's/^error: //')"
fi
: > "$W/trigger"; : > "$R/trigger"

# --- enable_hist / disable_hist around a child's exec -----------------------
# The child execs /bin/sh through a link of its own name (an exec renames).
X=$E/sched/sched_process_exec
SH_COMM=$(own_comm sh)
SH=$(comm_link "$SH_COMM" /bin/sh)
child_start "exec '$SH' -c 'printf x >/dev/null; printf y >/dev/null'"
MINE="common_comm == \"$SH_COMM\""
echo "hist:keys=common_pid:vals=hitcount:pause if $MINE" > "$W/trigger"
echo "enable_hist:syscalls:sys_enter_write if filename == \"$SH\" && $MINE" > "$X/trigger"
expect_eq "enable_hist listed" "enable_hist:syscalls:sys_enter_write:unlimited if filename == \"$SH\" && $MINE" \
  "$(cat "$X/trigger")"
child_go
pid=$(rows "$W/hist" | sed -n '1s/^{ common_pid: *\([0-9]*\) }.*/\1/p')
expect_eq "writes after the exec are counted" "$(printf '{ common_pid: %10d } hitcount:          2' "${pid:-0}")" "$(rows "$W/hist")"
expect_eq "target unpaused" "1" "$(grep -c '\[active\]' "$W/trigger")"
: > "$X/trigger"; : > "$W/trigger"

# --- poll() blocks until the table changes ---------------------------------
# The poller opens the file first, then lets the child go; the child writes
# 0.3 s later, so a poll that returns early is caught.
child_start 'sleep 0.3; printf x >/dev/null'
echo "hist:keys=fd if common_comm == \"$CHILD_COMM\"" > "$W/trigger"
waited=$(python3 - "$W/hist" "$WORK/go" <<'PY'
import os, select, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
p = select.poll(); p.register(fd, select.POLLIN | select.POLLPRI)
with open(sys.argv[2], "w") as go: go.write("go\n")
t = time.time(); ev = p.poll(10000)
print("woke" if ev and time.time() - t > 0.2 else "did not block" if ev else "timed out")
PY
)
wait "$CHILD" || true
expect_eq "poll blocked, then woke" "woke" "$waited"
: > "$W/trigger"

# --- hist_debug ------------------------------------------------------------
echo 'hist:keys=common_pid,fd.hex:vals=count if common_pid == 1' > "$W/trigger"
expect_eq "hist_debug key field" "1" "$(grep -c 'ftrace_event_field name: fd' "$W/hist_debug")"
expect_eq "hist_debug counts" "  n_vals: 2
  n_keys: 2
  n_fields: 4" "$(grep -E '^  n_(vals|keys|fields)' "$W/hist_debug")"
: > "$W/trigger"

# --- errors: kernel wording, caret under the token --------------------------
check_error() {  # check_error COMMAND-WITH-^ TEXT
  local marked=$1 cmd=${1/^/} caret=${1%%^*}
  : > "$MNT/error_log"
  if echo "$cmd" >> "$W/trigger" 2>/dev/null; then expect_eq "refused: $cmd" refused accepted; return; fi
  expect_eq "error: $cmd" "hist:syscalls:sys_enter_write: error: $2
  Command: $cmd
$(printf '%*s^' $((11 + ${#caret})) '')" "$(sed 's/^\[ *[0-9.]*\] //' "$MNT/error_log")"
}
check_error 'hist:keys=common_pid:sort=^junk' "Sort field must be a key or a val"
check_error 'hist:keys=common_pid:sort=common_pid.^bogus' "Invalid sort modifier"
check_error 'hist:keys=common_pid:^sort=hitcount,common_pid,fd' "Too many sort fields (Max = 2)"
check_error 'hist:keys=common_pid:^sort=common_pid,' "Empty sort field"
check_error 'hist:keys=fd.^bogus' "Invalid field modifier"
check_error 'hist:keys=fd:vals=count.^log2' "Invalid field modifier"
check_error 'hist:keys=fd.^execname' "Invalid field modifier"
check_error 'hist:keys=^nosuch' "Couldn't find field"
check_error 'hist:keys=fd:^vals=' "Empty assignment"
check_error 'hist:keys=fd if nosuch ^== 1' "Field not found"
check_error 'hist:keys=fd if fd =^ 1' "Invalid operator"
check_error 'hist:keys=fd if fd == c^ount' "Invalid value (did you forget quotes)?"

# --- a newline or NUL in a filter cannot forge lines ----------------------
# Before: the quoted newline was stored, and the trigger file, histctl list
# and the state file showed a second, made-up trigger line.
# write_once FILE TEXT: TEXT (printf escapes: \n, \0) in one write(2).
write_once() {
  python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
try: os.write(fd, sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
except OSError: sys.exit(1)' "$1" "$2"
}
forge='hist:keys=fd if common_comm == "x\nhist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]"'
: > "$MNT/error_log"
echo 'hist:keys=count' > "$W/trigger"
before=$(cat "$W/trigger")
for bad in "$forge" 'hist:keys=fd if common_comm == "x\0y"' 'hist:keys=fd if fd == 1\n|| fd == 2' \
  'hist:keys=fd:name=x\nhist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]'; do
  if write_once "$W/trigger" "$bad" 2>/dev/null; then
    expect_eq "refused in one write: $bad" refused accepted
  else
    expect_eq "refused in one write: $bad" refused refused
  fi
done
out=$("$HISTCTL_BIN" --socket "$WORK/histd.sock" add syscalls:sys_enter_write "$(printf "$forge")" 2>&1) && rc=0 || rc=$?
expect_eq "a newline in a quoted filter is refused (histctl)" "1" "$rc"
expect_eq "histctl says why" "1" "$(grep -c '^error: a filter may not hold a newline or NUL byte$' <<<"$out")"
expect_eq "the trigger file is unchanged" "$before" "$(cat "$W/trigger")"
expect_eq "histctl list shows the one real trigger" \
  "syscalls:sys_enter_write hist:keys=count:vals=hitcount:sort=hitcount:size=2048 [active]" \
  "$("$HISTCTL_BIN" --socket "$WORK/histd.sock" list)"
expect_eq "error_log holds one line per part of each entry (5 refusals, 3 lines each)" "15" \
  "$(wc -l < "$MNT/error_log")"
expect_eq "error_log names the fault" "4 1" \
  "$(grep -c 'error: a filter may not hold a newline or NUL byte$' "$MNT/error_log") $(grep -c 'error: a table name may not hold a newline or NUL byte$' "$MNT/error_log")"
: > "$W/trigger"
finish
