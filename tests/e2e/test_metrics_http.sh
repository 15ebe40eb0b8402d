#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# /metrics over HTTP: histd --metrics-listen binds the port and
# runs histd-exporter on it as --metrics-user, without capabilities and
# without new privileges; the exporter reads the tables through histd's
# metrics socket, which answers nothing but metrics. The scraper's Accept
# header picks the text format or OpenMetrics; a stalled client holds no
# scrape up; an exporter that dies is started again; it ends with histd.
source "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || { echo "FAIL: promtool is needed (apt-get install prometheus)"; exit 1; }
# $WORK stays 0700 (mktemp's), as a checkout under /root or a home is: the
# exporter is handed what it needs as descriptors.
PORT=$(own_number 20000 20000)
URL=http://127.0.0.1:$PORT

refused() {
  "$HISTD_BIN" --foreground --mount "$MNT" --socket "$WORK/x.sock" --state-dir "$WORK/x" --pin-dir "" "$@" 2>&1 || true
}
expect_eq "a listen address without a port is refused at start" \
  "histd: --metrics-listen nonsense: expected ADDRESS:PORT" "$(refused --metrics-listen nonsense)"
expect_eq "root as the exporter's user is refused" "histd: --metrics-user must not be root: it serves the network" \
  "$(refused --metrics-listen "127.0.0.1:$PORT" --metrics-user root)"
expect_eq "nobody, which other daemons share, is refused" \
  "histd: --metrics-user nobody: other daemons run as it, and could take the exporter's socket or signal it; it needs a user of its own (the Debian package makes histd-exporter; else: adduser --system --group --no-create-home --home /nonexistent histd-exporter)" \
  "$(refused --metrics-listen "127.0.0.1:$PORT" --metrics-user nobody)"
exporter_user
setpriv --reuid="$EXPORTER_USER" --regid="$EXPORTER_USER" --clear-groups sleep 30 &
squatter=$!
sleep 0.2
expect_eq "a user another program runs as is refused" \
  "histd: --metrics-user $EXPORTER_USER: pid $squatter (sleep) runs as it, and could take the exporter's socket or signal it; the exporter needs a user of its own" \
  "$(refused --metrics-listen "127.0.0.1:$PORT" --metrics-user "$EXPORTER_USER")"
kill "$squatter"; wait "$squatter" 2>/dev/null || true

histd_start --metrics-listen "127.0.0.1:$PORT"
echo 'hist:keys=count.log2:vals=count:name=http_writes' >"$MNT/events/syscalls/sys_enter_write/trigger"
dd if=/dev/zero of=/dev/null bs=1000 count=3 status=none

# GET: status, content type, body (python3's urllib: no other client needed).
get() {
  /usr/bin/python3 - "$@" <<'PY'
import sys, urllib.request, urllib.error
url, accept = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
status_only = accept == "status"
accept = None if status_only else accept
req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
try:
    with urllib.request.urlopen(req, timeout=10) as r:
        print(r.status, r.headers.get("Content-Type"))
        body = r.read().decode()
        if not status_only:
            sys.stdout.write(body)
except urllib.error.HTTPError as e:
    print(e.code, e.headers.get("Content-Type"))
PY
}
# The status code alone.
status() { get "$1" status | cut -d' ' -f1; }
for _ in $(seq 50); do get "$URL/metrics" >/dev/null 2>&1 && break; sleep 0.1; done
get "$URL/metrics" >"$WORK/text.out"
expect_eq "GET /metrics: the text format" "200 text/plain; version=0.0.4; charset=utf-8" "$(head -1 "$WORK/text.out")"
expect_eq "promtool check metrics: clean" "" "$(tail -n +2 "$WORK/text.out" | promtool check metrics 2>&1)"
expect_eq "the table is there" "yes" \
  "$(grep -q '^histd_http_writes_count_bucket{le="1024"} ' "$WORK/text.out" && echo yes)"
get "$URL/metrics" 'application/openmetrics-text; version=1.0.0,text/plain;q=0.5' >"$WORK/om.out"
expect_eq "asked for OpenMetrics" "200 application/openmetrics-text; version=1.0.0; charset=utf-8" \
  "$(head -1 "$WORK/om.out")"
expect_eq "which ends as OpenMetrics ends" "# EOF" "$(tail -1 "$WORK/om.out")"
expect_eq "another path" "404" "$(status "$URL/nosuch")"

# One connection for many scrapes (keep-alive), and gzip when asked, as
# Prometheus asks: the same text, an eighth of the bytes or less on the wire.
/usr/bin/python3 - "$PORT" >"$WORK/keepalive.out" <<'PY'
import gzip, http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
ports, sizes, texts = set(), [], []
for encoding in ("gzip", "gzip", "identity", "gzip;q=0"):
    c.request("GET", "/metrics", headers={"Accept-Encoding": encoding})
    r = c.getresponse()
    body = r.read()
    ports.add(c.sock.getsockname()[1])
    packed = r.getheader("Content-Encoding") == "gzip"
    text = gzip.decompress(body).decode() if packed else body.decode()
    texts.append(text)
    print(encoding, r.status, "gzip" if packed else "plain", r.getheader("Vary"))
print("connections", len(ports))
families = [sorted(l for l in t.splitlines() if l.startswith("# TYPE")) for t in texts]
print("same families", all(f == families[0] for f in families))
PY
expect_eq "scrapes on one kept-alive connection, gzipped only when asked" \
  "$(printf '%s\n' 'gzip 200 gzip Accept-Encoding' 'gzip 200 gzip Accept-Encoding' \
    'identity 200 plain Accept-Encoding' 'gzip;q=0 200 plain Accept-Encoding' 'connections 1' 'same families True')" \
  "$(cat "$WORK/keepalive.out")"

# The exporter: not root, no capabilities, no new privileges.
exporter() { pgrep -P "$HISTD_PID" -x histd-exporter | head -1 || true; }
pid=$(exporter)
expect_eq "the exporter runs as its own user" "$(id -u "$EXPORTER_USER")" "$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")"
expect_eq "not dumpable: no process of its user may take its descriptors" "" \
  "$(setpriv --reuid="$EXPORTER_USER" --regid="$EXPORTER_USER" --clear-groups ls "/proc/$pid/fd" 2>/dev/null || true)"
expect_eq "without capabilities" "0000000000000000 0000000000000000" \
  "$(awk '/^CapEff:/ {e = $2} /^CapPrm:/ {p = $2} END {print e, p}' "/proc/$pid/status")"
expect_eq "and without new privileges" "1" "$(awk '/^NoNewPrivs:/ {print $2}' "/proc/$pid/status")"
# Its user, reaching the socket (as under /run/histd, 0755).
chmod 755 "$WORK"
as_nobody() { setpriv --reuid="$EXPORTER_USER" --regid="$EXPORTER_USER" --clear-groups "$@"; }
# Into a file first: `| grep -q` may leave histctl writing into a closed
# pipe (SIGPIPE), which pipefail counts as the check failing.
as_nobody "$HISTCTL_BIN" --socket "$WORK/metrics.sock" metrics >"$WORK/nobody.out" 2>&1 || true
expect_eq "its user may read the metrics socket" "yes" \
  "$(grep -q '^histd_http_writes' "$WORK/nobody.out" && echo yes || head -3 "$WORK/nobody.out")"
expect_eq "but not change a trigger through it" "error: histd's metrics socket serves metrics only" \
  "$(as_nobody "$HISTCTL_BIN" --socket "$WORK/metrics.sock" add syscalls:sys_enter_read 'hist:keys=fd' 2>&1 || true)"
expect_eq "which changed nothing" "" "$(grep -v '^#' "$MNT/events/syscalls/sys_enter_read/trigger" || true)"
expect_eq "nor use histd's control socket" "3" \
  "$(as_nobody "$HISTCTL_BIN" --socket "$WORK/histd.sock" list >/dev/null 2>&1; echo $?)"
chmod 700 "$WORK"

# Stalled clients (connected, sending nothing) hold no scrape up.
/usr/bin/python3 - "$PORT" "$WORK/stalled.ready" <<'PY' &
import socket, sys, time
held = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(12)]
open(sys.argv[2], "w").close()
time.sleep(8)
PY
stalled=$!
for _ in $(seq 50); do [ -e "$WORK/stalled.ready" ] && break; sleep 0.1; done
start=$(date +%s%N)
code=$(status "$URL/metrics")
ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "a scrape beside 12 stalled clients is answered" "200" "$code"
expect_eq "at once (not after their timeout)" "yes" "$([ "$ms" -lt 3000 ] && echo yes || echo "no: $ms ms")"
kill "$stalled" 2>/dev/null || true
wait "$stalled" 2>/dev/null || true

# An exporter that dies is started again.
kill -KILL "$pid"
for _ in $(seq 60); do new=$(exporter); [ -n "$new" ] && [ "$new" != "$pid" ] && break; sleep 0.1; done
expect_eq "killed, the exporter is started again" "yes" "$([ -n "$new" ] && [ "$new" != "$pid" ] && echo yes)"
for _ in $(seq 50); do get "$URL/metrics" >/dev/null 2>&1 && break; sleep 0.1; done
expect_eq "and serves again" "200" "$(status "$URL/metrics")"

# It ends with histd.
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
expect_eq "no exporter left after histd ends" "" "$(pgrep -x histd-exporter -u "$EXPORTER_USER" | grep -x "$new" || true)"
expect_eq "and the port is closed" "closed" \
  "$(/usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), timeout=2)" 2>/dev/null &&
    echo open || echo closed)"
finish
