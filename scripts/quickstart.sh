#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Quick start: installs what building and running histd needs (and nothing
# that listens or runs as a service), builds histd, histctl and
# histd-exporter (histd-cc, the resident compiler, too if LLVM's development
# files are there: without it histd runs clang for each compile), and runs
# histd on a real example: the tree mounted in a
# temporary directory, system calls counted per command for three seconds
# while a workload of its own (histd-demo) runs, the table printed, histd
# stopped again. If histd ends early, says why with its last words.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --run
bash scripts/build.sh --daemon

MNT=$(mktemp -d /tmp/histd-demo.XXXXXX)
STATE=$(mktemp -d /tmp/histd-state.XXXXXX)
./build/histd --foreground --mount "$MNT" --socket "$STATE/histd.sock" --state-dir "$STATE/state" \
  --pin-dir "" --config-dir "" >"$STATE/histd.log" 2>&1 &
PID=$!
cleanup() {
  kill -TERM "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  mountpoint -q "$MNT" && fusermount3 -u "$MNT"
  rm -rf "$MNT" "$STATE"
}
trap cleanup EXIT
# died WHAT: histd is gone; its last words and why, and out.
died() {
  local rc=0
  wait "$PID" || rc=$?
  echo "histd ended $1 (exit status $rc); its last words:" >&2
  tail -5 "$STATE/histd.log" | sed 's/^/  /' >&2
  exit 1
}
for _ in $(seq 300); do
  [ -e "$MNT/events" ] && break
  kill -0 "$PID" 2>/dev/null || died "before its tree was mounted"
  sleep 0.1
done
[ -e "$MNT/events" ] || { echo "histd did not mount its tree in 30 s; its log:" >&2; cat "$STATE/histd.log" >&2; exit 1; }

T=$MNT/events/raw_syscalls/sys_enter
CMD='hist:keys=common_comm:vals=hitcount:sort=hitcount.descending'
echo "# echo '$CMD' > $T/trigger"
echo "$CMD" >"$T/trigger" || died "when the trigger was written"
# A workload of its own, by its name: its line is in the table however busy
# the machine is (the table holds 2048 commands).
cp "$(command -v ls)" "$STATE/histd-demo"
for _ in $(seq 3); do "$STATE/histd-demo" -R /usr/share/doc >/dev/null; sleep 1; done
kill -0 "$PID" 2>/dev/null || died "while it counted"
cat "$T/hist" >"$STATE/hist"
echo "# cat $T/hist   (its first 20 entries, the demo's own, and the totals)"
sed -n '1,/^$/p' "$STATE/hist"
grep '^{' "$STATE/hist" | head -20
echo "..."
grep -E '^\{ common_comm: histd-demo ' "$STATE/hist" || { echo "the demo's own work is not in the table" >&2; exit 1; }
sed -n '/^Totals:/,$p' "$STATE/hist"
