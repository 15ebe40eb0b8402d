# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the benches that compare whole variants side by side
# (bench/uprobe.sh, bench/eprobe.sh): runs the caller's `variant NAME`
# (which prints one figure) for every NAME in ROUNDS interleaved rounds,
# the names in a shuffled order each round, then prints each one's median
# and min..max, labelled with UNIT; with ROUNDS_DIR set, each NAME's
# figures in round order to ROUNDS_DIR/NAME as well (for paired figures).
#   interleaved_rounds UNIT NAME...
# And `with_bpftrace PROGRAM`: the caller's `run` while bpftrace runs
# PROGRAM (once it says it attached, and half a second more); BT holds its
# pid meanwhile, for the caller's cleanup; its output goes to $WORK/bt.log.
# And `start_histd`: a histd of build $B on $WORK/mnt (no pins, no
# configuration directory; the arguments are histd's too), its pid in HISTD;
# `start_histd_raw`: a second one beside it with --raw-syscalls=true, on
# $WORK/mnt-raw, its pid in HISTD_RAW; `start_histd_classic`: one with
# --btf-tracepoints=false on $WORK/mnt-classic, its pid in HISTD_CLASSIC;
# `bench_cleanup` (the caller's EXIT trap) ends bpftrace and the histds,
# unmounts, removes $WORK.
# And `need COMMAND PACKAGE`: installs Debian's PACKAGE when COMMAND (a
# name or a path) is missing: what a bench compares histd with.
# And `timed_write FILE TEXT`: ms one write takes (bench/activation.sh,
# bench/memory.sh). And `stats_on` / `stats_off`: the kernel's BPF run-time
# statistics on through histd_bench_stats (its pid in STATS, which
# bench_cleanup ends too) and off again (bench/fresh.sh).
interleaved_rounds() {
  local unit=$1 r v
  shift
  declare -A figures=()
  for r in $(seq "$ROUNDS"); do
    for v in $(printf '%s\n' "$@" | shuf); do figures[$v]+="$(variant "$v") "; done
    echo "round $r done" >&2
  done
  for v in "$@"; do
    [ -z "${ROUNDS_DIR:-}" ] || echo "${figures[$v]}" >"$ROUNDS_DIR/$v"
    python3 - "$v" "$unit" ${figures[$v]} <<'PY'
import statistics, sys
v, unit, xs = sys.argv[1], sys.argv[2], sorted(int(x) for x in sys.argv[3:])
print(f"{v:9s} {statistics.median(xs):7.0f} {unit} ({xs[0]}..{xs[-1]})")
PY
  done
}

need() {
  command -v "$1" >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null
}

with_bpftrace() {
  bpftrace -e "$1" >"$WORK/bt.log" 2>&1 &
  BT=$!
  for _ in $(seq 200); do grep -q 'Attaching' "$WORK/bt.log" && break; sleep 0.05; done
  sleep 0.5
  run
  # bpftrace 0.17 sometimes ignores a SIGINT and runs on (bench/run.sh's
  # bt_stop): the signal is repeated every second, SIGKILL after 30 s.
  local i
  for i in $(seq 30); do
    kill -INT "$BT" 2>/dev/null || break
    for _ in $(seq 10); do kill -0 "$BT" 2>/dev/null && [ "$(cut -d' ' -f3 "/proc/$BT/stat" 2>/dev/null)" != Z ] ||
      break 2; sleep 0.1; done
  done
  kill -KILL "$BT" 2>/dev/null || true
  wait "$BT" 2>/dev/null || true
  BT=
}

# Milliseconds one write of $2 to file $1 takes, opened as echo's > does
# (truncating: a trigger file drops the event's hist triggers first, as in
# tracefs).
timed_write() {
  python3 - "$1" "$2" <<'PY'
import sys, time
t = time.perf_counter()
with open(sys.argv[1], "w") as f:
    f.write(sys.argv[2])
print("%.2f" % ((time.perf_counter() - t) * 1e3))
PY
}

# A histd on $WORK/mnt$1 (its socket, state and log named alike), the
# rest of the arguments histd's; its pid in LAUNCHED.
launch_histd() {
  local suffix=$1
  shift
  mkdir -p "$WORK/mnt$suffix"
  "$B/histd" --foreground --mount "$WORK/mnt$suffix" --socket "$WORK/sock$suffix" --state-dir "$WORK/state$suffix" \
    --pin-dir "" --config-dir "" "$@" >"$WORK/histd$suffix.log" 2>&1 &
  LAUNCHED=$!
  for _ in $(seq 100); do [ -e "$WORK/mnt$suffix/events" ] && break; sleep 0.1; done
  [ -e "$WORK/mnt$suffix/events" ] || { cat "$WORK/histd$suffix.log" >&2; exit 1; }
}
start_histd() {
  launch_histd "" "$@"
  HISTD=$LAUNCHED
}
# start_variant SPEC [OPTION...]: a fresh histd of a bench's variant SPEC
# (binary[,VAR=value...]) on $WORK/run/mnt, with an empty object cache, no
# pins and no configuration directory (the options are histd's too), its pid
# in HISTD (bench/activation.sh, bench/compile_stall.sh).
start_variant() {
  local spec=$1 bin rest env=()
  shift
  IFS=, read -r bin rest <<<"$spec"
  if [ -n "${rest:-}" ]; then IFS=, read -ra env <<<"$rest"; fi
  rm -rf "$WORK/run"
  mkdir -p "$WORK/run/mnt"
  env "${env[@]}" "$bin" --foreground --mount "$WORK/run/mnt" --socket "$WORK/run/sock" --state-dir "$WORK/run/state" \
    --pin-dir "" --config-dir "" "$@" >>"$WORK/histd.log" 2>&1 &
  HISTD=$!
  for _ in $(seq 100); do [ -e "$WORK/run/mnt/events" ] && break; sleep 0.1; done
  [ -e "$WORK/run/mnt/events" ] || { tail -20 "$WORK/histd.log" >&2; exit 1; }
}
start_histd_raw() {
  launch_histd -raw --raw-syscalls=true "$@"
  HISTD_RAW=$LAUNCHED
}
start_histd_classic() {
  launch_histd -classic --btf-tracepoints=false "$@"
  HISTD_CLASSIC=$LAUNCHED
}

stats_on() {
  "$B/histd_bench_stats" >"$WORK/stats.on" &
  STATS=$!
  for _ in $(seq 100); do [ -s "$WORK/stats.on" ] && break; sleep 0.05; done
  [ -s "$WORK/stats.on" ] || { echo "BPF statistics could not be turned on" >&2; exit 1; }
}
stats_off() {
  kill -TERM "$STATS"
  wait "$STATS" || true
  STATS=
}

bench_cleanup() {
  [ -z "${STATS:-}" ] || { kill -TERM "$STATS" 2>/dev/null || true; wait "$STATS" 2>/dev/null || true; }
  [ -z "${BT:-}" ] || { kill -INT "$BT" 2>/dev/null || true; wait "$BT" 2>/dev/null || true; }
  local pid mnt
  for pid in "${HISTD:-}" "${HISTD_RAW:-}" "${HISTD_CLASSIC:-}"; do
    [ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  done
  for mnt in "$WORK/mnt" "$WORK/mnt-raw" "$WORK/mnt-classic"; do ! mountpoint -q "$mnt" || fusermount3 -u "$mnt"; done
  rm -rf "$WORK"
}
