#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The page at / (issue 22): histd-exporter serves every table as HTML with
# the headers that keep it inert (a Content-Security-Policy that allows
# inline styles only, nosniff); Debian's headless chromium loads it without
# a console error (and the same check does see a page's error), draws one
# bar per non-empty bucket of a .log2 key, as many as the hist file has
# rows, with the counts of its rows, and shows a comm that carries HTML as
# text, not as an element. A latency heatmap (--page-interval 1) of a
# sleep whose length changes halfway has its cells move from the short
# bucket to the long one over time; /?scale=log switches the y scale. The
# heatmap's screenshot goes to $HISTD_DOCS_SCREENSHOTS (docs/) when set.
source "$(dirname "$0")/lib.sh"
command -v chromium >/dev/null || { echo "FAIL: chromium is needed (apt-get install chromium)"; exit 1; }
CLOSE=$(dirname "$HISTD_BIN")/histd_bench_close
[ -x "$CLOSE" ] || { echo "FAIL: no $CLOSE"; exit 1; }
BROWSER=$(dirname "$0")/page_in_browser.py
WORKERS=()
test_cleanup() { for p in "${WORKERS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; }
PORT=
for p in $(seq 19350 19399); do
  python3 -c "import socket; socket.socket().bind(('127.0.0.1', $p))" 2>/dev/null && { PORT=$p; break; }
done
[ -n "$PORT" ] || { echo "FAIL: no free port in 19350-19399"; exit 1; }
URL=http://127.0.0.1:$PORT
histd_start --metrics-listen "127.0.0.1:$PORT" --page-interval 1

# worker NAME COMMAND...: starts COMMAND, which prints its pid (a sign
# that it is ready: the filters are on comms, lib.sh) and then waits for a
# line on its stdin ($WORK/NAME.go).
worker() {
  local name=$1; shift
  mkfifo "$WORK/$name.go"
  "$@" <>"$WORK/$name.go" >"$WORK/$name.pid" &  # read-write: the open does not wait for a writer
  WORKERS+=($!)
  for _ in $(seq 100); do [ -s "$WORK/$name.pid" ] && break; sleep 0.05; done
}
go() { echo go >"$WORK/$1.go"; wait "${WORKERS[$2]}" || true; }

# A known distribution: close() on fds 5..64 (none open), so fd.log2 has
# 4 in 2^3 (5-8), 8 in 2^4, 16 in 2^5 and 32 in 2^6. Only the worker's
# closes count: other tests close fds too.
C=$MNT/events/syscalls/sys_enter_close
CLOSER=$(own_comm close)
worker close "$(comm_link "$CLOSER" "$CLOSE")" 60 5
echo "hist:keys=fd.log2 if common_comm == \"$CLOSER\"" >"$C/trigger"
# A process whose comm carries HTML closes three fds (bucket 2^17).
HTML=$(own_comm '<b>x</b>')
worker named python3 -c '
import ctypes, os, sys
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)  # PR_SET_NAME
print(os.getpid(), flush=True)
sys.stdin.readline()
for fd in range(100000, 100003):
    try:
        os.close(fd)
    except OSError:
        pass
' "$HTML"
echo "hist:keys=common_pid.execname,fd.log2 if common_comm == \"$HTML\"" >>"$C/trigger"
go close 0
go named 1

# The heatmap: clock_nanosleep()'s latency in microseconds (a synthetic
# event, as the kernel's docs make one), 1 ms sleeps for 4 s, then 20 ms
# sleeps for 4 s: bucket 2^11 (1025-2048), then 2^15 (16385-32768).
SLEEPER=$(own_comm sleeper)
S=$MNT/events/syscalls
echo 'sleep_lat u64 lat' >>"$MNT/synthetic_events"
echo "hist:keys=common_pid:t0=common_timestamp.usecs if common_comm == \"$SLEEPER\"" \
  >>"$S/sys_enter_clock_nanosleep/trigger"
echo "hist:keys=common_pid:lat=common_timestamp.usecs-\$t0:onmatch(syscalls.sys_enter_clock_nanosleep).sleep_lat(\$lat) if common_comm == \"$SLEEPER\"" \
  >>"$S/sys_exit_clock_nanosleep/trigger"
echo 'hist:keys=common_pid,lat.log2' >>"$MNT/events/synthetic/sleep_lat/trigger"
sleep 1.5  # the sampler's first read of the new table
"$(comm_link "$SLEEPER" "$(python3 -c 'import sys; print(sys.executable)')")" -c '
import time
for length, until in ((0.001, time.monotonic() + 4), (0.02, time.monotonic() + 8)):
    while time.monotonic() < until:
        time.sleep(length)
'
sleep 1.5  # the last interval read

# status, then the headers asked for, then the body.
fetch() {
  python3 - "$@" <<'PY'
import sys, urllib.request, urllib.error
url, method, headers = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    r = urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10)
except urllib.error.HTTPError as e:
    r = e
print(r.status)
for h in headers:
    print(f"{h}: {r.headers.get(h)}")
sys.stdout.write(r.read().decode())
PY
}
for _ in $(seq 50); do fetch "$URL/" GET >/dev/null 2>&1 && break; sleep 0.1; done
fetch "$URL/" GET Content-Type Content-Security-Policy X-Content-Type-Options >"$WORK/page.out"
expect_eq "GET /: an HTML page, inert" "200
Content-Type: text/html; charset=utf-8
Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'
X-Content-Type-Options: nosniff" "$(head -4 "$WORK/page.out")"
expect_eq "which reloads itself every 5 s" "1" "$(grep -c '<meta http-equiv="refresh" content="5">' "$WORK/page.out")"
expect_eq "HEAD /: the same headers, no body" "200
Content-Type: text/html; charset=utf-8" "$(fetch "$URL/" HEAD Content-Type)"
expect_eq "/metrics still serves the metrics" "200
Content-Type: text/plain; version=0.0.4; charset=utf-8" "$(fetch "$URL/metrics" GET Content-Type | head -2)"
expect_eq "another path: 404, naming both" "404
histd-exporter: GET /metrics (Prometheus), GET / (the page)" "$(fetch "$URL/index.html" GET)"

# The browser: the page, then a page with a deliberate error (so a check
# that saw no error could not pass unnoticed).
mkdir "$WORK/browser"
SHOTS=${HISTD_DOCS_SCREENSHOTS:-$WORK}
PAGE_SCREENSHOT="$SHOTS/page-heatmap.png:figure.heatmap" \
  python3 "$BROWSER" "$WORK/browser" "$URL/" 'data:text/html,<title>t</title><script>nosuch()</script>' "$URL/?scale=log" \
  >"$WORK/browser.json" || { echo "FAIL: the browser did not load the page"; tail -20 "$WORK/browser/browser.log"; exit 1; }
# field N EXPRESSION [ARG]: EXPRESSION over the report on page N (r), 0-based;
# ARG is sys.argv[2].
field() {
  python3 -c "import json, sys; r = json.loads(open(sys.argv[1]).readlines()[$1]); print($2)" "$WORK/browser.json" "${@:3}"
}
expect_eq "the page loads without console errors" "[]" "$(field 0 'r["errors"]')"
expect_eq "the check sees a page's error" "yes" \
  "$(field 1 '"yes" if any("nosuch is not defined" in e for e in r["errors"]) else r["errors"]')"

# Bars as "2^N:count", sorted, from the chart captioned CAPTION and from the
# hist file's table TABLE (1-based).
bars() {
  field 0 "'\n'.join(sorted(
    t.split(' ~ ')[1].split(' ')[0] + ':' + t.rsplit(': ', 1)[1]
    for c in r['charts'] if c['caption'].startswith(sys.argv[2]) for t in c['bars']))" "$1"
}
rows_of() {
  awk -v want="$1" '/^# event histogram/ {n++} n == want && /^\{/ {
      match($0, /2\^[0-9]+/); b = substr($0, RSTART, RLENGTH); sub(/.*hitcount: */, ""); print b ":" $1 }' "$C/hist" | LC_ALL=C sort
}
expect_eq "the hist file: the known distribution" "2^3:4
2^4:8
2^5:16
2^6:32" "$(rows_of 1)"
expect_eq "the chart: one bar per non-empty bucket, each with its row's count" "$(rows_of 1)" "$(bars 'all entries')"
expect_eq "as many bars as the hist file has rows" "$(rows_of 1 | wc -l)" \
  "$(field 0 'sum(len(c["bars"]) for c in r["charts"] if c["caption"].startswith("all entries"))')"
expect_eq "the comm's chart: its one bucket" "2^17:3" "$(bars 'common_pid: <b>x</b>')"
expect_eq "the comm that carries HTML shows as text" "yes" \
  "$(field 0 '"yes" if "common_pid: <b>x</b>" in r["text"] else r["text"]')"
expect_eq "and made no element" "0" "$(field 0 'r["elements"].get("b", 0)')"
expect_eq "the page runs nothing and loads nothing" "0 0 0 0" \
  "$(field 0 '" ".join(str(r["elements"].get(t, 0)) for t in ("script", "img", "link", "iframe"))')"
expect_eq "the log scale is asked for by the address, and links back" "yes" \
  "$(field 2 '"yes" if "y scale: linear | log" in r["text"] and not r["errors"] else r')"

# The heatmap's cells as "bucket seconds-ago-the-interval-ended count".
cells() {
  field 0 "'\n'.join(
    t.split(' ~ ')[1].split(' ')[0] + ' ' + t.split(' to ')[1].split(':')[0].replace('now', '0').strip('-s')
    for c in r['charts'] if c['caption'].startswith('lat over time') for t in c['bars'])"
}
cells >"$WORK/cells"
expect_eq "the heatmap has both buckets" "2^11 2^15" "$(awk '{print $1}' "$WORK/cells" | sort -u | grep -E '2\^1[15]' | xargs)"
# Time runs left to right, the newest interval last: every interval with 1
# ms sleeps ended before every one with 20 ms sleeps began (one interval
# may hold both).
expect_eq "its cells move from 2^11 to 2^15 over time" "yes" "$(awk '
  $1 == "2^11" && (min11 == "" || $2 + 0 < min11) {min11 = $2 + 0}
  $1 == "2^15" && (max15 == "" || $2 + 0 > max15) {max15 = $2 + 0}
  END {print (min11 != "" && max15 != "" && min11 + 1 >= max15) ? "yes" : "no: " min11 " " max15}' "$WORK/cells")"
expect_eq "the heatmap's screenshot" "yes" "$([ -s "$SHOTS/page-heatmap.png" ] && echo yes || echo no)"
finish
