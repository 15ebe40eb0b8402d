#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What a metrics scrape costs: a table of KEYS label sets (100k
# series: keys=fd, one counter each) scraped over HTTP from histd-exporter in
# the text format (plain and gzipped) and in OpenMetrics, beside a read of the same table's hist
# file (the reference: the same reads, rendered as the kernel does), and
# beside the peer: Debian's prometheus-node-exporter serving the same series
# from its textfile collector alone (histd's text written to a .prom file,
# which it reads and parses on each scrape, as a fleet's exporters of
# script-made metrics do); and what histd's RSS grows by while it answers. Then whether an idle exporter costs
# anything per event: the getppid() loop under the same trigger, with histd
# run without and with --metrics-listen, in interleaved rounds.
#   bash bench/metrics.sh     (as root; ROUNDS=7 KEYS=100000 CALLS=2000000,
#                              HISTD_BUILD=dir: that build, else build/)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
KEYS=${KEYS:-100000}
CALLS=${CALLS:-2000000}
B=$(realpath "${HISTD_BUILD:-build}")
WORK=$(mktemp -d /tmp/histd-bench-metrics.XXXXXX)
source bench/metrics_setup.sh
exporter_user
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  for m in "$WORK"/mnt-*; do mountpoint -q "$m" && fusermount3 -u "$m"; done
  drop_exporter_user
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start NAME [OPTION...]: a histd on $WORK/mnt-NAME; sets HISTD.
start() {
  local name=$1; shift
  mkdir -p "$WORK/mnt-$name" "$WORK/$name"
  "$B/histd" --foreground --mount "$WORK/mnt-$name" --socket "$WORK/$name/sock" --state-dir "$WORK/$name/state" \
    --pin-dir "" --config-dir "" --metrics-user "$EXPORTER_USER" "$@" >"$WORK/$name.log" 2>&1 &
  HISTD=$!
  PIDS+=("$HISTD")
  for _ in $(seq 100); do [ -e "$WORK/mnt-$name/events" ] && return; sleep 0.1; done
  echo "histd did not start"; cat "$WORK/$name.log"; exit 1
}
rss() { awk -v k="$2" '$1 == k ":" {print $2}' "/proc/$1/status"; }  # KiB

# ---- the scrape of KEYS series
PORT=$(free_port)
start scrape --metrics-listen "127.0.0.1:$PORT" --metrics-max-series $((KEYS * 2))
fill_fd_keys "$B" "$WORK/mnt-scrape/events/syscalls/sys_enter_close/trigger" "$KEYS" 131072 bench_fds
HIST=$WORK/mnt-scrape/events/syscalls/sys_enter_close/hist
before=$(rss "$HISTD" VmRSS); hwm_before=$(rss "$HISTD" VmHWM)
exporter=$(pgrep -P "$HISTD" -x histd-exporter | head -1)
exporter_before=$(rss "$exporter" VmRSS)
# The peer: node_exporter's textfile collector serving histd's text.
mkdir -p "$WORK/textfile"
curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/textfile/histd.prom"
NODE_PORT=$(free_port)
prometheus-node-exporter --web.listen-address="127.0.0.1:$NODE_PORT" --collector.disable-defaults \
  --collector.textfile --collector.textfile.directory="$WORK/textfile" >"$WORK/node.log" 2>&1 &
NODE=$!
PIDS+=("$NODE")
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$NODE_PORT/metrics" && break; sleep 0.1; done
node_before=$(rss "$NODE" VmRSS)
python3 - "$PORT" "$HIST" "$ROUNDS" "$NODE_PORT" <<'PY'
import gzip, statistics, sys, time, urllib.request
port, hist, rounds, node_port = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
# name: (Accept, Accept-Encoding[, port]); "file": the hist file
kinds = {"text": (None, None), "text, gzip": (None, "gzip"),
         "openmetrics": ("application/openmetrics-text; version=1.0.0", None), "hist": "file",
         "node": (None, None, node_port)}
times = {k: [] for k in kinds}
sizes = {}
series = 0
for r in range(rounds):
    order = list(kinds) if r % 2 == 0 else list(reversed(kinds))
    for k in order:
        t0 = time.perf_counter()
        if kinds[k] == "file":
            with open(hist, "rb") as f:
                body = f.read()
        else:
            accept, encoding = kinds[k][:2]
            where = kinds[k][2] if len(kinds[k]) > 2 else port
            headers = {}
            if accept: headers["Accept"] = accept
            if encoding: headers["Accept-Encoding"] = encoding
            req = urllib.request.Request(f"http://127.0.0.1:{where}/metrics", headers=headers)
            with urllib.request.urlopen(req, timeout=60) as resp:
                body = resp.read()
                if resp.headers.get("Content-Encoding") == "gzip":
                    sizes[k] = len(body)
                    body = gzip.decompress(body)
        times[k].append((time.perf_counter() - t0) * 1000)
        sizes.setdefault(k, len(body))
        if k in ("text", "node"):
            n = sum(1 for line in body.decode().splitlines() if line.startswith("histd_bench_fds_hitcount_total{"))
            if k == "text":
                series = n
            elif n != series:
                sys.exit(f"node_exporter served {n} of the {series} series")
print(f"{series} series of one table ({rounds} rounds, interleaved): ms per request, median (min..max); bytes sent")
labels = {"hist": "hist file (reference)", "node": "node_exporter textfile"}
for k in kinds:
    print(f"  {labels.get(k, 'GET /metrics ' + k):<28} "
          f"{statistics.median(times[k]):7.1f} ({min(times[k]):.1f}..{max(times[k]):.1f})  {sizes[k] / 1e6:6.2f} MB")
PY
after=$(rss "$HISTD" VmRSS); hwm_after=$(rss "$HISTD" VmHWM)
echo "histd RSS: $((before / 1024)) MiB before the scrapes, $((after / 1024)) MiB after;" \
  "peak $((hwm_before / 1024)) -> $((hwm_after / 1024)) MiB (+$(((hwm_after - hwm_before) / 1024)) MiB while answering)"
echo "histd-exporter RSS: $((exporter_before / 1024)) MiB before the scrapes, $(($(rss "$exporter" VmRSS) / 1024)) MiB" \
  "after, peak $(($(rss "$exporter" VmHWM) / 1024)) MiB (+$((($(rss "$exporter" VmHWM) - exporter_before) / 1024)) MiB)"
echo "node_exporter RSS: $((node_before / 1024)) MiB before the scrapes, peak $(($(rss "$NODE" VmHWM) / 1024)) MiB"
kill "$NODE"; wait "$NODE" 2>/dev/null || true
kill "$HISTD"; wait "$HISTD" 2>/dev/null || true

# ---- an idle exporter, per event
start plain
PLAIN=$HISTD
start exported --metrics-listen "127.0.0.1:$(free_port)"
EXPORTED=$HISTD
for name in plain exported; do
  echo 'hist:keys=common_pid' >"$WORK/mnt-$name/events/syscalls/sys_enter_getppid/trigger"
  echo 0 >"$WORK/mnt-$name/events/syscalls/sys_enter_getppid/enable" 2>/dev/null || true
done
# One histd's trigger paused at a time: the loop runs under one program.
pause() { echo "hist:keys=common_pid:$2" >>"$WORK/mnt-$1/events/syscalls/sys_enter_getppid/trigger"; }
declare -A ns=()
for r in $(seq "$ROUNDS"); do
  for name in $( ((r % 2)) && echo "plain exported" || echo "exported plain"); do
    other=$([ "$name" = plain ] && echo exported || echo plain)
    pause "$other" pause; pause "$name" cont
    ns[$name]+="$("$B/histd_bench_loop" "$CALLS") "
  done
done
python3 - "${ns[plain]}" "${ns[exported]}" <<'PY'
import statistics, sys
plain, exported = ([float(x) for x in a.split()] for a in sys.argv[1:3])
print("getppid() under keys=common_pid, ns per call, median (min..max):")
for name, xs in (("histd", plain), ("histd --metrics-listen (idle)", exported)):
    print(f"  {name:<30} {statistics.median(xs):6.1f} ({min(xs):.1f}..{max(xs):.1f})")
print(f"  ratio {statistics.median(exported) / statistics.median(plain):.3f}")
PY
