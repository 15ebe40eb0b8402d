#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What instances (mkdir instances/NAME) cost: histd's resident size (RSS of
# histd alone: histd-cc's does not change with instances) and the kernel
# memory its trace rings hold (the memlock of the BPF ring buffers whose fds
# histd has). ROUNDS rounds (default 3), each in a fresh histd; medians
# (min..max).
#   idle           histd started, nothing traced
#   32 idle        32 instances made, each one's trace and buffer_size_kb read
#   32 recording   then syscalls:sys_enter_getppid enabled in each, a
#                  getppid() made (a bash starting) and each one's trace read
#                  (the event filtered on the bench's comm: other tasks'
#                  calls would fill the buffers)
#   after rmdir    the 32 removed again, 6 s later
# Then CYCLES cycles (default 1000) in one fresh histd whose top tree
# records sys_enter_getppid: mkdir, sys_enter_getppid enabled, a
# getppid(), a trace_marker write, the trace read, rmdir; RSS before the
# first cycle, after 100, 500 and CYCLES, and 6 s later; the seconds the
# cycles took.
# And the peer, in the same rounds: the kernel's own instances, 32 made in
# the machine's tracefs the same way (their rings' buffer_total_size_kb and
# how much MemAvailable fell), recording the same event, then removed.
#   bash bench/instances.sh   (as root, from a built tree; HISTD_BUILD=dir:
#                             that build; ROUNDS, CYCLES)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/rounds.sh
ROUNDS=${ROUNDS:-3}
CYCLES=${CYCLES:-1000}
B=$(realpath "${HISTD_BUILD:-build}")
WORK=$(mktemp -d /tmp/histd-instances.XXXXXX)
HISTD=
# The kernel's instances this bench makes: histd-bench-<pid>-<n>.
KTRACE=/sys/kernel/tracing
KNAME=$KTRACE/instances/histd-bench-$$
kernel_cleanup() {
  local d
  for d in "$KNAME"-*; do [ ! -d "$d" ] || rmdir "$d"; done
}
trap 'kernel_cleanup; bench_cleanup' EXIT
N=32
E=events/syscalls/sys_enter_getppid
# A bash named after the bench: the one task whose getppid() is recorded.
ln -s "$(command -v bash)" "$WORK/instbench"
record() {
  echo 'comm == "instbench"' >"$1/$E/filter"
  echo 1 >"$1/$E/enable"
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$HISTD/status"; }
# KiB of the BPF ring buffers (map type 27) histd holds an fd of.
ring_kib() {
  local f total=0
  for f in /proc/"$HISTD"/fdinfo/*; do
    total=$((total + $(awk '/^map_type:/ {t = $2} /^memlock:/ {m = $2} END {print (t == 27 ? int(m / 1024) : 0)}' \
      "$f" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
fresh_histd() {
  [ -z "$HISTD" ] || { kill -TERM "$HISTD" 2>/dev/null || true; wait "$HISTD" 2>/dev/null || true; }
  HISTD=
  rm -rf "$WORK/state"
  start_histd --max-instances "$N"
  sleep 1
}
# RSS[name], RING[name]: each round's figures at the point `name`.
declare -A RSS=() RING=()
snap() {
  RSS[$1]+="$(rss_kib) "
  RING[$1]+="$(ring_kib) "
}

avail_kib() { awk '/^MemAvailable:/ {print $2}' /proc/meminfo; }
# KRING[name], KMEM[name]: the kernel's instances' rings (KiB) and the fall
# of MemAvailable since before their mkdir (KiB), at the point `name`.
declare -A KRING=() KMEM=()
ksnap() {
  local d total=0
  for d in "$KNAME"-*; do [ ! -d "$d" ] || total=$((total + $(cat "$d/buffer_total_size_kb"))); done
  KRING[$1]+="$total "
  KMEM[$1]+="$((AVAIL0 - $(avail_kib))) "
}
# The same steps in histd's tree and in the kernel's: N instances PREFIX<n>
# made and each one's trace read, then each recording, then removed; SNAP
# takes the figures at each point, WAIT seconds after the removal.
#   instances_round PREFIX SNAP WAIT
instances_round() {
  local prefix=$1 snap=$2 i
  for i in $(seq "$N"); do
    mkdir "$prefix$i"
    cat "$prefix$i/trace" "$prefix$i/buffer_size_kb" >/dev/null
  done
  sleep 1
  "$snap" idle32
  for i in $(seq "$N"); do record "$prefix$i"; done
  "$WORK/instbench" -c :
  sleep 1
  for i in $(seq "$N"); do cat "$prefix$i/trace" >/dev/null; done
  "$snap" rec32
  for i in $(seq "$N"); do rmdir "$prefix$i"; done
  sleep "$3"
  "$snap" removed
}

for r in $(seq "$ROUNDS"); do
  AVAIL0=$(avail_kib)
  instances_round "$KNAME-" ksnap 1
  fresh_histd
  snap idle
  instances_round "$WORK/mnt/instances/i" snap 6  # 6 s: past the tree's trim of freed heap (fs::Tree)
  echo "round $r done" >&2
done

med() { python3 -c 'import sys, statistics as s; d=float(sys.argv[1]); v=[float(x)/d for x in sys.argv[2:]]; print("%.1f (%.1f..%.1f)" % (s.median(v), min(v), max(v)))' "$@"; }
echo "histd's resident size, MiB; its trace rings' kernel memory, MiB"
echo "  idle                          $(med 1024 ${RSS[idle]})   rings $(med 1024 ${RING[idle]})"
echo "  $N idle instances              $(med 1024 ${RSS[idle32]})   rings $(med 1024 ${RING[idle32]})"
echo "  $N recording instances         $(med 1024 ${RSS[rec32]})   rings $(med 1024 ${RING[rec32]})"
echo "  after their rmdir             $(med 1024 ${RSS[removed]})   rings $(med 1024 ${RING[removed]})"
echo "the kernel's instances: their rings, MiB; MemAvailable's fall since before their mkdir, MiB"
echo "  $N idle instances              rings $(med 1024 ${KRING[idle32]})   memory $(med 1024 ${KMEM[idle32]})"
echo "  $N recording instances         rings $(med 1024 ${KRING[rec32]})   memory $(med 1024 ${KMEM[rec32]})"
echo "  after their rmdir             rings $(med 1024 ${KRING[removed]})   memory $(med 1024 ${KMEM[removed]})"

fresh_histd
record "$WORK/mnt"
"$WORK/instbench" -c :
sleep 1
cat "$WORK/mnt/trace" >/dev/null
C=$WORK/mnt/instances/c
line="before:$(rss_kib)"
t0=$(date +%s.%N)
for i in $(seq "$CYCLES"); do
  mkdir "$C"
  record "$C"
  "$WORK/instbench" -c :
  echo "cycle $i" >"$C/trace_marker"
  cat "$C/trace" >/dev/null
  rmdir "$C"
  case $i in 100 | 500 | "$CYCLES") line+=" after_$i:$(rss_kib)" ;; esac
done
t1=$(date +%s.%N)
sleep 6  # past the tree's trim of freed heap (fs::Tree)
python3 - "$CYCLES" "$t0" "$t1" $line "6_s_later:$(rss_kib)" <<'PY'
import sys
n, t0, t1 = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"{n} mkdir/rmdir cycles ({t1 - t0:.0f} s), histd's resident size, MiB")
for arg in sys.argv[4:]:
    label, kib = arg.split(":")
    print(f"  {label.replace('_', ' '):12s} {int(kib) / 1024:6.1f}")
PY
