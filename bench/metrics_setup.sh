# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the benches that run histd's exporter (bench/metrics.sh,
# bench/exporter_attacks.sh):
#   exporter_user        makes a user of the bench's own for histd-exporter
#                        (histd refuses one it shares), EXPORTER_USER
#   drop_exporter_user   deletes it, once its processes are gone
#   fill_fd_keys BUILD TRIGGER_FILE KEYS SIZE NAME
# writes hist:keys=fd:size=SIZE:name=NAME on sys_enter_close (TRIGGER_FILE)
# for a closer (BUILD's histd_bench_close) of its own, which then closes
# KEYS distinct invalid fds: one entry each. Uses $WORK for its fifo.
fill_fd_keys() {
  local build=$1 trigger=$2 keys=$3 size=$4 name=$5 closer
  mkfifo "$WORK/go"
  "$build/histd_bench_close" "$keys" <"$WORK/go" >"$WORK/closer.pid" &
  closer=$!
  exec 3>"$WORK/go"
  for _ in $(seq 50); do [ -s "$WORK/closer.pid" ] && break; sleep 0.1; done
  echo "hist:keys=fd:size=$size:name=$name if common_pid == $(cat "$WORK/closer.pid")" >"$trigger"
  echo go >&3
  exec 3>&-
  wait "$closer"
  rm -f "$WORK/go"
}

exporter_user() {
  EXPORTER_USER=hx-bench-$$
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$EXPORTER_USER"
}

drop_exporter_user() {
  for _ in $(seq 50); do pgrep -u "$EXPORTER_USER" >/dev/null || break; sleep 0.1; done
  userdel "$EXPORTER_USER" 2>/dev/null || true
}
