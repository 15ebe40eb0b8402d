#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# histd --textfile-dir: the metrics written whole to
# DIR/histd.prom for node_exporter's textfile collector, read by Debian's
# real prometheus-node-exporter; histd's own metrics in them; a table's
# label sets past --metrics-max-series counted, not cut silently; a full
# disk leaves the last whole file and no partial one, and writes go on
# once there is room again.
source "$(dirname "$0")/lib.sh"
NE=/usr/bin/prometheus-node-exporter
[ -x "$NE" ] || { echo "FAIL: $NE is needed (apt-get install prometheus-node-exporter)"; exit 1; }
TF=$WORK/textfile
NE_PID= WRITER=
test_cleanup() {
  for p in $NE_PID $WRITER; do kill "$p" 2>/dev/null || true; done
  mountpoint -q "$TF" && umount "$TF" || true
}

expect_eq "a textfile directory that is not there is refused at start" \
  "histd: --textfile-dir $WORK/nosuch: No such file or directory" \
  "$("$HISTD_BIN" --foreground --mount "$MNT" --socket "$WORK/x.sock" --state-dir "$WORK/x" --pin-dir "" \
      --textfile-dir "$WORK/nosuch" 2>&1 || true)"

# A small tmpfs, so that the test can fill it.
mkdir -p "$TF"
mount -t tmpfs -o size=256k tmpfs "$TF"
t0=$(date +%s)
histd_start --textfile-dir "$TF" --textfile-interval 1 --metrics-max-series 2

# Writes of three sizes from one process: three label sets, one past the cap.
mkfifo "$WORK/w.in"
WCOMM=$(own_comm writer)  # its name: the filter (lib.sh)
"$(comm_link "$WCOMM" /usr/bin/python3)" -u - "$WORK/w.in" >"$WORK/w.pid" <<'PY' &
import os, sys
print(os.getpid())
null = os.open("/dev/null", os.O_WRONLY)
with open(sys.argv[1]) as cmds:
    for line in cmds:
        for size in map(int, line.split()):
            os.write(null, b"x" * size)
PY
WRITER=$!
for _ in $(seq 50); do [ -s "$WORK/w.pid" ] && break; sleep 0.1; done
echo "hist:keys=count:name=tf_sizes if common_comm == \"$WCOMM\"" \
  >"$MNT/events/syscalls/sys_enter_write/trigger"
exec 7>"$WORK/w.in"
echo "300 400 500" >&7

P=$TF/histd.prom
for _ in $(seq 50); do grep -q '^histd_tf_sizes' "$P" 2>/dev/null && break; sleep 0.1; done
expect_eq "histd.prom holds the table" "yes" "$(grep -q '^histd_tf_sizes_hitcount_total' "$P" && echo yes)"
expect_eq "promtool check metrics: clean" "" "$(promtool check metrics <"$P" 2>&1)"
expect_eq "readable by a collector that is not root" "-rw-r--r--" "$(stat -c %A "$P")"
expect_eq "two series of the three label sets are written (--metrics-max-series 2)" "2" \
  "$(grep -c '^histd_tf_sizes_hitcount_total{' "$P")"
expect_eq "one of them the overflow, which sums the other two" 'histd_tf_sizes_hitcount_total{count="__overflow__"} 2' \
  "$(grep '^histd_tf_sizes_hitcount_total{count="__overflow__"' "$P")"
expect_eq "and they are counted, not cut silently" 'histd_metrics_series_dropped{table="histd_tf_sizes"} 2' \
  "$(grep '^histd_metrics_series_dropped' "$P")"
# histd's own metrics.
expect_eq "histd_build_info names histd's version" "$("$HISTD_BIN" --version | cut -d' ' -f2)" \
  "$(sed -n 's/^histd_build_info{version="\(.*\)"} 1$/\1/p' "$P")"
expect_eq "histd_triggers and its limit" "histd_triggers 1 histd_triggers_limit 1024" \
  "$(grep -E '^histd_triggers(_limit)? ' "$P" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "one trigger change timed in histd_activation_seconds" "1" \
  "$(sed -n 's/^histd_activation_seconds_count //p' "$P")"
expect_eq "the map memory the trigger takes, as histctl list --json says" \
  "$("$HISTCTL_BIN" --socket "$WORK/histd.sock" list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["usage"]["map_memory"])')" \
  "$(sed -n 's/^histd_map_memory_bytes //p' "$P")"
started=$(sed -n 's/^histd_start_time_seconds //p' "$P")
expect_eq "histd_start_time_seconds is when histd started" "yes" \
  "$(python3 -c "t = float('$started'); print('yes' if $t0 - 1 <= t <= $t0 + 10 else t)")"

# Debian's node_exporter reads it.
PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$NE" --collector.disable-defaults --collector.textfile --collector.textfile.directory="$TF" \
  --web.listen-address="127.0.0.1:$PORT" >"$WORK/ne.log" 2>&1 &
NE_PID=$!
scrape() { /usr/bin/python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$PORT/metrics', timeout=5).read().decode())" 2>/dev/null; }
for _ in $(seq 50); do scrape >"$WORK/ne.out" && break; sleep 0.1; done
expect_eq "node_exporter serves histd's table" "yes" \
  "$(grep -q '^histd_tf_sizes_hitcount_total{count="[345]00"} 1$' "$WORK/ne.out" && echo yes)"
expect_eq "and reads the file without an error" "node_textfile_scrape_error 0" \
  "$(grep '^node_textfile_scrape_error' "$WORK/ne.out")"

# A full disk: the last whole file stays, no partial one is left.
fill() { dd if=/dev/zero of="$TF/fill" bs=4k status=none 2>/dev/null || true; }
fill
sleep 0.3; rm -f "$TF/fill"; fill  # a write that was under way may have used the room freed
cp "$P" "$WORK/before.prom"
sleep 2.5
expect_eq "while the disk is full the last file stays as it was" "same" \
  "$(cmp -s "$P" "$WORK/before.prom" && echo same || echo changed)"
expect_eq "whole" "" "$(promtool check metrics <"$P" 2>&1)"
expect_eq "and no partial file is left beside it" "" "$(ls -A "$TF" | grep -v -x -e histd.prom -e fill || true)"
expect_eq "histd said so once" "1" "$(grep -c 'textfile-dir.*No space left on device' "$WORK/histd.log")"
rm -f "$TF/fill"
for _ in $(seq 40); do cmp -s "$P" "$WORK/before.prom" || break; sleep 0.1; done
expect_eq "with room again, histd writes again" "changed" "$(cmp -s "$P" "$WORK/before.prom" && echo same || echo changed)"
expect_eq "and says so" "1" "$(grep -c 'textfile-dir: writing .* again' "$WORK/histd.log")"
exec 7>&-
finish
