#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `cmake --install` into a temporary prefix gives a histd that compiles and
# runs a trigger from the installed files alone, and a systemd unit that
# names them: its ExecStart= the installed histd and
# config file, its Documentation= man pages installed with it, whatever the
# prefix or DESTDIR; `systemd-analyze verify` finds nothing to say.
source "$(dirname "$0")/lib.sh"
BUILD=$(cd "$(dirname "$HISTD_BIN")" && pwd)
PREFIX=$WORK/prefix
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
UNIT=$PREFIX/lib/systemd/system/histd.service
expect_eq "binaries installed" "yes" \
  "$([ -x "$PREFIX/bin/histd" ] && [ -x "$PREFIX/bin/histctl" ] && [ -x "$PREFIX/bin/histd-cc" ] && echo yes || echo no)"
expect_eq "BPF support files installed" "yes" \
  "$(ls "$PREFIX"/lib*/histd/bpf/dispatcher.bpf.o "$PREFIX"/lib*/histd/bpf/syscall_dispatcher.bpf.o "$PREFIX"/lib*/histd/bpf/hist_helpers.bpf.h >/dev/null 2>&1 && echo yes || echo no)"
expect_eq "systemd unit is Type=notify and restarts on failure" "2" \
  "$(grep -cE '^(Type=notify|Restart=on-failure)$' "$UNIT")"
expect_eq "the unit runs the installed histd with the installed config" \
  "ExecStart=$PREFIX/bin/histd --foreground --config $PREFIX/etc/histd/histd.conf" "$(grep '^ExecStart=' "$UNIT")"
expect_eq "that config is installed" "yes" "$([ -f "$PREFIX/etc/histd/histd.conf" ] && echo yes || echo no)"
expect_eq "it names the configuration directory installed beside it" \
  "config-dir = \"$PREFIX/etc/histd/triggers.d\" yes" \
  "$(grep '^config-dir = ' "$PREFIX/etc/histd/histd.conf") $([ -d "$PREFIX/etc/histd/triggers.d" ] && echo yes || echo no)"
expect_eq "and an example for it" "yes" \
  "$([ -f "$PREFIX/share/doc/histd/examples/triggers.d/wakeup-latency.conf" ] && echo yes || echo no)"
# Every man:PAGE(8) the unit names is installed, and is a man page.
pages=$(sed -n 's/^Documentation=//p' "$UNIT" | tr ' ' '\n' | sed -n 's/^man:\(.*\)(8)$/\1/p')
expect_eq "the unit documents histd(8) and histctl(8)" "histd histctl" "$(echo $pages)"
for p in $pages; do
  expect_eq "man page $p(8) installed" "${p^^}" \
    "$(zcat "$PREFIX/share/man/man8/$p.8.gz" 2>/dev/null | sed -n 's/^\.TH \([^ ]*\) 8 .*/\1/p')"
done
# verify loads the unit, checks ExecStart='s program and runs `man` for
# Documentation=: clean is no output at all.
verify=$(cd "$WORK" && MANPATH=$PREFIX/share/man systemd-analyze verify "$UNIT" 2>&1) || verify+=" (exit $?)"
expect_eq "systemd-analyze verify of the installed unit is clean" "" "$verify"

# DESTDIR stages the files; the unit names where they will be, below the prefix.
DEST=$WORK/dest
DESTDIR=$DEST cmake --install "$BUILD" --prefix /opt/histd-test >/dev/null
expect_eq "with DESTDIR, the unit names the prefix's histd and config" \
  "ExecStart=/opt/histd-test/bin/histd --foreground --config /opt/histd-test/etc/histd/histd.conf" \
  "$(grep '^ExecStart=' "$DEST/opt/histd-test/lib/systemd/system/histd.service")"
expect_eq "and the files are staged there" "yes" \
  "$([ -x "$DEST/opt/histd-test/bin/histd" ] && [ -f "$DEST/opt/histd-test/etc/histd/histd.conf" ] &&
     ls "$DEST"/opt/histd-test/lib*/histd/bpf/dispatcher.bpf.o >/dev/null 2>&1 &&
     [ -f "$DEST/opt/histd-test/share/man/man8/histd.8.gz" ] && echo yes || echo no)"
expect_eq "nothing outside DESTDIR" "no" "$([ -e /opt/histd-test ] && echo yes || echo no)"
# The system's own prefix: the unit where systemd looks on Debian 12, the
# config in /etc (as the package installs them).
DESTDIR=$WORK/usr-dest cmake --install "$BUILD" --prefix /usr >/dev/null
expect_eq "with the prefix /usr, the unit in /lib/systemd/system names /etc/histd/histd.conf" \
  "ExecStart=/usr/bin/histd --foreground --config /etc/histd/histd.conf" \
  "$(grep '^ExecStart=' "$WORK/usr-dest/lib/systemd/system/histd.service" 2>&1)"
expect_eq "and the config is in /etc/histd, naming /etc/histd/triggers.d" "yes config-dir = \"/etc/histd/triggers.d\"" \
  "$([ -f "$WORK/usr-dest/etc/histd/histd.conf" ] && [ -d "$WORK/usr-dest/etc/histd/triggers.d" ] && echo yes || echo no) $(grep '^config-dir = ' "$WORK/usr-dest/etc/histd/histd.conf")"

# The installed histd, configured by a config file, uses the installed BPF
# support files (it says which at start), not the build tree's.
HISTD_BIN=$PREFIX/bin/histd
cat > "$WORK/histd.conf" <<CONF
mount = "$MNT"
socket = "$WORK/histd.sock"
state-dir = "$WORK/state"
pin-dir = "$PIN"
clang = "$(command -v clang)"
config-dir = "$PREFIX/etc/histd/triggers.d"
CONF
mkdir -p "$MNT"
"$HISTD_BIN" --foreground --config "$WORK/histd.conf" >"$WORK/histd.log" 2>&1 &
HISTD_PID=$!
await_tree "$MNT" "$HISTD_PID" "$WORK/histd.log"
child_start 'printf abc >/dev/null'
echo "hist:keys=count if common_comm == \"$CHILD_COMM\"" > "$MNT/events/syscalls/sys_enter_write/trigger"
child_go
expect_eq "installed histd counts" "{ count:          3 } hitcount:          1" "$(rows "$MNT/events/syscalls/sys_enter_write/hist")"
expect_eq "it uses the installed BPF support files" "histd: BPF support files from $(ls -d "$PREFIX"/lib*/histd/bpf)" \
  "$(grep 'BPF support files' "$WORK/histd.log")"
expect_eq "and the compiler the config file names" "histd: compiler $(command -v clang)" \
  "$(grep '^histd: compiler ' "$WORK/histd.log")"
expect_eq "it compiles with the installed histd-cc" "histd: resident compiler $PREFIX/bin/histd-cc" \
  "$(grep 'resident compiler' "$WORK/histd.log")"
finish
