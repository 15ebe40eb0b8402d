#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Probe events: the kernel's uprobe_events (and kprobe_events,
# where the kernel has it) through histd's tree. The kernel checks the
# definition and makes the event; histd attaches a kprobe-type program that
# computes the record from the registers as the definition says (registers,
# $retval, $comm, dereferences, strings), so that hist triggers and `enable`
# work on it as on any event. Also: probe events made and deleted behind
# histd's back are served while they exist, and a fault leaves the rest alone.
source "$(dirname "$0")/lib.sh"

T=/sys/kernel/tracing
[ -d "$T/events" ] || mount -t tracefs nodev "$T"
[ -w "$T/uprobe_events" ] || { echo "FAIL: this kernel has no uprobe_events"; exit 1; }
# The test's own copy of the target: its probes are on this file alone.
BIN=$WORK/probe_target
cp "$(dirname "$HISTD_BIN")/histd_probe_target" "$BIN"
# The file offset of histd_probe_target: its address, less its segment's
# address, plus the segment's offset.
ADDR=$((16#$(readelf -sW "$BIN" | awk '$8 == "histd_probe_target" { print $2 }')))
while read -r _ offset vaddr _ _ memsz _; do
  if ((ADDR >= vaddr && ADDR < vaddr + memsz)); then OFF=$(printf '0x%x' $((ADDR - vaddr + offset))); fi
done < <(readelf -lW "$BIN" | awk '$1 == "LOAD"')
E=histd_t$UNIQ R=histd_r$UNIQ  # the kernel's: names unique on the machine
test_cleanup() {
  for e in $E $R; do echo "-:uprobes/$e" >>"$T/uprobe_events" 2>/dev/null || true; done
}
HISTCTL=("$HISTCTL_BIN" --socket "$WORK/histd.sock")
histd_start --group nogroup
P=$MNT/events/uprobes
err() { "$@" 2>&1 >/dev/null | sed -n 's/.*: \([A-Z][a-z][^:]*\)$/\1/p' | tail -1; }

expect_eq "uprobe_events is served (root only, the group reads)" "-rw-r----- root" \
  "$(stat -c '%A %U' "$MNT/uprobe_events")"
echo "p:uprobes/$E $BIN:$OFF n=%di:s64 s=+0(%si):string who=\$comm" >>"$MNT/uprobe_events"
echo "r:uprobes/$R $BIN:$OFF ret=\$retval:s32" >>"$MNT/uprobe_events"
expect_eq "listed as the kernel lists them" "$(grep -E "uprobes/($E|$R) " "$T/uprobe_events")" \
  "$(grep -E "uprobes/($E|$R) " "$MNT/uprobe_events")"
expect_eq "the event's format is the kernel's" "$(cat "$T/events/uprobes/$E/format")" "$(cat "$P/$E/format")"

echo 'hist:keys=n,s' >"$P/$E/trigger"
echo 'hist:keys=who:vals=n' >>"$P/$E/trigger"
echo 'hist:keys=ret' >"$P/$R/trigger"
"$BIN" 30
H=$(cat "$P/$E/hist")
expect_eq "arguments from registers, a string through a pointer: each pair 5 times" "6" \
  "$(grep -cE '^\{ n: +[0-2], s: (even|odd) +\} hitcount: +5$' <<<"$H")"
expect_eq "\$comm, and a sum over a register (0+1+2, 10 times)" "1" \
  "$(grep -cE '^\{ who: probe_target +\} hitcount: +30  n: +30$' <<<"$H")"
expect_eq "the return value at the return probe" "3:10" \
  "$(grep -cE '^\{ ret: +[024] \} hitcount: +10$' "$P/$R/hist"):$(grep -m1 -oE 'hitcount: +[0-9]+' "$P/$R/hist" | grep -oE '[0-9]+$')"

echo 1 >"$P/$E/enable"
: >"$MNT/trace"
"$BIN" 2
sleep 0.3
expect_eq "enabled: its records in trace, printed by its print fmt" "2" \
  "$(grep -cE "$E: \([0-9a-f]+\) n=[01] s=\"(even|odd)\" who=\"probe_target\"" "$MNT/trace")"
echo 0 >"$P/$E/enable"

expect_eq "in use by a trigger: the kernel will not delete it" "Device or resource busy" \
  "$(err bash -c "echo '-:uprobes/$R' >> '$MNT/uprobe_events'")"
: >"$P/$R/trigger"
echo "-:uprobes/$R" >>"$MNT/uprobe_events"
expect_eq "once its trigger is gone, it is deleted at once" "no" "$([ -e "$P/$R" ] && echo yes || echo no)"
: >"$MNT/error_log"
expect_eq "a definition the kernel refuses: its errno" "No such file or directory" \
  "$(err bash -c "echo 'p:uprobes/histd_bad$UNIQ $WORK/nofile:0x10' >> '$MNT/uprobe_events'")"
expect_eq "and a line in histd's error_log" "1" "$(grep -c "uprobe_events.*the kernel refused it" "$MNT/error_log")"
expect_eq "a user outside the group cannot read it" "Permission denied" \
  "$(err setpriv --reuid=nobody --regid=nogroup --clear-groups cat "$MNT/uprobe_events")"
expect_eq "nor a member of the group define one" "Permission denied" \
  "$(err setpriv --reuid=nobody --regid=nogroup --init-groups bash -c "echo '-:uprobes/$E' >> '$MNT/uprobe_events'")"

: >"$P/$E/trigger"

# dynamic_events: the same probes beside histd's synthetic events.
Y=histd_y$UNIQ
echo 'histd_s'$$' u64 v' >"$MNT/synthetic_events"
echo "p:uprobes/$Y $BIN:$OFF x=%di:u8" >>"$MNT/dynamic_events"
expect_eq "dynamic_events lists histd's synthetic events, then the kernel's probes" \
  "s:synthetic/histd_s$$ u64 v|p:uprobes/$Y $BIN:0x$(printf '%016x' $((OFF))) x=%di:u8" \
  "$(grep -E "histd_s$$|$Y" "$MNT/dynamic_events" | tr '\t' ' ' | paste -sd'|')"
echo 'hist:keys=x' >"$P/$Y/trigger"
"$BIN" 3
expect_eq "a probe made through dynamic_events counts" "3" "$(sed -n 's/^ *Hits: //p' "$P/$Y/hist")"
: >"$P/$Y/trigger"
expect_eq "a member of the group cannot define a probe there" "Permission denied" \
  "$(err setpriv --reuid=nobody --regid=nogroup --init-groups bash -c "echo 'p:uprobes/x$UNIQ $BIN:$OFF' >> '$MNT/dynamic_events'")"
echo "-:uprobes/$Y" >>"$MNT/dynamic_events"
expect_eq "-: removes a probe through dynamic_events" "no" "$([ -e "$P/$Y" ] && echo yes || echo no)"
echo "p:uprobes/$Y $BIN:$OFF" >>"$MNT/dynamic_events"
: >"$MNT/dynamic_events"
expect_eq "O_TRUNC removes histd's synthetic events and the probes it lists" "0" \
  "$(cat "$MNT/dynamic_events" "$T/uprobe_events" | grep -cE "histd_s$$|$Y|$E" || true)"

# Made and deleted behind histd's back, in the kernel's own tracefs.
D=histd_d$UNIQ
echo "p:uprobes/$D $BIN:$OFF" >>"$T/uprobe_events"
expect_eq "available_events lists it at once, before anything looked it up" "1" \
  "$(grep -cx "uprobes:$D" "$MNT/available_events")"
expect_eq "an event made after start is served by name" "$(cat "$T/events/uprobes/$D/format")" "$(cat "$P/$D/format")"
echo 'hist:keys=common_pid' >"$P/$D/trigger"
"$BIN" 3
expect_eq "its hist trigger counts" "3" "$(sed -n 's/^ *Hits: //p' "$P/$D/hist")"
rc=0; out=$("${HISTCTL[@]}" add "uprobes:$D" 'hist:keys=n' 2>&1) || rc=$?
expect_eq "histctl: a field it has not is refused" "1:1" "$rc:$(grep -c "Couldn't find field" <<<"$out")"
: >"$P/$D/trigger"
echo "-:uprobes/$D" >>"$T/uprobe_events"
expect_eq "a deleted event is no longer served" "no" "$([ -e "$P/$D/format" ] && echo yes || echo no)"
expect_eq "nor listed in available_events" "0" "$(grep -cx "uprobes:$D" "$MNT/available_events" || true)"
echo "p:uprobes/$D $BIN:$OFF x=%di:u8" >>"$T/uprobe_events"
expect_eq "made again with other fields: served with its new format" "$(cat "$T/events/uprobes/$D/format")" \
  "$(cat "$P/$D/format")"
echo 'hist:keys=x' >"$P/$D/trigger"
"$BIN" 3
expect_eq "and counted by its new fields" "3" "$(grep -cE '^\{ x: +[0-2] \} hitcount: +1$' "$P/$D/hist")"
: >"$P/$D/trigger"
echo "-:uprobes/$D" >>"$T/uprobe_events"
kill -0 "$HISTD_PID" && echo "ok: histd still running"
finish
