# SPDX-License-Identifier: GPL-2.0-only
"""BPF run-time statistics of the programs a process attached to the getppid
(or sys_enter_close) tracepoints, or to the raw sys_enter / sys_exit
tracepoints (bench/workload.sh, bench/hot_slots.sh).

  progstats.py snap PID           -> {prog id: [run_time_ns, run_cnt]} as JSON
  progstats.py delta A B CALLS    -> "<ns per call> <runs per call>"

Per call of the loop: all the run time of the programs while the loop ran,
divided by its calls. A program on a raw tracepoint runs on every system
call and returns at once on the others: that time is part of its cost, and
an average per run would hide the matching runs among those. Other
processes' calls during the loop count too (few on an idle machine).

Programs are found through `bpftool perf show` (tracepoint attachments) and
the process's fdinfo (raw tracepoint links), with the process holding them, so
programs of other processes on the machine never count. A tail call runs
inside its caller: the dispatcher's figures include the event program it
jumps to.
"""
import json
import os
import subprocess
import sys

EVENTS = ("sys_enter_getppid", "sys_exit_getppid", "sys_enter_close")
RAW = ("sys_enter", "sys_exit")


def bpftool(*args):
    return json.loads(subprocess.run(["bpftool", *args, "-j"], check=True, capture_output=True, text=True).stdout)


def raw_tracepoint_programs(pid):
    """Programs of the raw tracepoint links the process holds (its fdinfo:
    bpftool lists a link's holders only when built with that support)."""
    ids = set()
    fds = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fds):
        try:
            with open(os.path.join(fds, fd)) as f:
                info = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        except OSError:
            continue  # closed meanwhile
        if info.get("link_type") == "raw_tracepoint" and info.get("tp_name") in RAW:
            ids.add(int(info["prog_id"]))
    return ids


def snap(pid):
    ids = {p["prog_id"] for p in bpftool("perf", "show") if p.get("pid") == pid and p.get("tracepoint") in EVENTS}
    ids |= raw_tracepoint_programs(pid)
    if not ids:
        sys.exit(f"progstats: process {pid} has no program attached to {' or '.join(EVENTS + RAW)}")
    return {str(p["id"]): [p.get("run_time_ns", 0), p.get("run_cnt", 0)] for p in bpftool("prog", "show") if p["id"] in ids}


def delta(before, after, calls):
    ns = runs = 0
    for pid, (t, n) in after.items():
        t0, n0 = before.get(pid, [0, 0])
        ns += t - t0
        runs += n - n0
    if runs == 0:
        sys.exit("progstats: no run counted (are BPF statistics on?)")
    return f"{ns / calls:.2f} {runs / calls:.3f}"


if __name__ == "__main__":
    if sys.argv[1] == "snap":
        print(json.dumps(snap(int(sys.argv[2]))))
    else:
        with open(sys.argv[2]) as a, open(sys.argv[3]) as b:
            print(delta(json.load(a), json.load(b), int(sys.argv[4])))
