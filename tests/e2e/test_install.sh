#!/usr/bin/env bash
# `cmake --install` into a temporary prefix gives a histd that compiles and
# runs a trigger from the installed files alone, and a systemd unit.
source "$(dirname "$0")/lib.sh"
BUILD=$(cd "$(dirname "$HISTD_BIN")" && pwd)
PREFIX=$WORK/prefix
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
expect_eq "binaries installed" "yes" \
  "$([ -x "$PREFIX/bin/histd" ] && [ -x "$PREFIX/bin/histctl" ] && [ -x "$PREFIX/bin/histd-cc" ] && echo yes || echo no)"
expect_eq "BPF support files installed" "yes" \
  "$(ls "$PREFIX"/lib*/histd/bpf/dispatcher.bpf.o "$PREFIX"/lib*/histd/bpf/syscall_dispatcher.bpf.o "$PREFIX"/lib*/histd/bpf/hist_helpers.bpf.h >/dev/null 2>&1 && echo yes || echo no)"
expect_eq "systemd unit is Type=notify and restarts on failure" "2" \
  "$(grep -cE '^(Type=notify|Restart=on-failure)$' "$PREFIX/lib/systemd/system/histd.service")"

# The installed histd, configured by a config file, uses the installed BPF
# support files (it says which at start), not the build tree's.
HISTD_BIN=$PREFIX/bin/histd
cat > "$WORK/histd.conf" <<CONF
mount = "$MNT"
socket = "$WORK/histd.sock"
state-dir = "$WORK/state"
pin-dir = "$PIN"
clang = "$(command -v clang)"
CONF
mkdir -p "$MNT"
"$HISTD_BIN" --foreground --config "$WORK/histd.conf" >"$WORK/histd.log" 2>&1 &
HISTD_PID=$!
for _ in $(seq 100); do [ -e "$MNT/events" ] && break; sleep 0.1; done
child_start 'printf abc >/dev/null'
echo "hist:keys=count if common_pid == $CHILD" > "$MNT/events/syscalls/sys_enter_write/trigger"
child_go
expect_eq "installed histd counts" "{ count:          3 } hitcount:          1" "$(rows "$MNT/events/syscalls/sys_enter_write/hist")"
expect_eq "it uses the installed BPF support files" "histd: BPF support files from $(ls -d "$PREFIX"/lib*/histd/bpf)" \
  "$(grep 'BPF support files' "$WORK/histd.log")"
expect_eq "and the compiler the config file names" "histd: compiler $(command -v clang)" \
  "$(grep '^histd: compiler ' "$WORK/histd.log")"
expect_eq "it compiles with the installed histd-cc" "histd: resident compiler $PREFIX/bin/histd-cc" \
  "$(grep 'resident compiler' "$WORK/histd.log")"
finish
