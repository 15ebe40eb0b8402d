#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What a user waits for after a machine left the tracer alone: the time from
# asking for a count of a system call to the count running, after IDLE
# seconds in which nothing touched the tracer's files (a machine that reclaims
# what is not used lets the compiler's libraries go by then), and right after
# (warm). Each tool in each round after its own idle, in a shuffled order,
# so none finds the files another just read back (histd-cc and bpftrace map
# the same libLLVM):
#   histd     a new trigger's write (never compiled: the object cache is
#             emptied first) to a histd running as a service does, with its
#             defaults (histd-cc sheds its memory after 60 s without a
#             compile); the write returns once the program is attached
#   histd_keep  the same with --compiler-idle-shed 0 (histd-cc keeps its
#             memory mapped: ~80 MB more while idle)
#   bpftrace  from its start to its first event: a probe on the same call
#             that prints when it sees this script's own calls (one every
#             0.5 ms; bpftrace says "Attaching" before it attaches)
#   floor     libbpf-tools' syscount (Debian's libbpf-tools: compiled ahead,
#             BTF-relocated at start): from its start to its "Tracing"
#             line, printed once attached; no compiler, only the loading
# ms; medians (min..max).
#   bash bench/idle.sh   (root; ROUNDS=3 IDLE=120, VARIANTS="histd bpftrace
#                        floor" or any of the four, HISTD_BUILD=dir: that
#                        build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
IDLE=${IDLE:-120}
VARIANTS=${VARIANTS:-histd bpftrace floor}
B=$(realpath "${HISTD_BUILD:-build}")
source bench/rounds.sh
need bpftrace bpftrace
need /usr/sbin/syscount libbpf-tools
WORK=$(mktemp -d /tmp/histd-bench-idle.XXXXXX)
HISTD=
trap bench_cleanup EXIT

# ms from starting $@ to a line of its output holding $1's text (the rest
# of the arguments: the command), while this process makes a getgid() every
# 0.5 ms from a thread named histd-poke; then the command is ended (SIGINT,
# SIGKILL after 5 s).
until_line() {
  python3 - "$@" <<'PY'
import ctypes, os, signal, subprocess, sys, threading, time
text, cmd = sys.argv[1], sys.argv[2:]
done = threading.Event()
def poke():
    # The name bpftrace's program looks for (PR_SET_NAME: this thread's comm).
    ctypes.CDLL(None).prctl(15, b"histd-poke", 0, 0, 0)
    while not done.is_set():
        os.getgid()
        time.sleep(0.0005)
threading.Thread(target=poke, daemon=True).start()
t = time.perf_counter()
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
killer = threading.Timer(60, p.kill)  # a command that never says it: no figure
killer.start()
seen = []
for line in p.stdout:
    seen.append(line)
    if text in line:
        print("%.1f" % ((time.perf_counter() - t) * 1e3))
        break
else:
    sys.exit("no %r from %s: %s" % (text, cmd[0], "".join(seen)))
done.set()
killer.cancel()
p.send_signal(signal.SIGINT)
try:
    p.wait(5)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
PY
}

# The bpftrace program: until_line's thread is the only caller it prints for.
BT_PROGRAM='tracepoint:syscalls:sys_enter_getgid /comm == "histd-poke"/ { @[pid] = count(); printf("counting\n"); exit(); }'

declare -A F=()
measure() {
  case $1 in
    histd | histd_keep)
      if [ "$1" = histd ]; then start_histd; else start_histd --compiler-idle-shed 0; fi
      # What a running service has done: compiled something once.
      timed_write "$WORK/mnt/events/syscalls/sys_enter_getppid/trigger" 'hist:keys=common_pid' >/dev/null
      : >"$WORK/mnt/events/syscalls/sys_enter_getppid/trigger"
      sleep "$IDLE"
      rm -rf "$WORK/state/cache"
      F[$1]+="$(timed_write "$WORK/mnt/events/syscalls/sys_enter_getgid/trigger" "hist:keys=common_pid if common_pid != $RANDOM$RANDOM") "
      rm -rf "$WORK/state/cache"
      F[${1}_warm]+="$(timed_write "$WORK/mnt/events/syscalls/sys_enter_getuid/trigger" "hist:keys=common_pid:vals=hitcount:sort=common_pid if common_pid != $RANDOM") "
      kill -TERM "$HISTD"
      wait "$HISTD" || true
      HISTD=
      ! mountpoint -q "$WORK/mnt" || fusermount3 -u "$WORK/mnt"
      rm -rf "$WORK/state"
      ;;
    bpftrace)
      sleep "$IDLE"
      F[bpftrace]+="$(until_line counting bpftrace -B line -e "$BT_PROGRAM") "
      F[bpftrace_warm]+="$(until_line counting bpftrace -B line -e "$BT_PROGRAM") "
      ;;
    floor)
      sleep "$IDLE"
      F[floor]+="$(until_line Tracing stdbuf -oL /usr/sbin/syscount) "
      F[floor_warm]+="$(until_line Tracing stdbuf -oL /usr/sbin/syscount) "
      ;;
  esac
}

for r in $(seq "$ROUNDS"); do
  for v in $(printf '%s\n' $VARIANTS | shuf); do measure "$v"; done
  echo "round $r done" >&2
done

med() { python3 -c 'import sys, statistics as s; v=[float(x) for x in sys.argv[1:]]; print("%.1f (%.1f..%.1f)" % (s.median(v), min(v), max(v)))' "$@"; }
echo "ms from asking to counting: after $IDLE s idle, and right after"
for v in $VARIANTS; do
  printf '  %-10s %-24s %s\n' "$v" "$(med ${F[$v]})" "$(med ${F[${v}_warm]})"
done
