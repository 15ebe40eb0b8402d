#!/usr/bin/env bash
# Quick start: install, build, and run histd on a real default example.
# Mounts the tree in a temp dir, counts syscalls per process for a few
# seconds, prints the table, and stops histd again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh

MNT=$(mktemp -d /tmp/histd-demo.XXXXXX)
STATE=$(mktemp -d /tmp/histd-state.XXXXXX)
./build/histd --foreground --mount "$MNT" --socket "$STATE/histd.sock" --state-dir "$STATE" --pin-dir "" &
PID=$!
cleanup() {
  kill -TERM "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  mountpoint -q "$MNT" && fusermount3 -u "$MNT"
  rm -rf "$MNT" "$STATE"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -e "$MNT/events" ] && break; sleep 0.1; done

CMD='hist:keys=common_pid.execname:vals=hitcount:sort=hitcount.descending:size=256'
echo "# echo '$CMD' > $MNT/events/raw_syscalls/sys_enter/trigger"
echo "$CMD" > "$MNT/events/raw_syscalls/sys_enter/trigger"
# Some work to count while we wait.
for _ in $(seq 3); do ls -R /usr/share/doc >/dev/null; sleep 1; done
echo "# cat $MNT/events/raw_syscalls/sys_enter/hist"
cat "$MNT/events/raw_syscalls/sys_enter/hist"
