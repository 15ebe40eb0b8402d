#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The files that say how tracing records (trace_options and options/,
# trace_clock, timestamp_mode, tracing_cpumask, printk_formats), beside a
# tracefs instance of this machine's kernel: the same names in the same
# form; what histd can switch switches, what it cannot is fixed at what it
# always does (the kernel's default) and a change is refused.
source "$(dirname "$0")/lib.sh"
T=/sys/kernel/tracing
[ -d "$T/instances" ] || mount -t tracefs nodev "$T"
INST=$T/instances/histd-settings-${WORK##*.}
test_cleanup() { [ -d "$INST" ] && rmdir "$INST"; }
histd_start
mkdir "$INST"
err() { "$@" 2>&1 >/dev/null | sed -n 's/.*: \([A-Z][a-z][^:]*\)$/\1/p' | tail -1; }
names() { sed 's/^no//' "$1"; }
# Options histd has not: the nop tracer's own two, and while histd cannot
# honour them function-fork (no function tracer) and pause-on-trace.
missing='-e test_nop_accept -e test_nop_refuse -e function-fork -e pause-on-trace'
kernel_names() { names "$1" | grep -v -x $missing; }
kernel_lines() { grep -v -x $(sed 's/-e /-e no/g' <<<"$missing") $missing "$1"; }

expect_eq "trace_options names the kernel's options, in its order" "$(kernel_names "$T/trace_options")" \
  "$(names "$MNT/trace_options")"
expect_eq "options/ has a file for each" "$(names "$MNT/trace_options" | sort)" "$(ls "$MNT/options" | sort)"
for o in $(ls "$MNT/options"); do
  [ -e "$T/options/$o" ] || expect_eq "options/$o is one of the kernel's" "yes" "no"
done
# A new instance's are the kernel's defaults, without the top tree's own.
# saved_cmdlines: the tasks of the recorded events, by pid; their tgids
# are not recorded (record-tgid is 0): saved_tgids is empty.
expect_eq "saved_cmdlines_size as the kernel's at first" "128" "$(cat "$MNT/saved_cmdlines_size")"
WRITER=$(own_comm saved)
echo 1 >"$MNT/events/syscalls/sys_enter_getppid/enable"
# A tracepoint's program is skipped while another BPF program runs on its
# CPU (other tests run beside this one): called until one was recorded.
for _ in 1 2 3 4 5; do
  "$(comm_link "$WRITER" perl)" -e 'getppid() for 1..3'
  grep -q " $WRITER\$" "$MNT/saved_cmdlines" && break
done
echo 0 >"$MNT/events/syscalls/sys_enter_getppid/enable"
expect_eq "saved_cmdlines names the task of a recorded event" "yes" \
  "$(grep -qE "^[0-9]+ $WRITER\$" "$MNT/saved_cmdlines" && echo yes)"
expect_eq "saved_tgids is empty" "" "$(cat "$MNT/saved_tgids")"
echo 1 >"$MNT/saved_cmdlines_size"
expect_eq "saved_cmdlines_size takes a new size, which starts empty" "1 " \
  "$(cat "$MNT/saved_cmdlines_size") $(cat "$MNT/saved_cmdlines")"
expect_eq "0 is refused" "Invalid argument" "$(err bash -c "echo 0 > '$MNT/saved_cmdlines_size'")"
echo 128 >"$MNT/saved_cmdlines_size"

# buffer_size_kb: each CPU's buffer, --trace-buffer-size at first (4 MiB).
cpus=$(ls -d "$MNT"/per_cpu/cpu* | wc -l)
expect_eq "buffer_size_kb: each CPU's buffer" "4096 $((4096 * cpus))" \
  "$(cat "$MNT/buffer_size_kb") $(cat "$MNT/buffer_total_size_kb")"
echo 64 >"$MNT/buffer_size_kb"
expect_eq "  takes a new size, as the total does" "64 $((64 * cpus))" \
  "$(cat "$MNT/buffer_size_kb") $(cat "$MNT/buffer_total_size_kb")"
expect_eq "  0 is refused" "Invalid argument" "$(err bash -c "echo 0 > '$MNT/buffer_size_kb'")"
expect_eq "  and more than histd would hold" "Cannot allocate memory" \
  "$(err bash -c "echo 999999999999 > '$MNT/buffer_size_kb'")"
# Lines past the new size: the oldest are overwritten, as the kernel's.
: >"$MNT/trace"
for i in $(seq 1 2000); do echo "line $i of a buffer of 64 KiB" >"$MNT/trace_marker"; done
expect_eq "  the buffer keeps the newest lines that fit" "yes yes" \
  "$(grep -q 'line 2000 of' "$MNT/trace" && echo yes) $(grep -q 'line 1 of' "$MNT/trace" || echo yes)"
echo 4096 >"$MNT/buffer_size_kb"

mkdir "$MNT/instances/settings"
expect_eq "an instance's trace_options as a new kernel instance's" "$(kernel_lines "$INST/trace_options")" \
  "$(cat "$MNT/instances/settings/trace_options")"
# (func-no-repeats, func_stack_trace: the function tracer's, which histd has not.)
expect_eq "  and its options/" "$(ls "$INST/options" | grep -v -x $missing -e func-no-repeats -e func_stack_trace | sort)" \
  "$(ls "$MNT/instances/settings/options" | sort)"
expect_eq "an option's file reads as the kernel's" "$(cat "$INST/options/overwrite")" "$(cat "$MNT/options/overwrite")"
echo stacktrace >"$MNT/trace_options"
expect_eq "trace_options switches what histd can switch" "1" "$(cat "$MNT/options/stacktrace")"
echo nostacktrace >"$MNT/trace_options"
expect_eq "  and back" "0 nostacktrace" "$(cat "$MNT/options/stacktrace") $(grep -x nostacktrace "$MNT/trace_options")"
echo event-fork >"$MNT/trace_options"
expect_eq "  event-fork too" "1" "$(cat "$MNT/options/event-fork")"
echo noevent-fork >"$MNT/trace_options"
expect_eq "  and back" "0 noevent-fork" "$(cat "$MNT/options/event-fork") $(grep -x noevent-fork "$MNT/trace_options")"
echo 1 >"$MNT/options/overwrite"
expect_eq "a fixed option takes the value it has" "1" "$(cat "$MNT/options/overwrite")"
expect_eq "  and refuses another" "Invalid argument" "$(err bash -c "echo 0 > '$MNT/options/overwrite'")"
expect_eq "  through trace_options too" "Invalid argument" "$(err bash -c "echo nooverwrite > '$MNT/trace_options'")"
expect_eq "no such option" "Invalid argument" "$(err bash -c "echo nosuchoption > '$MNT/trace_options'")"

expect_eq "trace_clock: the monotonic clock, in the kernel's form" "[mono]" "$(cat "$MNT/trace_clock")"
expect_eq "  which the kernel has too" "mono" "$(tr ' ' '\n' <"$INST/trace_clock" | tr -d '[]' | grep -x mono)"
echo mono >"$MNT/trace_clock"
expect_eq "another clock is refused" "Invalid argument" "$(err bash -c "echo global > '$MNT/trace_clock'")"
expect_eq "timestamp_mode as the kernel's" "$(cat "$INST/timestamp_mode")" "$(cat "$MNT/timestamp_mode")"
expect_eq "tracing_cpumask as the kernel's: every CPU" "$(cat "$INST/tracing_cpumask")" "$(cat "$MNT/tracing_cpumask")"
echo "$(cat "$MNT/tracing_cpumask")" >"$MNT/tracing_cpumask"
expect_eq "a mask of fewer CPUs is refused" "Invalid argument" "$(err bash -c "echo 1 > '$MNT/tracing_cpumask'")"
expect_eq "printk_formats: histd records no trace_printk()" "" "$(cat "$MNT/printk_formats")"

expect_eq "an instance has its own options" "0" "$(cat "$MNT/instances/settings/options/stacktrace")"
echo 1 >"$MNT/instances/settings/options/stacktrace"
expect_eq "  switched apart from the top's" "1 0" \
  "$(cat "$MNT/instances/settings/options/stacktrace") $(cat "$MNT/options/stacktrace")"
rmdir "$MNT/instances/settings"
finish
