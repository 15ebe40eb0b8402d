#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Per-CPU or shared table (docs/design/limits.md, "Per-CPU or shared"):
# the hand-written count by __syscall_nr (one key every CPU updates) in a
# per-CPU hash (plain add) and in a shared hash (atomic add), with one
# getppid() loop and with one loop per CPU at once. Prints in-kernel ns per
# program run (BPF run-time statistics), medians (min..max) over interleaved
# rounds.
#   bash bench/shared.sh   (as root; ROUNDS=7 CALLS=1000000, HISTD_BUILD=dir)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-1000000}
if [ -n "${HISTD_BUILD:-}" ]; then B=$(realpath "$HISTD_BUILD"); else nice bash scripts/build.sh >/dev/null; B=$PWD/build; fi
CPUS=$(nproc)
WORK=$(mktemp -d /tmp/histd-shared.XXXXXX)
STATS=
cleanup() { [ -z "$STATS" ] || { kill -TERM "$STATS"; wait "$STATS" || true; }; rm -rf "$WORK"; }
trap cleanup EXIT
"$B/histd_bench_stats" >"$WORK/stats.on" &
STATS=$!
for _ in $(seq 100); do [ -s "$WORK/stats.on" ] && break; sleep 0.05; done
[ -s "$WORK/stats.on" ] || { echo "BPF statistics could not be turned on" >&2; exit 1; }

# Runs inside the attacher: N loops at once, the statistics around them.
measure() {  # N
  local owner=$PPID
  python3 bench/progstats.py snap "$owner" >"$WORK/before"
  for _ in $(seq "$1"); do "$B/histd_bench_loop" "$CALLS" >/dev/null & done
  wait
  python3 bench/progstats.py snap "$owner" >"$WORK/after"
  python3 bench/progstats.py delta "$WORK/before" "$WORK/after" $(( CALLS * $1 )) | cut -d' ' -f1
}
export -f measure
export B CALLS WORK
: >"$WORK/samples"
for r in $(seq "$ROUNDS"); do
  for v in $(printf '%s\n' percpu shared | shuf); do
    for n in 1 "$CPUS"; do
      ns=$("$B/histd_bench_attach" "$B/bpf/hand.bpf.o" "hand_nr_$v:syscalls:sys_enter_getppid" -- \
             bash -c "measure $n")
      echo "$v $n $ns" >>"$WORK/samples"
    done
  done
  echo "shared: round $r/$ROUNDS done" >&2
done
python3 - "$WORK/samples" "$CPUS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    v, n, ns = line.split()
    rows.setdefault((v, int(n)), []).append(float(ns))
print("count by __syscall_nr (one key updated by every CPU): in-kernel ns per run")
print(f"{'table':10} {'loops':>5} {'ns/run':>8} {'(min..max)':>14}")
for (v, n), s in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"{v:10} {n:5} {statistics.median(s):8.1f} {'(%.0f..%.0f)' % (min(s), max(s)):>14}")
PY
