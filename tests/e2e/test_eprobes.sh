#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Eprobes: `e:` in dynamic_events makes an event whose record is
# computed from each record of a kernel tracepoint — its fields, memory they
# point to (a user string behind sys_enter_openat's filename), $comm — so
# that hist triggers and `enable` work on what the tracepoint only points
# to; on a synthetic event, recorded where that event is generated. The kernel here has no eprobes (CONFIG_EPROBE_EVENTS): histd runs its
# own, a tracepoint program at the attached event. Listed, refused and
# removed as the kernel does; root only; kept across restarts, counting
# while histd is down after a crash.
source "$(dirname "$0")/lib.sh"

histd_start --group nogroup
D=$MNT/dynamic_events
E=$MNT/events/eprobes/op$$
err() { "$@" 2>&1 >/dev/null | sed -n 's/.*: \([A-Z][a-z][^:]*\)$/\1/p' | tail -1; }
# Files only this test opens, each a known number of times.
A=$WORK/eprobe-a B=$WORK/eprobe-b
touch "$A" "$B"
opens() { for _ in $(seq "$2"); do : <"$1"; done; }
# "yes" once trace holds a record matching $2 after opening $1: opened again
# each 2 s without one, since the kernel skips a program while other BPF
# work runs on its CPU, and a skipped event records nothing.
recorded() {
  for _ in $(seq 10); do
    : <"$1"
    for _ in $(seq 20); do
      grep -qE "$2" "$MNT/trace" && echo yes && return
      sleep 0.1
    done
  done
  echo no
}
# A count, tolerating the events the kernel skipped while other BPF work ran
# on the CPU (histd reports them as Missed): "ok" when count <= n <= count + missed.
counted() {
  local hist count missed
  hist=$(cat "$E/hist")
  count=$(grep -F "$1 " <<<"$hist" | grep -oE 'hitcount: +[0-9]+' | grep -oE '[0-9]+$' || echo 0)
  missed=$(awk '/^    Missed: / {s += $2} END {print s + 0}' <<<"$hist")
  [ "$count" -le "$2" ] && [ $((count + missed)) -ge "$2" ] && echo ok || echo "$count of $2 ($missed missed)"
}

expect_eq "an unprivileged user may not define one" "Permission denied" \
  "$(err setpriv --reuid=nobody --regid=nogroup --init-groups bash -c \
    "echo 'e:x$$ syscalls.sys_enter_openat' >> '$D'")"

echo "e:op$$ syscalls.sys_enter_openat file=+0(\$filename):ustring fl=\$flags:x32 who=\$comm" >>"$D"
expect_eq "listed as the kernel lists it" \
  "e:eprobes/op$$ syscalls.sys_enter_openat file=+0(\$filename):ustring fl=\$flags:x32 who=\$comm" \
  "$(grep "op$$" "$D")"
expect_eq "its format: the arguments packed after the common fields" \
  "	field:__data_loc char[] file;	offset:8;	size:4;	signed:1;
	field:u32 fl;	offset:12;	size:4;	signed:0;
	field:__data_loc char[] who;	offset:16;	size:4;	signed:1;
print fmt: \" file=\\\"%s\\\" fl=0x%x who=\\\"%s\\\"\", __get_str(file), REC->fl, __get_str(who)" \
  "$(sed -n '/offset:8;/,$p' "$E/format" | grep -v '^$')"
expect_eq "in available_events" "1" "$(grep -c "^eprobes:op$$\$" "$MNT/available_events")"

echo 'hist:keys=file:vals=hitcount' >"$E/trigger"
opens "$A" 3
opens "$B" 5
expect_eq "keyed by the string sys_enter_openat points to: $A 3 times" "ok" "$(counted "$A" 3)"
expect_eq "and $B 5 times" "ok" "$(counted "$B" 5)"

expect_eq "hist_debug: its program runs at the attached tracepoint" "1" \
  "$(grep -c '^  attached: tracepoint syscalls:sys_enter_openat$' "$E/hist_debug")"

echo 1 >"$E/enable"
: >"$MNT/trace"
expect_eq "enabled: its records in trace as the kernel prints an eprobe's" "yes" \
  "$(recorded "$A" "op$$: \(syscalls\.sys_enter_openat\) file=\"$A\" fl=0x[0-9a-f]+ who=\"bash\"")"
echo 0 >"$E/enable"

# Errors as the kernel's, in error_log with the caret at the fault.
expect_eq "no such field: EINVAL" "Invalid argument" \
  "$(err bash -c "echo 'e:bad$$ syscalls.sys_enter_openat x=\$nosuch' >> '$D'")"
expect_eq "logged at the field" "  Command: e:bad$$ syscalls.sys_enter_openat x=\$nosuch
$(printf '%*s^' $((45 + ${#$})) '')" \
  "$(grep -A2 "event_probe: error: Invalid \$-variable specified" "$MNT/error_log" | tail -2)"
expect_eq "no such event" "Invalid argument" "$(err bash -c "echo 'e:bad$$ sched.nosuch' >> '$D'")"
expect_eq "said so" "1" "$(grep -c 'event_probe: error: Attached event does not exist$' "$MNT/error_log")"
expect_eq "not on a probe or ftrace event" "Invalid argument" "$(err bash -c "echo 'e:bad$$ ftrace.print' >> '$D'")"
expect_eq "a filter on a field the attached event lacks" "Invalid argument" \
  "$(err bash -c "echo 'e:bad$$ syscalls.sys_enter_openat if nosuch > 1' >> '$D'")"
expect_eq "the same name twice" "File exists" \
  "$(err bash -c "echo 'e:op$$ syscalls.sys_enter_openat' >> '$D'")"
expect_eq "nothing refused was made" "0" "$(grep -c "bad$$" "$D")"

# On a synthetic event: recorded where the synthetic event is generated
# (onmatch().trace() at sys_exit_openat), the user string behind the
# filename it carries read there; it holds the synthetic event.
S=sop$$
echo "$S unsigned long filename; long ret" >>"$MNT/synthetic_events"
echo 'hist:keys=common_pid:fn=filename' >"$MNT/events/syscalls/sys_enter_openat/trigger"
echo "hist:keys=common_pid:f=\$fn,r=ret:onmatch(syscalls.sys_enter_openat).trace($S,\$f,\$r)" \
  >"$MNT/events/syscalls/sys_exit_openat/trigger"
echo "e:sy$$ synthetic.$S file=+0(\$filename):ustring ret=\$ret:s64" >>"$D"
F=$WORK/eprobe-f
touch "$F"
echo 1 >"$MNT/events/eprobes/sy$$/enable"
: >"$MNT/trace"
expect_eq "its records in trace, as the kernel prints them" "yes" \
  "$(recorded "$F" "sy$$: \(synthetic\.$S\) file=\"$F\" ret=[0-9]+\$")"
echo 0 >"$MNT/events/eprobes/sy$$/enable"
expect_eq "no triggers on it yet: refused" "Invalid argument" \
  "$(err bash -c "echo 'hist:keys=file' > '$MNT/events/eprobes/sy$$/trigger'")"
expect_eq "the synthetic event it is attached to stays" "Device or resource busy" \
  "$(err bash -c "echo '!$S' >> '$MNT/synthetic_events'")"
echo "-:sy$$" >>"$D"
: >"$MNT/events/syscalls/sys_exit_openat/trigger"
: >"$MNT/events/syscalls/sys_enter_openat/trigger"
echo "!$S" >>"$MNT/synthetic_events"

# `if FILTER`: on the attached event's record; only creating opens here.
C=$WORK/eprobe-c
echo "e:cr$$ syscalls.sys_enter_openat file=+0(\$filename):ustring if flags & 0x40" >>"$D"
echo 'hist:keys=file' >"$MNT/events/eprobes/cr$$/trigger"
opens "$A" 3
for _ in 1 2; do : >"$C"; done
expect_eq "the filter passes the creating opens of $C" "1" \
  "$(grep -cE "^\{ file: $C +\} hitcount: +[12]\$" "$MNT/events/eprobes/cr$$/hist")"
expect_eq "and not the reads of $A" "0" "$(grep -c "$A" "$MNT/events/eprobes/cr$$/hist")"

# Across a clean restart and a crash: the definition, its trigger, its
# counts; after a crash, what happened while histd was down is counted.
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" 2>/dev/null || true
histd_start --group nogroup
expect_eq "after SIGTERM: still defined" "1" "$(grep -c "op$$" "$D")"
opens "$A" 2
expect_eq "its filter too (listed without it, as the kernel lists one)" \
  "e:eprobes/cr$$ syscalls.sys_enter_openat file=+0(\$filename):ustring:0" \
  "$(grep "cr$$" "$D"):$(grep -c "$A" "$MNT/events/eprobes/cr$$/hist")"
echo '!hist:keys=file' >>"$MNT/events/eprobes/cr$$/trigger"
expect_eq "its trigger and counts kept" "ok" "$(counted "$B" 5)"
kill -KILL "$HISTD_PID"; wait "$HISTD_PID" 2>/dev/null || true
opens "$B" 2
histd_start --group nogroup
expect_eq "after kill -9: the opens made while histd was down counted" "ok" "$(counted "$B" 7)"

expect_eq "in use by a trigger: not removed" "Device or resource busy" \
  "$(err bash -c "echo '-:op$$' >> '$D'")"
echo '!hist:keys=file:vals=hitcount' >>"$E/trigger"
echo "-:eprobes/op$$" >>"$D"
expect_eq "removed: no longer listed" "0" "$(grep -c "op$$" "$D")"
expect_eq "its directory gone" "no" "$([ -e "$E" ] && echo yes || echo no)"
echo "e:op$$ syscalls.sys_enter_openat fl=\$flags" >>"$D"
echo "e:op2$$ sched.sched_switch p=\$prev_pid:s32" >>"$D"
echo "$S u64 n" >>"$MNT/synthetic_events"
echo "e:op3$$ synthetic.$S n=\$n" >>"$D"
: >"$D"
expect_eq "truncating dynamic_events removes every eprobe, then the synthetic events they held" "0" \
  "$(grep -c "op[23]\?$$\|$S" "$D")"
finish
