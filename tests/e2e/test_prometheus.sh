#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A small fleet on one machine, scraped by a real Prometheus (Debian's 2.42):
# two histds (two mounts, two ports), found through a file_sd target file,
# queried over Prometheus's HTTP API. Across both, histogram_quantile() of
# the summed rate lands in the bucket the known workload put its values in;
# a counter keeps rising across a histd restart; a clear is a reset that
# rate() handles; a removed trigger's series go stale.
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
# One write each, so that every series exists before the workload.
for _ in $(seq 20); do
  [ "$(counted "$A_TRIGGER")" -gt 0 ] || echo "1 300" >&7
  [ "$(counted "$B_TRIGGER")" -gt 0 ] || echo "1 3000" >&8
  sleep 0.2
  [ "$(counted "$A_TRIGGER")" -gt 0 ] && [ "$(counted "$B_TRIGGER")" -gt 0 ] && break
done

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
both() { printf '127.0.0.1:%s %s\n127.0.0.1:%s %s' "$PA" "$(counted "$A_TRIGGER")" "$PB" "$(counted "$B_TRIGGER")" | sort; }
expect_eq "both histds scraped, with what each counted" "$(both)" "$(wait_for "$COUNT" "$(both)"; query "$COUNT")"

# The workload: 95 writes of 300 bytes counted by A (log2 bucket 512), 5 of
# 3000 by B (bucket 4096). Of the 100, the 50th is in A's bucket, the 99th
# in B's: only a quantile over both instances finds it there.
echo "95 300" >&7; echo "5 3000" >&8
wait_for "$COUNT" "$(both)" >/dev/null
sleep 2  # another scrape of each, after the counts were in
q() { query "histogram_quantile($1, sum by (le) (increase(histd_write_sizes_count_bucket[1m])))" | cut -d' ' -f2; }
p99=$(query 'histd:write_sizes:p99_5m' | cut -d' ' -f2); p50=$(q 0.5)
echo "across both: p50 $p50, p99 $p99"
in_bucket() { /usr/bin/python3 -c "import sys; v = float('$1'); print('yes' if $2 < v <= $3 else 'no: %s' % v)"; }
expect_eq "the recorded p99 across both (docs' rule) is in (2048, 4096], B's bucket" "yes" "$(in_bucket "$p99" 2048 4096)"
expect_eq "p50 across both is in (256, 512], A's bucket" "yes" "$(in_bucket "$p50" 256 512)"
expect_eq "A alone has no p99 there" "yes" "$(in_bucket "$(query "histogram_quantile(0.99, \
sum by (le) (increase(histd_write_sizes_count_bucket{instance=\"127.0.0.1:$PA\"}[1m])))" | cut -d' ' -f2)" 256 512)"

# A restart of A: its counts persist, no counter reset.
before=$(counted "$A_TRIGGER")
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start --metrics-listen "127.0.0.1:$PA"
echo "4 300" >&7
sleep 0.5
A_COUNT="$COUNT{instance=\"127.0.0.1:$PA\"}"
after=$(counted "$A_TRIGGER")
expect_eq "after A's restart its table went on from $before" "yes" "$([ "$after" -gt "$before" ] && echo yes)"
expect_eq "and so did its counter" "127.0.0.1:$PA $after" "$(wait_for "$A_COUNT" "127.0.0.1:$PA $after"; query "$A_COUNT")"
expect_eq "which Prometheus saw as no reset" "127.0.0.1:$PA 0" "$(query "resets($A_COUNT[2m])")"

# A clear: the counter drops to 0 and rises again, a reset rate() handles.
echo "hist:keys=count.log2:vals=count:name=write_sizes:clear if $A_IS" >>"$A_TRIGGER"
wait_for "$A_COUNT" "" 10 >/dev/null  # the table is empty: no series until the next write
echo "3 300" >&7
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
