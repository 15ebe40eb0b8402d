#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Nothing saved is lost:
#  - every form a trigger is printed in comes back after a restart (SIGTERM
#    and kill -9) with the same trigger lines, synthetic events, enable
#    state and counts, and `!` + the listed line removes it, through the
#    trigger file and through `histctl remove`;
#  - a trigger that fails to restore (a memory limit, a broken compiler)
#    stays saved and pinned, is listed as not restored with its reason, and
#    comes back at the next good start or on `histctl restore`;
#  - a state file that cannot be read is kept aside, said loudly, and the
#    previous instance's tables are kept; the next state file is written
#    atomically and never through a symlink.
source "$(dirname "$0")/lib.sh"
ctl() { "$HISTCTL_BIN" --socket "$WORK/histd.sock" "$@"; }
stop_histd() { kill -"${1:-TERM}" "$HISTD_PID"; wait "$HISTD_PID" 2>/dev/null || true; }
S=$MNT/events/syscalls
EVENTS="syscalls/sys_enter_write syscalls/sys_exit_write syscalls/sys_enter_read syscalls/sys_enter_close
        syscalls/sys_enter_getppid synthetic/write_lat"
# Everything a restart must keep: trigger files, definitions, enable state,
# the table rows.
snapshot() {
  for e in $EVENTS; do
    echo "== $e"; cat "$MNT/events/$e/trigger"; grep '^{' "$MNT/events/$e/hist" || true
  done
  echo "== synthetic_events"; cat "$MNT/synthetic_events"
  echo "== enable"; cat "$MNT/events/synthetic/write_lat/enable"
}

histd_start
# The witness: a child that, for each round the test asks for, writes,
# reads and closes a known number of times (bash builtins only), its comm in
# every filter (lib.sh: never its pid), and acknowledges through a fifo (one
# more write).
mkfifo "$WORK/round" "$WORK/ack"
echo x >"$WORK/one"
WITNESS=$(own_comm witness)
"$(comm_link "$WITNESS" bash)" -c "exec 3<'$WORK/round' 4>'$WORK/ack'; while read -r _ <&3; do printf abc >/dev/null; read -r -n 1 _ <'$WORK/one'; echo done >&4; done" &
CHILD=$!
exec 5>"$WORK/round" 6<"$WORK/ack"
round() { echo go >&5; read -r _ <&6; }
F="common_comm == \"$WITNESS\""
echo 'write_lat u64 lat; long ret' >>"$MNT/synthetic_events"
echo "hist:keys=common_pid:t0=common_timestamp if $F" >>"$S/sys_enter_write/trigger"
# A reference qualified by its event: printed as $syscalls.sys_enter_write.t0.
echo "hist:keys=common_pid:lat=common_timestamp-syscalls.sys_enter_write.\$t0:onmatch(syscalls.sys_enter_write).write_lat(\$lat,ret) if $F" \
  >>"$S/sys_exit_write/trigger"
echo 'hist:keys=ret:vals=hitcount' >>"$MNT/events/synthetic/write_lat/trigger"
echo 1 >"$MNT/events/synthetic/write_lat/enable"
# sort= on a variable's value: printed sort=$l2.
echo "hist:keys=common_pid:l2=count*2:vals=\$l2:sort=l2 if $F" >>"$S/sys_enter_read/trigger"
echo "hist:keys=fd:vals=count:pause if $F" >>"$S/sys_enter_read/trigger"
# Filtered: any getppid() on the machine (every bash start) would continue the paused trigger.
echo "enable_hist:syscalls:sys_enter_read if $F" >>"$S/sys_enter_getppid/trigger"
# A command of exactly a page less one byte: its printed line is longer
# than a page.
long="hist:keys=fd if $F"
n=1; while [ ${#long} -lt 4070 ]; do long="$long && fd != $((100000 + n))"; n=$((n + 1)); done
long=$(printf '%-4095s' "$long")
expect_eq "a 4095-byte command is accepted" "0" "$(printf '%s' "$long" >>"$S/sys_enter_close/trigger"; echo $?)"
expect_eq "and its listed line is longer than a page" "1" \
  "$(awk 'length($0) > 4096 { n++ } END { print n + 0 }' "$S/sys_enter_close/trigger")"
round; round; round
before=$(snapshot)
expect_eq "the chain generated write_lat for each write" "6" "$(grep -c 'write_lat: lat=' "$MNT/trace")"

stop_histd TERM
histd_start 5>&- 6<&-  # the witness must see EOF when the test closes its fifo
expect_eq "after SIGTERM: the same triggers, definitions, enable state and counts" "$before" "$(snapshot)"
stop_histd KILL
histd_start 5>&- 6<&-
expect_eq "after kill -9: the same triggers, definitions, enable state and counts" "$before" "$(snapshot)"
expect_eq "nothing reported as not restored" "0" "$(grep -c 'could not restore' "$WORK/histd.log")"
# The enable state came back: the chain still traces.
: >"$MNT/trace"
round
expect_eq "write_lat still traced after the restarts" "2" "$(grep -c 'write_lat: lat=' "$MNT/trace")"

# histctl remove with the line exactly as `histctl list` prints it.
listed=$(ctl list | grep '^syscalls:sys_enter_read hist:keys=fd:')
expect_eq "histctl remove takes the listed line, [paused] and all" "0" \
  "$(ctl remove syscalls:sys_enter_read "${listed#syscalls:sys_enter_read }" >/dev/null; echo $?)"
expect_eq "and it is gone" "0" "$(ctl list | grep -c 'hist:keys=fd:vals=hitcount,count')"
expect_eq "a second remove of it is ENOENT" "1" \
  "$(ctl remove syscalls:sys_enter_read "${listed#syscalls:sys_enter_read }" 2>/dev/null; echo $?)"

# The line over a page cannot be written back to a trigger file (tracefs
# takes a page per write, and so does histd, as the kernel); histctl takes
# the listed line of any length.
listed=$(ctl list | grep '^syscalls:sys_enter_close ')
expect_eq "histctl remove takes a listed line longer than a page" "0" \
  "$(ctl remove syscalls:sys_enter_close "${listed#syscalls:sys_enter_close }" >/dev/null; echo $?)"
# As the kernel's selftests clear triggers: `!` + every listed line up to
# '[', event after event, until none is left (users before what they use).
for _ in 1 2 3; do
  for e in $(ctl list | cut -d' ' -f1 | sort -u | tr : /); do
    t=$MNT/events/$e/trigger
    { grep -v '^#' "$t" 2>/dev/null || true; } | while IFS= read -r line; do
      printf '!%s' "$(printf '%s' "$line" | cut -f1 -d'[')" >>"$t" 2>/dev/null || true
    done
  done
done
expect_eq "! + each listed line removed every trigger" "" "$(ctl list)"
echo 0 >"$MNT/events/synthetic/write_lat/enable"
echo '!write_lat' >>"$MNT/synthetic_events"
exec 5>&- 6<&-
wait "$CHILD" 2>/dev/null || true

# ---- a restore that fails is not a loss -----------------------------------
child_start 'for i in 1 2 3 4 5; do printf abc >/dev/null; done'
F="common_comm == \"$CHILD_COMM\""
echo "hist:keys=common_pid:vals=count if $F" >>"$S/sys_enter_write/trigger"
echo "hist:keys=count:vals=hitcount if $F" >>"$S/sys_enter_write/trigger"
child_go
rows_before=$(grep '^{' "$S/sys_enter_write/hist")
stop_histd TERM
state_before=$(cat "$WORK/state/triggers.json")
pins_before=$(ls "$PIN" | grep -v '^event-')
# One table fits under this limit, not two.
histd_start --max-map-memory 300K
expect_eq "low memory: one trigger restored, one listed as not restored" "1 1" \
  "$(ctl list | grep -c '\[active\]') $(ctl list | grep -c '\[not restored: hist trigger would exceed the map memory limit')"
expect_eq "histctl status names it and why" "1" "$(ctl status | grep -c '^not restored: 1$')"
expect_eq "histctl status --json too" "1" \
  "$(ctl status --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["not_restored"]))')"
expect_eq "error_log says it" "1" "$(grep -c 'would exceed the map memory limit' "$MNT/error_log")"
expect_eq "the journal (stderr) says it" "1" "$(grep -c 'could not restore: syscalls:sys_enter_write' "$WORK/histd.log")"
expect_eq "the state file still holds both" "$(printf '%s' "$state_before" | grep -c '"command"')" \
  "$(grep -c '"command"' "$WORK/state/triggers.json")"
expect_eq "and every table stays pinned" "$pins_before" "$(ls "$PIN" | grep -v '^event-')"
stop_histd TERM
histd_start
expect_eq "the next good start restores both, with their counts" "$rows_before" "$(grep '^{' "$S/sys_enter_write/hist")"
expect_eq "status: nothing left" "1" "$(ctl status | grep -c '^not restored: 0$')"

# A compiler that fails: nothing restores; mended, `histctl restore` brings
# everything back with its counts, without a restart.
stop_histd TERM
printf '#!/bin/sh\n[ -e %s/clang-mended ] && exec %s "$@"\necho "broken clang" >&2; exit 1\n' "$WORK" "$(command -v clang)" >"$WORK/clang"
chmod +x "$WORK/clang"
histd_start --clang "$WORK/clang"
expect_eq "broken compiler: both listed as not restored" "2" "$(ctl list | grep -c 'not restored: ')"
expect_eq "histctl restore says what still fails (exit 1)" "1" "$(ctl restore >/dev/null 2>&1; echo $?)"
touch "$WORK/clang-mended"
expect_eq "mended: histctl restore applies them (exit 0)" "0" "$(ctl restore >/dev/null; echo $?)"
expect_eq "with their counts" "$rows_before" "$(grep '^{' "$S/sys_enter_write/hist")"
expect_eq "and nothing is listed as not restored" "0" "$(ctl list | grep -c 'not restored')"
stop_histd TERM

# ---- a corrupt state file --------------------------------------------------
tables_before=$(ls "$PIN" | grep -c '_table$')
echo '{"version": 1, "triggers": [ {"event": ' >"$WORK/state/triggers.json"
histd_start
expect_eq "kept aside, not replaced" "1" "$(ls "$WORK/state" | grep -c '^triggers.json.corrupt-')"
expect_eq "said in histctl status" "1" "$(ctl status | grep -c '^state file: .*not a histd state file; kept as ')"
expect_eq "said in error_log" "1" "$(grep -c 'saved state unreadable, kept aside' "$MNT/error_log")"
expect_eq "said in the journal" "1" "$(grep -c 'not a histd state file; kept as' "$WORK/histd.log")"
expect_eq "the previous tables stay pinned" "$tables_before" "$(ls "$PIN" | grep -c '_table$')"
# A symlink planted where the next state file is written is not followed.
echo precious >"$WORK/victim"
ln -s "$WORK/victim" "$WORK/state/triggers.json.tmp"
echo 'hist:keys=fd' >>"$S/sys_enter_read/trigger"
expect_eq "a symlink at triggers.json.tmp is not written through" "precious" "$(cat "$WORK/victim")"
expect_eq "the state is saved in a new file" "1" "$(grep -c 'hist:keys=fd:' "$WORK/state/triggers.json")"
stop_histd TERM
histd_start
expect_eq "kept while the corrupt copy is there" "$((tables_before + 1))" "$(ls "$PIN" | grep -c '_table$')"
stop_histd TERM
rm -f "$WORK"/state/triggers.json.corrupt-*
histd_start
expect_eq "swept once it is gone" "1" "$(ls "$PIN" | grep -c '_table$')"
# A byte changed that leaves valid JSON: the checksum catches it.
echo 'hist:keys=fd if fd > 0' >>"$S/sys_enter_read/trigger"
stop_histd TERM
sed -i 's/fd > 0/fd > 7/' "$WORK/state/triggers.json"
histd_start
expect_eq "a state file changed since histd wrote it is kept aside" "1" \
  "$(ls "$WORK/state" | grep -c '^triggers.json.corrupt-')"
expect_eq "said in histctl status" "1" \
  "$(ctl status | grep -c '^state file: .*its checksum does not match its contents: changed since histd wrote it; kept as ')"
expect_eq "and nothing of it restored" "" "$(grep -v '^#' "$S/sys_enter_read/trigger")"
stop_histd TERM
rm -f "$WORK"/state/triggers.json.corrupt-*
finish
