#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A small fleet on one machine, scraped by a real Prometheus (Debian's 2.42):
# two histds (two mounts, two ports), found through a file_sd target file,
# queried over Prometheus's HTTP API. Two workloads of known, sparse size
# distributions: histogram_quantile() per histd and across both (sum by le)
# lands in the bucket that holds the quantile, and no bucket's first hit is
# lost to rate(); the start time holds still; a counter keeps rising across
# a histd restart; a clear is a reset that rate() handles; a removed
# trigger's series go stale.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || { echo "FAIL: prometheus is needed (apt-get install prometheus)"; exit 1; }
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PA=$(free_port); PB=$(free_port); PP=$(free_port)
B_PID= PROM= WA= WB=
test_cleanup() {
  for p in $PROM $WA $WB; do kill "$p" 2>/dev/null || true; done
  if [ -n "$B_PID" ] && kill -0 "$B_PID" 2>/dev/null; then kill -TERM "$B_PID"; wait "$B_PID" 2>/dev/null || true; fi
  mountpoint -q "$WORK/mnt-b" 2>/dev/null && fusermount3 -u "$WORK/mnt-b" 2>/dev/null || true
  rm -rf "$PIN-b"
}
histd_start --metrics-listen "127.0.0.1:$PA"
mkdir -p "$WORK/mnt-b"
"$HISTD_BIN" --foreground --mount "$WORK/mnt-b" --socket "$WORK/b/histd.sock" --state-dir "$WORK/b/state" \
  --pin-dir "$PIN-b" --config-dir "$WORK/b/triggers.d" --metrics-listen "127.0.0.1:$PB" --metrics-user "$EXPORTER_USER" >"$WORK/b.log" 2>&1 &
B_PID=$!
await_tree "$WORK/mnt-b" "$B_PID" "$WORK/b.log"


# writer NAME: a process that makes N writes of SIZE bytes to /dev/null for
# each "N SIZE" line on its fifo; each histd counts one writer's writes,
# filtered on its comm, $(own_comm NAME) (lib.sh: never on its pid).
writer() {
  mkfifo "$WORK/$1.in"
  "$(comm_link "$(own_comm "$1")" /usr/bin/python3)" -u - "$WORK/$1.in" >"$WORK/$1.pid" <<'PY' &
import os, sys
print(os.getpid())
null = os.open("/dev/null", os.O_WRONLY)
with open(sys.argv[1]) as cmds:
    for line in cmds:
        n, size = map(int, line.split())
        for _ in range(n):
            os.write(null, b"x" * size)
PY
  for _ in $(seq 50); do [ -s "$WORK/$1.pid" ] && break; sleep 0.1; done
}
writer a; WA=$(cat "$WORK/a.pid"); exec 7>"$WORK/a.in"
writer b; WB=$(cat "$WORK/b.pid"); exec 8>"$WORK/b.in"
A_IS="common_comm == \"$(own_comm a)\"" B_IS="common_comm == \"$(own_comm b)\""
A_TRIGGER="$MNT/events/syscalls/sys_enter_write/trigger"
B_TRIGGER="$WORK/mnt-b/events/syscalls/sys_enter_write/trigger"
echo "hist:keys=count.log2:vals=count:name=write_sizes if $A_IS" >"$A_TRIGGER"
echo "hist:keys=count.log2:vals=count:name=write_sizes if $B_IS" >"$B_TRIGGER"
# counted FILE: the writes a histd's table holds (its hitcount): what
# Prometheus must show. The kernel may skip an event while another BPF
# program runs on the CPU (tests beside this one): the table, not the
# writer, says what was counted.
counted() { awk '/^\{/ {for (i = 1; i < NF; i++) if ($i == "hitcount:") n += $(i + 1)} END {print n + 0}' \
  "$(dirname "$1")/hist"; }
# docs/metrics.md's scrape configuration and rules, as written there but
# for their paths and a 1 s scrape interval (the test cannot wait 15 s).
doc_block() {  # the ```yaml block of docs/metrics.md whose first line is "# $1"
  awk -v first="# $1" '/^```yaml$/ {getline; if ($0 == first) {on = 1; print; next}} /^```$/ {on = 0} on' \
    "$(dirname "$0")/../../docs/metrics.md"
}
doc_block histd-rules.yml >"$WORK/histd-rules.yml"
expect_eq "the documented rules pass promtool check rules" "SUCCESS: 3 rules found" \
  "$(promtool check rules "$WORK/histd-rules.yml" 2>&1 | grep -o 'SUCCESS.*')"
{ echo "global: {scrape_interval: 1s, evaluation_interval: 1s}"
  doc_block "prometheus.yml: scrape every histd in histd-targets.json" |
    sed -e "s#/etc/prometheus/#$WORK/#g" -e 's/scrape_interval: 15s/scrape_interval: 1s/'
} >"$WORK/prometheus.yml"
cat >"$WORK/histd-targets.json" <<EOF
[{"targets": ["127.0.0.1:$PA", "127.0.0.1:$PB"], "labels": {"job": "histd"}}]
EOF
expect_eq "with the documented scrape configuration (promtool check config)" "yes" \
  "$(promtool check config "$WORK/prometheus.yml" >/dev/null 2>&1 && echo yes || promtool check config "$WORK/prometheus.yml" 2>&1)"
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom" \
  --web.listen-address="127.0.0.1:$PP" >"$WORK/prometheus.log" 2>&1 &
PROM=$!

# query EXPR: the instant vector's values, "instance value" per line, sorted.
query() {
  /usr/bin/python3 - "http://127.0.0.1:$PP/api/v1/query" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
url = sys.argv[1] + "?" + urllib.parse.urlencode({"query": sys.argv[2]})
try:
    with urllib.request.urlopen(url, timeout=5) as r:
        doc = json.load(r)
except Exception:
    sys.exit(0)
for s in sorted(doc["data"]["result"], key=lambda s: s["metric"].get("instance", "")):
    print(s["metric"].get("instance", "-"), s["value"][1])
PY
}
# wait_for EXPR WANT [SECONDS]: until query EXPR prints WANT.
wait_for() {
  local got=
  for _ in $(seq $((${3:-30} * 4))); do
    got=$(query "$1"); [ "$got" = "$2" ] && return 0; sleep 0.25
  done
  echo "waited for $1: got '$got'"
}
up="up{job=\"histd\"}"
wait_for "$up" "$(printf '127.0.0.1:%s 1\n127.0.0.1:%s 1' "$PA" "$PB" | sort)" 40
COUNT=histd_write_sizes_count_count

# Before any write both histograms are there, all zeros.
both() { printf '127.0.0.1:%s %s\n127.0.0.1:%s %s' "$PA" "$(counted "$A_TRIGGER")" "$PB" "$(counted "$B_TRIGGER")" | sort; }
expect_eq "both histds scraped, their histograms there before a write" "$(both)" \
  "$(wait_for "$COUNT" "$(both)"; query "$COUNT")"
sleep 2  # a scrape or two of the zeros

# The workloads, sparse: A writes 70% of 100 bytes, 20% of 3000, 10% of
# 60000; B 40% of 10 bytes, 40% of 1000, 20% of 3000. Over both (200
# writes) the 100th is 100 bytes, the 180th 3000, the 198th 60000.
echo "70 100" >&7; echo "20 3000" >&7; echo "10 60000" >&7
echo "40 10" >&8; echo "40 1000" >&8; echo "20 3000" >&8
wait_for "$COUNT" "$(both)" >/dev/null
sleep 3  # more scrapes, after the counts were in
in_bucket() { /usr/bin/python3 -c "import sys; v = float('$1'); print('yes' if $2 < v <= $3 else 'no: %s' % v)"; }
# quantile Q [SELECTOR]: as the docs' rule computes it, over the last minute.
quantile() {
  query "histogram_quantile($1, sum by (le) (rate(histd_write_sizes_count_bucket${2:-}[1m])))" | cut -d' ' -f2
}
A_SEL="{instance=\"127.0.0.1:$PA\"}" B_SEL="{instance=\"127.0.0.1:$PB\"}"
expect_eq "A's p50 is in (64, 128], where 70% of its writes are" "yes" "$(in_bucket "$(quantile 0.5 "$A_SEL")" 64 128)"
expect_eq "A's p99 is in (32768, 65536]" "yes" "$(in_bucket "$(quantile 0.99 "$A_SEL")" 32768 65536)"
expect_eq "B's p50 is in (512, 1024]" "yes" "$(in_bucket "$(quantile 0.5 "$B_SEL")" 512 1024)"
expect_eq "p50 across both is in (64, 128]" "yes" "$(in_bucket "$(quantile 0.5)" 64 128)"
expect_eq "p90 across both is in (2048, 4096]" "yes" "$(in_bucket "$(quantile 0.9)" 2048 4096)"
p99=$(query 'histd:write_sizes:p99_5m' | cut -d' ' -f2)
expect_eq "the recorded p99 across both (docs' rule) is in (32768, 65536]" "yes" "$(in_bucket "$p99" 32768 65536)"
# Every write is at most 65536 bytes: the share rate() finds is 1, its
# first hits included (the bucket's series was there, at 0, before them).
expect_eq "every write is counted at or below le=65536, first hits and all" "1" \
  "$(query 'sum(rate(histd_write_sizes_count_bucket{le="65536"}[1m])) / sum(rate(histd_write_sizes_count_bucket{le="+Inf"}[1m]))' | cut -d' ' -f2)"
expect_eq "histd's start time held still across the scrapes" "$(printf '127.0.0.1:%s 0\n127.0.0.1:%s 0' "$PA" "$PB" | sort)" \
  "$(query 'changes(histd_start_time_seconds[1m])')"

# A restart of A: its counts persist, no counter reset.
before=$(counted "$A_TRIGGER")
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start --metrics-listen "127.0.0.1:$PA"
echo "4 100" >&7
sleep 0.5
A_COUNT="$COUNT{instance=\"127.0.0.1:$PA\"}"
after=$(counted "$A_TRIGGER")
expect_eq "after A's restart its table went on from $before" "yes" "$([ "$after" -gt "$before" ] && echo yes)"
expect_eq "and so did its counter" "127.0.0.1:$PA $after" "$(wait_for "$A_COUNT" "127.0.0.1:$PA $after"; query "$A_COUNT")"
expect_eq "which Prometheus saw as no reset" "127.0.0.1:$PA 0" "$(query "resets($A_COUNT[2m])")"

# A clear: the counter drops to 0 and rises again, a reset rate() handles.
echo "hist:keys=count.log2:vals=count:name=write_sizes:clear if $A_IS" >>"$A_TRIGGER"
wait_for "$A_COUNT" "127.0.0.1:$PA 0" 10 >/dev/null  # the table is empty: its histogram reads 0
echo "3 100" >&7
sleep 0.5
wait_for "$A_COUNT" "127.0.0.1:$PA $(counted "$A_TRIGGER")" >/dev/null
expect_eq "the clear is one reset" "127.0.0.1:$PA 1" "$(query "resets($A_COUNT[2m])")"
expect_eq "which increase() counts across: $after before it, more after (no negative rate)" "yes" \
  "$(query "increase($A_COUNT[2m])" | awk -v min="$after" '{print ($2 > min && $2 < 3 * min) ? "yes" : "no: " $2}')"

# A removed trigger's series go stale at the next scrape.
echo "!hist:keys=count.log2:vals=count:name=write_sizes if $B_IS" >>"$B_TRIGGER"
expect_eq "B's series are stale once its trigger is removed" "" \
  "$(wait_for "$COUNT{instance=\"127.0.0.1:$PB\"}" "" 10; query "$COUNT{instance=\"127.0.0.1:$PB\"}")"
expect_eq "A's are not" "127.0.0.1:$PA $(counted "$A_TRIGGER")" "$(query "$A_COUNT")"
exec 7>&- 8>&-
finish
