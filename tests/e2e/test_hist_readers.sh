#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What open hist readers may pin, and what they may hold up. A 100k-entry
# table (keys=fd:size=131072, ~2.4 MB of text) held open by 100 fds: histd
# grows by one shared text, not 100 copies (it grew by ~260 MB before), both
# while the table is idle and while it changes between opens (then opens
# past the cap share the newest text); every fd reads the whole table. And
# a trigger write answers within a second while 4 readers re-read the table
# in a loop. Prints the RSS figures (docs/reliability.md).
source "$(dirname "$0")/lib.sh"
CLOSE=$(dirname "$HISTD_BIN")/histd_bench_close
[ -x "$CLOSE" ] || { echo "no $CLOSE"; exit 1; }
LOOPS=()
test_cleanup() { for p in "${LOOPS[@]}"; do kill "$p" 2>/dev/null || true; done; }
histd_start
C=$MNT/events/syscalls/sys_enter_close
H=$C/hist
# Fds from 1<<25 up to 3<<24: nothing else of this checkout's tests closes
# them (test_status's flood of closes, run beside this one, starts at 1<<24
# and stays below; close(-1) is fd 4294967295, above), closed by a closer of
# this test's own name (lib.sh): this test run elsewhere on the machine
# (another checkout, a container) closes the same fds.
BASE=33554432
CLOSER_COMM=$(own_comm closer)
CLOSER=$(comm_link "$CLOSER_COMM" "$CLOSE")
ONLY="common_comm == \"$CLOSER_COMM\" && fd >= $BASE && fd < 50331648"
close_fds() { echo go | "$CLOSER" "$1" "$BASE" >/dev/null; }
echo "hist:keys=fd:size=131072 if $ONLY" >"$C/trigger"
close_fds 100000
rss() { awk '/^VmRSS/ {print $2}' "/proc/$HISTD_PID/status"; }  # KiB
entries=$(sed -n 's/^ *Entries: //p' "$H")
size=$(wc -c <"$H")
echo "table: $entries entries, $size bytes of text"
expect_eq "the table holds 100000 entries (drops tolerated)" "yes" "$([ "$entries" -ge 99000 ] && echo yes || echo no)"

# open_readers N OUT: N fds open on the hist file at once (each open makes or
# shares its text), held until OUT/go appears; each fd's text goes to OUT/<i>.
open_readers() {
  rm -rf "$2"; mkdir -p "$2"
  python3 - "$H" "$1" "$2" <<'EOF' &
import os, sys, time
path, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fds = [os.open(path, os.O_RDONLY) for _ in range(n)]
open(os.path.join(out, "opened"), "w").close()
while not os.path.exists(os.path.join(out, "go")):
    time.sleep(0.05)
for i, fd in enumerate(fds):
    with open(os.path.join(out, str(i)), "wb") as f:
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            f.write(b)
    os.close(fd)
EOF
  READER=$!
  for _ in $(seq 1200); do [ -e "$2/opened" ] && return; sleep 0.05; done
  echo "the readers did not open"; exit 1
}

# whole_tables DIR: how many of DIR/0..99 hold a whole table: at least the
# first run's entries, and as many rows as their own Entries line says.
whole_tables() {
  for i in $(seq 0 99); do
    awk -v min="$entries" '/^\{/ {rows++} /^ *Entries: / {n = $2}
      END {print (n == rows && n >= min) ? "whole" : "cut"}' "$1/$i"
  done | grep -c '^whole$'
}

# An idle table: every open shares one text.
sleep 6  # histd hands back the heap of the first reads (5 s after them)
before=$(rss)
open_readers 100 "$WORK/idle"
after=$(rss)
touch "$WORK/idle/go"; wait "$READER"
echo "100 fds, idle table: VmRSS ${before} KiB -> ${after} KiB (+$(((after - before) / 1024)) MiB)"
expect_eq "100 fds on an idle table pin less than 40 MiB" "yes" "$([ $((after - before)) -lt 40960 ] && echo yes || echo no)"
expect_eq "every fd read the whole table" "100" "$(whole_tables "$WORK/idle")"
# Other BPF work on the CPU (ctest -j2) makes the kernel skip events: the
# Missed lines may grow between opens; the table itself may not.
texts=$(for f in "$WORK"/idle/[0-9]*; do grep -vi 'missed' "$f" | md5sum; done | sort -u | wc -l)
if [ "$texts" != 1 ]; then  # what changed on the idle table: the first two that differ
  first=$(ls "$WORK"/idle/[0-9]* | head -1)
  for f in "$WORK"/idle/[0-9]*; do
    cmp -s "$first" "$f" || { diff <(grep -vi missed "$first") <(grep -vi missed "$f") | head -20; break; }
  done
fi
expect_eq "all the same table" "1" "$texts"

# A table that changes between opens: new texts up to the cap, then shared.
( while :; do close_fds 50; done ) &
LOOPS+=($!)
sleep 6
before=$(rss)
open_readers 100 "$WORK/busy"
after=$(rss)
touch "$WORK/busy/go"; wait "$READER"
kill "${LOOPS[0]}"; wait "${LOOPS[0]}" 2>/dev/null || true; LOOPS=()
echo "100 fds, changing table: VmRSS ${before} KiB -> ${after} KiB (+$(((after - before) / 1024)) MiB)"
expect_eq "100 fds on a changing table pin less than 96 MiB" "yes" \
  "$([ $((after - before)) -lt 98304 ] && echo yes || echo no)"
# A key the first run missed (other BPF work on the CPU) may arrive now: each
# text must be whole in itself, its rows as many as its Entries line.
expect_eq "every fd read the whole table" "100" "$(whole_tables "$WORK/busy")"

# Writers stay fast while readers loop: each read renders outside the
# engine's lock (the table changes: a pause and a continue count as changes).
# Four tables of 100k entries on the event: a read renders ~20 MB (hist)
# or ~60 MB (hist.json).
for k in fd,common_pid fd,common_cpu fd.hex; do
  echo "hist:keys=$k:size=131072 if $ONLY" >>"$C/trigger"
done
close_fds 100000
echo "the event's hist: $(wc -c <"$H") bytes"
for f in hist hist.json hist hist.json; do
  ( while [ ! -e "$WORK/stop" ]; do cat "$C/$f" >/dev/null; done ) &
  LOOPS+=($!)
done
sleep 1
slowest=0
for i in $(seq 10); do
  for cmd in pause cont; do
    t0=$(date +%s%N)
    timeout 5 bash -c "echo 'hist:keys=fd:size=131072:$cmd if $ONLY' >> '$C/trigger'" || true
    ms=$((($(date +%s%N) - t0) / 1000000))
    [ "$ms" -gt "$slowest" ] && slowest=$ms
  done
done
echo "20 trigger writes while 4 readers loop (hist, hist.json): the slowest took $slowest ms"
expect_eq "every trigger write answered within a second" "yes" "$([ "$slowest" -lt 1000 ] && echo yes || echo no)"
touch "$WORK/stop"; for p in "${LOOPS[@]}"; do wait "$p" 2>/dev/null || true; done; LOOPS=()
expect_eq "the triggers are active" "4" "$(grep -c 'active' "$C/trigger")"
finish
