#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What clients that attack histd-exporter cost a scrape (docs/reliability.md):
# the scrape latency (p50, p99, max) of GET /metrics from 127.0.0.1 and the
# exporter's RSS, quiet and beside each attack of tests/e2e/http_attackers.py
# — slowloris (64 connections from 4 addresses, a header byte a second),
# 1000 idle connections from 1000 addresses, and 1000 that each sent one
# byte (mute: handed to the exporter at once) — over a table of KEYS label
# sets, in interleaved rounds.
#   bash bench/exporter_attacks.sh   (as root; ROUNDS=3 SECONDS_EACH=20
#                                     KEYS=1000, HISTD_BUILD=dir: that build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${SECONDS_EACH:-20}
KEYS=${KEYS:-1000}
B=$(realpath "${HISTD_BUILD:-build}")
ATTACK=$PWD/tests/e2e/http_attackers.py
WORK=$(mktemp -d /tmp/histd-bench-attacks.XXXXXX)
source bench/metrics_setup.sh
exporter_user
HISTD= ATTACKER=
cleanup() {
  [ -z "$ATTACKER" ] || kill -KILL "$ATTACKER" 2>/dev/null || true
  if [ -n "$HISTD" ]; then kill "$HISTD" 2>/dev/null || true; wait "$HISTD" 2>/dev/null || true; fi
  mountpoint -q "$WORK/mnt" && fusermount3 -u "$WORK/mnt"
  drop_exporter_user
  rm -rf "$WORK"
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$WORK/mnt"
"$B/histd" --foreground --mount "$WORK/mnt" --socket "$WORK/sock" --state-dir "$WORK/state" --pin-dir "" \
  --config-dir "" --metrics-user "$EXPORTER_USER" --metrics-listen "127.0.0.1:$PORT" >"$WORK/histd.log" 2>&1 &
HISTD=$!
for _ in $(seq 100); do [ -e "$WORK/mnt/events" ] && break; sleep 0.1; done
# KEYS label sets: one series per fd closed by the closer.
fill_fd_keys "$B" "$WORK/mnt/events/syscalls/sys_enter_close/trigger" "$KEYS" 8192 bench_fds
for _ in $(seq 50); do grep -q '^200' <(python3 "$ATTACK" scrape "$PORT" 0.1) && break; sleep 0.1; done
exporter=$(pgrep -P "$HISTD" -x histd-exporter | head -1)

# one ATTACK...: scrapes for SECONDS_EACH beside the attack; the latencies
# to $WORK/<name>.ms, the exporter's peak RSS (KiB) to $WORK/<name>.rss.
one() {
  local name=$1; shift
  if [ "$name" != quiet ]; then
    python3 "$ATTACK" "$1" "$PORT" "${@:2}" >"$WORK/attacker.out" 2>&1 &
    ATTACKER=$!
    for _ in $(seq 300); do grep -q ready "$WORK/attacker.out" && break; sleep 0.1; done
  fi
  python3 "$ATTACK" scrape "$PORT" "$SECONDS_EACH" >>"$WORK/$name.ms" &
  local scraper=$! peak=0 rss
  while kill -0 "$scraper" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$exporter/status")
    [ "$rss" -gt "$peak" ] && peak=$rss
    sleep 0.5
  done
  wait "$scraper"
  echo "$peak" >>"$WORK/$name.rss"
  if [ -n "$ATTACKER" ]; then kill -TERM "$ATTACKER" 2>/dev/null || cat "$WORK/attacker.out" >&2; wait "$ATTACKER" 2>/dev/null || true; ATTACKER=; fi
  sleep 6  # the attack's connections reaped before the next
}
# Each case: its name, then the attacker's mode and arguments (none: quiet).
CASES=("quiet" "slowloris slowloris 4 16" "idle idle 1000" "mute mute 1000")
for r in $(seq "$ROUNDS"); do
  for i in $(seq 0 $((${#CASES[@]} - 1)) | shuf); do
    # shellcheck disable=SC2086 # a case's words are its arguments
    one ${CASES[$i]}
  done
  echo "round $r done" >&2
done
echo "exporter under attack: $KEYS series, $ROUNDS rounds of ${SECONDS_EACH} s each"
for c in "${CASES[@]}"; do
  v=${c%% *}
  python3 - "$v" "$WORK/$v.ms" "$WORK/$v.rss" <<'PY'
import statistics, sys
name, ms, rss = sys.argv[1], open(sys.argv[2]).read().split("\n"), open(sys.argv[3]).read().split()
ok = sorted(float(l.split()[1]) for l in ms if l.startswith("200 "))
failed = sum(1 for l in ms if l and not l.startswith("200 "))
p = lambda q: ok[min(len(ok) - 1, int(q * len(ok)))]
print(f"  {name:10} scrapes {len(ok):4} failed {failed}  p50 {p(0.5):7.1f} ms  p99 {p(0.99):7.1f} ms  "
      f"max {ok[-1]:7.1f} ms  exporter RSS peak {max(int(x) for x in rss) / 1024:.1f} MiB")
PY
done
grep -c '^histd-exporter: ' "$WORK/histd.log" | sed 's/^/  exporter log lines over the whole run: /'
