#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Recording with trace-cmd: Debian's trace-cmd records
# syscalls:sys_enter_write while a workload makes EVENTS writes of one
# size as fast as it can (dd to /dev/null, pinned to CPU 0), on histd's
# tree and on the kernel's own tracefs, in interleaved rounds with the
# variants in a shuffled order; medians (min..max) of the workload's writes
# the report has, those it lacks (lost), and the rate the workload wrote
# at (writes/s while recorded).
#   histd   trace-cmd record in a mount namespace with histd's tree bound
#           over tracefs (as tests/e2e/test_trace_cmd.sh does)
#   kernel  the same on the kernel's tracefs
# trace-cmd write /proc/sys/kernel/ftrace_enabled, which this machine
# refuses: a file holding 1 covers it; /proc/kallsyms is covered by a copy
# (trace-cmd gives up when it changes while read); on the kernel's tracefs
# the function tracer's files it may not open are covered by an empty file.
#   bash bench/record.sh    (as root; ROUNDS=5, EVENTS="50000 200000 1000000",
#                            HISTD_BUILD=dir, HISTD_OPTS="--trace-buffer-size 64mb")
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/rounds.sh
need trace-cmd trace-cmd
ROUNDS=${ROUNDS:-5}
EVENTS=${EVENTS:-"50000 200000 1000000"}
B=$(realpath "${HISTD_BUILD:-build}")
WORK=$(mktemp -d /tmp/histd-bench-record.XXXXXX)
HISTD=
trap bench_cleanup EXIT
# shellcheck disable=SC2086 # HISTD_OPTS: options, split
start_histd ${HISTD_OPTS:-}
echo 1 >"$WORK/one"
: >"$WORK/empty"
SIZE=4321
COMM=recbench-${WORK##*.}
mkdir -p "$WORK/bin"
ln -s "$(command -v dd)" "$WORK/bin/${COMM:0:15}"
DD=$WORK/bin/${COMM:0:15}

# in_ns TREE CMD...: CMD with TREE (histd's tree, or "kernel") as tracefs.
in_ns() {
  unshare -m --propagation private bash -c '
    set -e
    tree=$1 work=$2; shift 2
    if [ "$tree" = kernel ]; then
      for f in set_ftrace_pid set_ftrace_filter set_ftrace_notrace set_graph_function set_graph_notrace; do
        p=/sys/kernel/tracing/$f
        if [ -e "$p" ] && ! cat "$p" >/dev/null 2>&1; then mount --bind "$work/empty" "$p"; fi
      done
    else
      mount --bind "$tree" /sys/kernel/tracing
    fi
    mount --bind "$work/one" /proc/sys/kernel/ftrace_enabled
    cat /proc/kallsyms >"$work/kallsyms"
    mount --bind "$work/kallsyms" /proc/kallsyms
    exec "$@"' _ "$1" "$WORK" "${@:2}"
}

# One recording of N writes on TREE: "recorded lost writes/s".
record() {
  local tree=$1 n=$2 dir=$WORK/run
  rm -rf "$dir"
  mkdir -p "$dir"
  # The recorders start before the writes (trace-cmd stops a recorder that
  # has not begun when the workload ends).
  # dd is the workload's own pid (exec), which trace-cmd -F filters on, and
  # says how long it took.
  (cd "$dir" && in_ns "$tree" trace-cmd record -e syscalls:sys_enter_write -F bash -c \
    "sleep 1; exec taskset -c 0 $DD if=/dev/zero of=/dev/null bs=$SIZE count=$n 2>$dir/dd.log") \
    >"$dir/record.log" 2>&1 || { cat "$dir/record.log" >&2; exit 1; }
  local got secs
  got=$(trace-cmd report -i "$dir/trace.dat" 2>/dev/null | grep -c "sys_enter_write: .*count: $(printf '0x%08x' $SIZE)\$" || true)
  secs=$(sed -n 's/.* copied, \([0-9.e-]*\) s,.*/\1/p' "$dir/dd.log")
  echo "$got $((n - got)) $(python3 -c "print(round($n / $secs))")"
}

for n in $EVENTS; do
  declare -A got=() lost=() rate=()
  for r in $(seq "$ROUNDS"); do
    for v in $(printf '%s\n' histd kernel | shuf); do
      tree=$WORK/mnt
      [ "$v" = kernel ] && tree=kernel
      read -r g l w <<<"$(record "$tree" "$n")"
      got[$v]+="$g " lost[$v]+="$l " rate[$v]+="$w "
    done
    echo "$n writes: round $r done" >&2
  done
  for v in histd kernel; do
    python3 - "$v" "$n" "${got[$v]}" "${lost[$v]}" "${rate[$v]}" <<'PY'
import statistics, sys
v, n = sys.argv[1], int(sys.argv[2])
def m(s):
    xs = sorted(int(x) for x in s.split())
    return f"{statistics.median(xs):.0f} ({xs[0]}..{xs[-1]})"
print(f"{v:6s} {n:8d} writes: recorded {m(sys.argv[3])}, lost {m(sys.argv[4])}, at {m(sys.argv[5])} writes/s")
PY
  done
  unset got lost rate
done
