#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The page at /: histd-exporter serves every table as HTML with
# the headers that keep it inert (a Content-Security-Policy that allows
# inline styles only, nosniff); Debian's headless chromium loads it without
# a console error (and the same check does see a page's error), draws one
# bar per non-empty bucket of a .log2 key, as many as the hist file has
# rows, with the counts of its rows, and shows a comm that carries HTML as
# text, not as an element. A latency heatmap (--page-interval 1) of a
# sleep whose length changes halfway has its cells move from the short
# bucket to the long one over time; /?scale=log switches the y scale. A
# table keyed by common_stacktrace on sched_switch, of a process that
# sleeps and then reads a pipe, has a flame graph with both kernel paths,
# whose one script (allowed by its hash) searches and zooms, and its
# folded stacks at /folded and from `histctl show --folded`. The
# screenshots of the heatmap and the flame graph go to
# $HISTD_DOCS_SCREENSHOTS (docs/) when set.
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

# The flame graph: sched_switch's stacks of a process that sleeps in
# clock_nanosleep() and then blocks reading a pipe: two kernel paths, one
# through do_nanosleep, the other through pipe_read (anon_pipe_read in
# newer kernels).
STACKER=$(own_comm stacks)
echo "hist:keys=common_stacktrace if prev_comm == \"$STACKER\"" >>"$MNT/events/sched/sched_switch/trigger"
"$(comm_link "$STACKER" "$(python3 -c 'import sys; print(sys.executable)')")" -c '
import os, time
for _ in range(5):
    time.sleep(0.01)
r, w = os.pipe()
child = os.fork()
if child == 0:
    for _ in range(5):
        time.sleep(0.02)
        os.write(w, b"x")
    os._exit(0)
for _ in range(5):
    os.read(r, 1)
os.waitpid(child, 0)
'

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
# The page's one script (the flame graph's), allowed by its SHA-256 alone.
SCRIPT_HASH=$(python3 -c '
import base64, hashlib, re, sys
scripts = re.findall(r"<script>(.*?)</script>", open(sys.argv[1]).read(), re.S)
print(len(scripts), base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode() if scripts else "")
' "$WORK/page.out")
expect_eq "the page has one script" "1" "${SCRIPT_HASH%% *}"
expect_eq "GET /: an HTML page, inert but for its one script" "200
Content-Type: text/html; charset=utf-8
Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-${SCRIPT_HASH#* }'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'
X-Content-Type-Options: nosniff" "$(head -4 "$WORK/page.out")"
expect_eq "which reloads itself every 5 s" "1" "$(grep -c '<meta http-equiv="refresh" content="5">' "$WORK/page.out")"
expect_eq "HEAD /: the same headers, no body" "200
Content-Type: text/html; charset=utf-8" "$(fetch "$URL/" HEAD Content-Type)"
expect_eq "/metrics still serves the metrics" "200
Content-Type: text/plain; version=0.0.4; charset=utf-8" "$(fetch "$URL/metrics" GET Content-Type | head -2)"
expect_eq "another path: 404, naming them" "404
histd-exporter: GET /metrics (Prometheus), GET / (the page), GET /folded?table=ID (a table's folded stacks)" \
  "$(fetch "$URL/index.html" GET)"

# The folded stacks: the page links to them, histctl prints the same.
ID=$(grep -o 'href="folded?table=[0-9a-f]*"' "$WORK/page.out" | head -1 | sed 's/.*=\([0-9a-f]*\)"/\1/')
expect_eq "the page links to one table's folded stacks" "8" "${#ID}"
fetch "$URL/folded?table=$ID" GET Content-Type >"$WORK/folded.out"
expect_eq "GET /folded: plain text" "200
Content-Type: text/plain; charset=utf-8" "$(head -2 "$WORK/folded.out")"
tail -n +3 "$WORK/folded.out" >"$WORK/folded.txt"
# A line: frames root first, ';' between them, a space, the hits.
expect_eq "every line is a folded stack" "0" "$(grep -cvE '^[^ ;][^;]*(;[^;]+)* [0-9]+$' "$WORK/folded.txt")"
expect_eq "both paths, from the syscall entry to the switch" "yes yes" "$(
  for f in do_nanosleep pipe_read; do
    grep -qE "^entry_SYSCALL_64[^;]*;(.*;)?([a-z_]*_)?$f\+0x[0-9a-f]+/0x[0-9a-f]+;(.*;)?schedule\+" "$WORK/folded.txt" &&
      echo yes || echo "no $f"
  done | xargs)"
expect_eq "no frame is an address" "0" "$(grep -cE '(^|;)(0x)?[0-9a-f]{12,}( |;)' "$WORK/folded.txt")"
"$HISTCTL_BIN" --socket "$WORK/histd.sock" show --folded sched:sched_switch >"$WORK/histctl-folded.txt"
expect_eq "histctl show --folded prints the same" "" "$(diff "$WORK/folded.txt" "$WORK/histctl-folded.txt")"
expect_eq "an unknown table: 404" "404" "$(fetch "$URL/folded?table=00000000" GET | head -1)"
expect_eq "a malformed id: 404" "404" "$(fetch "$URL/folded?table=../x" GET | head -1)"

# The browser: the page, then a page with a deliberate error (so a check
# that saw no error could not pass unnoticed).
mkdir "$WORK/browser"
SHOTS=${HISTD_DOCS_SCREENSHOTS:-$WORK}
# As a person would: search for pipe_read (its boxes turn magenta), zoom
# into do_nanosleep by a click (it takes the whole width, pipe_read's path
# goes), then reset the zoom, the search left on for the screenshot.
PAGE_EVAL='(() => {
  const fig = document.querySelector("figure.flame");
  if (!fig) return "no flame graph";
  const tools = fig.querySelector(".fg-tools");
  if (tools.hidden) return "the script did not run";
  const boxes = [...fig.querySelectorAll("svg.fr")];
  const named = re => boxes.filter(b => re.test(b.querySelector("text").textContent));
  const q = tools.querySelector("input");
  q.value = "pipe_read";
  q.dispatchEvent(new Event("input"));
  const matched = boxes.filter(b => b.classList.contains("match"));
  const sleep = named(/^do_nanosleep\+/)[0], pipe = named(/^(anon_)?pipe_read\+/)[0];
  if (!sleep || !pipe) return "no box for both paths";
  const colour = getComputedStyle(pipe.querySelector("rect")).fill;
  sleep.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  const zoomed = [sleep.getAttribute("width"), pipe.style.display];
  tools.querySelector("button").click();
  return JSON.stringify({matched: matched.length > 0 && matched.every(b => named(/pipe_read/).includes(b)),
    colour, zoomed, reset: [sleep.getAttribute("width") === sleep.dataset.w, pipe.style.display]});
})()' PAGE_SCREENSHOT="$SHOTS/page-heatmap.png:figure.heatmap $SHOTS/page-flamegraph.png:figure.flame" \
  python3 "$BROWSER" "$WORK/browser" "$URL/" 'data:text/html,<title>t</title><script>nosuch()</script>' "$URL/?scale=log" \
  >"$WORK/browser.json" || { echo "FAIL: the browser did not load the page"; tail -20 "$WORK/browser/browser.log"; exit 1; }
# field N EXPRESSION [ARG]: EXPRESSION over the report on page N (r), 0-based;
# ARG is sys.argv[2].
field() {
  python3 -c "import json, re, sys; r = json.loads(open(sys.argv[1]).readlines()[$1]); print($2)" "$WORK/browser.json" "${@:3}"
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
expect_eq "the page runs its one script and loads nothing" "1 0 0 0" \
  "$(field 0 '" ".join(str(r["elements"].get(t, 0)) for t in ("script", "img", "link", "iframe"))')"
# The flame graph's boxes as the browser drew them: both paths' frames.
expect_eq "the flame graph has a box for both paths' frames" "yes yes" "$(field 0 '" ".join(
  "yes" if any(re.match("(anon_)?" + f + "[+]", t) for c in r["charts"] if c["caption"].startswith("common_stacktrace: flame graph")
               for t in c["bars"]) else "no " + f for f in ("do_nanosleep", "pipe_read"))')"
expect_eq "the script ran under the policy: search, zoom, reset" \
  '{"matched":true,"colour":"rgb(224, 64, 224)","zoomed":["1200","none"],"reset":[true,""]}' "$(field 0 'r["eval"]')"
expect_eq "the log scale is asked for by the address, and links back" "yes" \
  "$(field 2 '"yes" if "y scale: linear | log" in r["text"] and not r["errors"] else r')"

# The heatmap's cells as "bucket seconds-ago-the-interval-ended hits".
cells() {
  field 0 "'\n'.join(
    t.split(' ~ ')[1].split(' ')[0] + ' ' + t.split(' to ')[1].split(':')[0].replace('now', '0').strip('-s')
    + ' ' + t.rsplit(': ', 1)[1]
    for c in r['charts'] if c['caption'].startswith('lat over time') for t in c['bars'])"
}
cells >"$WORK/cells"
expect_eq "the heatmap has both buckets" "2^11 2^15" "$(awk '{print $1}' "$WORK/cells" | sort -u | grep -E '2\^1[15]' | xargs)"
# Time runs left to right, the newest interval last: every interval whose
# most hits are 1 ms sleeps ended before every one whose most hits are 20
# ms sleeps began (one interval may hold both). Its most hits, not any: a
# phase's cells hold tens to hundreds, and under the full suite's load a
# few 1 ms sleeps in one second woke 16 ms late (a 2^15 cell of 3 or more hits
# 4 s before the last 2^11 one).
expect_eq "its cells move from 2^11 to 2^15 over time" "yes" "$(awk '
  $3 + 0 > most[$2] {most[$2] = $3 + 0; top[$2] = $1}
  END {
    for (t in top) {
      if (top[t] == "2^11" && (min11 == "" || t + 0 < min11)) min11 = t + 0
      if (top[t] == "2^15" && (max15 == "" || t + 0 > max15)) max15 = t + 0
    }
    print (min11 != "" && max15 != "" && min11 + 1 >= max15) ? "yes" : "no: " min11 " " max15
  }' "$WORK/cells")"
expect_eq "the heatmap's screenshot" "yes" "$([ -s "$SHOTS/page-heatmap.png" ] && echo yes || echo no)"
expect_eq "the flame graph's screenshot" "yes" "$([ -s "$SHOTS/page-flamegraph.png" ] && echo yes || echo no)"
finish
