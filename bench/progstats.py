"""BPF run-time statistics of the programs a process attached to the getppid
tracepoints (bench/workload.sh).

  progstats.py snap PID           -> {prog id: [run_time_ns, run_cnt]} as JSON
  progstats.py delta A B CALLS    -> "<ns per run> <runs per call>"

Per run, not per call: other processes' getppid() calls run the same
programs while the loop runs, and cost the same per run.

Programs are found through `bpftool perf show` (tracepoint attachments and the
process holding them), so programs of other processes on the machine never
count. A tail call runs inside its caller: the dispatcher's figures include
the event program it jumps to.
"""
import json
import subprocess
import sys

EVENTS = ("sys_enter_getppid", "sys_exit_getppid")


def bpftool(*args):
    return json.loads(subprocess.run(["bpftool", *args, "-j"], check=True, capture_output=True, text=True).stdout)


def snap(pid):
    ids = {p["prog_id"] for p in bpftool("perf", "show") if p.get("pid") == pid and p.get("tracepoint") in EVENTS}
    if not ids:
        sys.exit(f"progstats: process {pid} has no program attached to {' or '.join(EVENTS)}")
    return {str(p["id"]): [p.get("run_time_ns", 0), p.get("run_cnt", 0)] for p in bpftool("prog", "show") if p["id"] in ids}


def delta(before, after, calls):
    ns = runs = 0
    for pid, (t, n) in after.items():
        t0, n0 = before.get(pid, [0, 0])
        ns += t - t0
        runs += n - n0
    if runs == 0:
        sys.exit("progstats: no run counted (are BPF statistics on?)")
    return f"{ns / runs:.2f} {runs / calls:.3f}"


if __name__ == "__main__":
    if sys.argv[1] == "snap":
        print(json.dumps(snap(int(sys.argv[2]))))
    else:
        with open(sys.argv[2]) as a, open(sys.argv[3]) as b:
            print(delta(json.load(a), json.load(b), int(sys.argv[4])))
