# SPDX-License-Identifier: GPL-2.0-only
"""Tables for bench/run.sh: medians (min..max) over the rounds, with ratios.

  report.py SAMPLES CALLS ROUNDS READ_KEYS

SAMPLES holds one line per measurement: "<section> <variant> <value>...".
"""
import statistics
import sys
from collections import defaultdict

samples_path, calls, rounds, read_keys = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
data = defaultdict(lambda: defaultdict(list))  # section -> variant -> [values tuple]
with open(samples_path) as f:
    for line in f:
        section, variant, *values = line.split()
        data[section][variant].append(tuple(float(v) for v in values))

# One workload per row group: its floor, the hand-written program, histd, bpftrace.
GROUPS = [
    ("count", "floor", "keys=common_pid / @[pid] = count()"),
    ("sum", "floor", "keys=common_pid:vals=__syscall_nr / count + sum"),
    ("log2", "floor", "keys=__syscall_nr.log2 / hist()"),
    ("filter", "floor", 'keys=common_pid if comm ~ "histd_bench*" / strncmp(comm, ...) then count()'),
    ("latency", "floor2", "ts0 on enter, $lat on exit (two programs per call)"),
    ("chain", "floor2", "ts0 on enter, onmatch() a synthetic event on exit, lat.log2 on it / hist()"),
]


def med(xs):
    return statistics.median(xs)


def ratio(a, b):
    return f"{a / b:.2f}" if b and b > 0 else "-"


def spread(xs, fmt="{:.0f}"):
    return f"({fmt.format(min(xs))}..{fmt.format(max(xs))})"


def per_call_table(section, title, values, unit, extra=None):
    """values(variant) -> list of per-call figures (already over the baseline)."""
    present = data[section]
    if not present:
        return
    print(title)
    head = f"{'variant':<18} {unit:>12} {'(min..max)':>14}"
    if extra:
        head += f" {extra[0]:>10}"
    print(head + f" {'x floor':>8} {'x hand':>8} {'x bpftrace':>10}")
    shown = set()
    for group, floor, what in GROUPS:
        print(f"  {group}: {what}")
        ref = {k: med(values(k)) for k in (floor, f"hand_{group}", f"bpftrace_{group}") if k in present}
        for v in (floor, f"{floor}_raw", f"hand_{group}", f"histd_{group}", f"histd_raw_{group}",
                  f"bpftrace_{group}"):
            if v not in present or v in shown:
                continue
            shown.add(v)
            xs = values(v)
            m = med(xs)
            row = f"{v:<18} {m:>12.1f} {spread(xs):>14}"
            if extra:
                row += f" {extra[1](v):>10}"
            row += f" {ratio(m, ref.get(floor)):>8}"
            row += f" {ratio(m, ref.get(f'hand_{group}')) if v.startswith(('histd', 'bpftrace')) else '':>8}"
            row += f" {ratio(m, ref.get(f'bpftrace_{group}')) if v.startswith(('histd', 'hand')) else '':>10}"
            print(row)
    print()


print(f"syscalls:sys_enter_getppid, {calls} calls per run, {rounds} interleaved rounds per section")
print("  floor: empty program on the tracepoint(s); floor_raw: on the raw sys_enter (and sys_exit) tracepoint,")
print("  checking the number; histd: on the classic tracepoints, like hand and bpftrace (the default);")
print("  histd_raw: histd --raw-syscalls=true, on the raw tracepoints; x floor: over the classic floor\n")

if data["overhead"]:
    base = med([x[0] for x in data["overhead"]["none"]])
    print(f"untraced loop: {base:.1f} ns/call")
    per_call_table("overhead", "Wall-clock overhead: ns per call over the untraced loop",
                   lambda v: [x[0] - base for x in data["overhead"][v]], "ns/call")

other = data["overhead"]
if other.get("other_none"):
    base = med([x[0] for x in other["other_none"]])
    print(f"What tracing getppid costs other calls: a getpid() loop ({base:.1f} ns/call untraced), ns per call over it")
    print(f"{'variant':<24} {'ns/call':>8} {'(min..max)':>14}")
    for v in ("other_floor", "other_floor_raw", "other_histd_count", "other_histd_raw_count"):
        if v in other:
            xs = [x[0] - base for x in other[v]]
            print(f"{v:<24} {med(xs):>8.1f} {spread(xs):>14}")
    print("  a program on the raw sys_enter tracepoint runs on every system call; the classic syscall")
    print("  tracepoints test a bitmap of enabled calls first\n")

if data["stats"]:
    per_call_table("stats", "In-kernel: BPF run time per call (run_time_ns delta / calls of the loop)",
                   lambda v: [x[0] for x in data["stats"][v]], "ns/call",
                   ("runs/call", lambda v: f"{med([x[1] for x in data['stats'][v]]):.2f}"))

act = data["activation"]
if act:
    print("Activation, ms from the request")
    print(f"{'variant':<14} {'ready':>8} {'(min..max)':>16} {'live':>8} {'(min..max)':>16} {'live x bpftrace':>16}")
    bt_live = med([x[1] for x in act["bpftrace"]]) if act.get("bpftrace") else None
    for v in ("histd_cold", "histd_cached", "histd_raw_cold", "histd_raw_cached", "bpftrace"):
        if v not in act:
            continue
        ready = [x[0] for x in act[v]]
        live = [x[1] for x in act[v]]
        print(f"{v:<14} {med(ready):>8.1f} {spread(ready, '{:.1f}'):>16} {med(live):>8.1f} "
              f"{spread(live, '{:.1f}'):>16} {ratio(med(live), bt_live):>16}")
    print("  histd: ready = the trigger write returned (after attach); live = a hist read showed the first event")
    print("  bpftrace: ready = \"Attaching\" printed; live = the first event the probe saw (its timestamp)")
    print()

rd = data["read"]
if rd:
    print(f"Reading a {read_keys}-entry table (syscalls:sys_enter_close, keys=fd), ms")
    print(f"{'variant':<18} {'ms':>8} {'(min..max)':>16} {'x bpftrace':>10}")
    bt = med([x[0] / 1000 for x in rd["bpftrace"]]) if rd.get("bpftrace") else None
    for v in ("histd_hist_first", "histd_hist_again", "histd_json", "bpftrace"):
        if v not in rd:
            continue
        xs = [x[0] / 1000 for x in rd[v]]
        print(f"{v:<18} {med(xs):>8.1f} {spread(xs, '{:.1f}'):>16} {ratio(med(xs), bt) if v != 'bpftrace' else '':>10}")
    print("  histd: cat hist (or hist.json) > /dev/null; first: after 6 s idle, again: right after it")
    print("  bpftrace: SIGINT until it exits, its map printed to a file")
