#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Every table as Prometheus metrics (docs/metrics.md): `histctl
# metrics` over a rich set of triggers (every key kind and modifier) is
# clean for Debian's `promtool check metrics`, its OpenMetrics form parses
# with the OpenMetrics parser of Debian's python3-prometheus-client, and the
# numbers are the tables': a .log2 key is a histogram whose buckets, count
# and sum are the writes the test made.
source "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || { echo "FAIL: promtool is needed (apt-get install prometheus)"; exit 1; }
/usr/bin/python3 -c 'import prometheus_client.openmetrics.parser' 2>/dev/null ||
  { echo "FAIL: the OpenMetrics parser is needed (apt-get install python3-prometheus-client)"; exit 1; }
histd_start
HISTCTL() { "$HISTCTL_BIN" --socket "$WORK/histd.sock" "$@"; }

SIZE=$(own_number 3000 1000)  # its log2 bucket is 2^12 (4096)
HISTCTL add syscalls:sys_enter_write "hist:keys=count.log2:vals=count:name=write_sizes if count == $SIZE"
HISTCTL add syscalls:sys_enter_write "hist:keys=common_pid.execname,count.buckets=1024 if count == $SIZE"
HISTCTL add syscalls:sys_enter_read 'hist:keys=common_pid.hex,count.log2,fd:vals=hitcount'
HISTCTL add raw_syscalls:sys_enter 'hist:keys=id.syscall:vals=hitcount'
HISTCTL add sched:sched_switch 'hist:keys=next_comm,prev_state:name=switches'
HISTCTL add sched:sched_switch 'hist:keys=common_stacktrace:vals=hitcount:size=256'
HISTCTL add kmem:kmalloc 'hist:keys=call_site.sym,gfp_flags.hex:vals=bytes_req.percent,bytes_alloc'
HISTCTL add kmem:kmalloc 'hist:keys=ptr:vals=bytes_req'
# The same table in an instance: the same family, its series labelled.
mkdir "$MNT/instances/fleet"
echo "hist:keys=count.log2:vals=count:name=write_sizes if count == $SIZE" \
  >"$MNT/instances/fleet/events/syscalls/sys_enter_write/trigger"
dd if=/dev/zero of=/dev/null bs="$SIZE" count=5 status=none
cat /etc/hostname >/dev/null
sleep 0.2

HISTCTL metrics >"$WORK/metrics.txt"
expect_eq "promtool check metrics: clean" "" "$(promtool check metrics <"$WORK/metrics.txt" 2>&1)"
HISTCTL metrics --openmetrics >"$WORK/metrics.om"
expect_eq "the OpenMetrics form parses as OpenMetrics" "ok" "$(/usr/bin/python3 - "$WORK/metrics.om" <<'PY'
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
families = list(text_string_to_metric_families(open(sys.argv[1]).read()))
print("ok" if len(families) >= 8 else "only %d families" % len(families))
PY
)"

# The histogram of the writes the test made (5, tolerating the events the
# kernel skipped while other BPF work ran: Missed).
missed=$(HISTCTL show syscalls:sys_enter_write | awk '/^    Missed: / {s += $2} END {print s + 0}')
bucket() { sed -n "s/^histd_write_sizes_count_bucket{le=\"$1\"} \\([0-9]*\\)$/\\1/p" "$WORK/metrics.txt"; }
n=$(bucket 4096)
expect_eq "the le=4096 bucket holds the 5 writes" "ok" \
  "$([ "${n:-0}" -le 5 ] && [ $((${n:-0} + missed)) -ge 5 ] && echo ok || echo "${n:-none} ($missed missed)")"
expect_eq "the buckets below it are there and hold none" "0 0" "$(bucket 1) $(bucket 2048)"
expect_eq "and so is every power of two of its type (size_t), hit or not" "65" \
  "$(grep -c '^histd_write_sizes_count_bucket{le="[0-9.e+]*"}' "$WORK/metrics.txt")"
expect_eq "+Inf and _count equal it" "$n $n" \
  "$(bucket '+Inf') $(sed -n 's/^histd_write_sizes_count_count \([0-9]*\)$/\1/p' "$WORK/metrics.txt")"
expect_eq "_sum is the bytes written" "$((n * SIZE))" \
  "$(sed -n 's/^histd_write_sizes_count_sum \([0-9]*\)$/\1/p' "$WORK/metrics.txt")"
expect_eq "an .execname key is its pid and its comm, beside a linear histogram" "yes" \
  "$(grep -q "_count_bucket{common_pid=\"[0-9]*\",common_pid_comm=\"dd\",le=\"4095\"}" "$WORK/metrics.txt" && echo yes)"
expect_eq "a .syscall key is the syscall's name" "yes" \
  "$(grep -q '_hitcount_total{id="sys_write"}' "$WORK/metrics.txt" && echo yes)"
expect_eq "a named table is its name" "yes" \
  "$(grep -q '^histd_switches_hitcount_total{next_comm="' "$WORK/metrics.txt" && echo yes)"
expect_eq "no raw kernel address in any label" "" \
  "$(grep -oE '="ffff[0-9a-f]{12}"|="1844[0-9]{16}"' "$WORK/metrics.txt" | head -3)"
expect_eq "the tables' totals" "yes" \
  "$(grep -q '^histd_table_hits_total{table="histd_write_sizes"} ' "$WORK/metrics.txt" && echo yes)"

# The instance's table: in the same histogram family (one TYPE line), its
# series labelled tracefs_instance; the same writes counted.
imissed=$(awk '/^    Missed: / {s += $2} END {print s + 0}' "$MNT/instances/fleet/events/syscalls/sys_enter_write/hist")
ibucket=$(sed -n 's/^histd_write_sizes_count_bucket{tracefs_instance="fleet",le="4096"} \([0-9]*\)$/\1/p' \
  "$WORK/metrics.txt")
expect_eq "an instance's table: its le=4096 bucket holds the 5 writes" "ok" \
  "$([ "${ibucket:-0}" -le 5 ] && [ $((${ibucket:-0} + imissed)) -ge 5 ] && echo ok || echo "${ibucket:-none}")"
expect_eq "one family for both trees" "1" "$(grep -c '^# TYPE histd_write_sizes_count histogram$' "$WORK/metrics.txt")"
expect_eq "the instance's totals" "yes" \
  "$(grep -q '^histd_table_hits_total{table="histd_write_sizes",tracefs_instance="fleet"} ' "$WORK/metrics.txt" &&
    echo yes)"
rmdir "$MNT/instances/fleet"
finish
