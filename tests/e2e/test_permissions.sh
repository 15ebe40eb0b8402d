#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Only root, or the configured group, may change triggers, through the tree
# or the socket; both are theirs alone for reads too (they show kernel
# addresses: test_tree_readers.sh), and histctl says so with exit status 3.
source "$(dirname "$0")/lib.sh"
chmod 755 "$WORK"
histd_start
W=$MNT/events/syscalls/sys_enter_write
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_adm() { setpriv --reuid=65534 --regid=65534 --groups=4 "$@"; }
# A copy the unprivileged user can reach wherever the build tree is.
cp "$HISTCTL_BIN" "$WORK/histctl"; chmod 755 "$WORK/histctl"
HISTCTL=("$WORK/histctl" --socket "$WORK/histd.sock")

echo 'hist:keys=fd if common_pid == 1' > "$W/trigger"
expect_eq "an unprivileged user may not read the hist file" "denied" \
  "$(as_nobody cat "$W/hist" >/dev/null 2>&1 && echo allowed || echo denied)"
expect_eq "the socket is root's alone" "600 root root" "$(stat -c '%a %U %G' "$WORK/histd.sock")"
rc=0; out=$(as_nobody "${HISTCTL[@]}" list 2>&1) || rc=$?
expect_eq "an unprivileged user may not list triggers through the socket" \
  "histctl: histd's control socket needs root ($WORK/histd.sock: Permission denied)" "$out"
expect_eq "histctl exits 3" "3" "$rc"
chmod 666 "$WORK/histd.sock"
rc=0; out=$(as_nobody "${HISTCTL[@]}" list 2>&1) || rc=$?
expect_eq "were the socket's mode loosened, histd refuses by the peer's credentials" \
  "histctl: histd's control socket needs root 3" "$out $rc"
chmod 600 "$WORK/histd.sock"
expect_eq "nor write a trigger file" "denied" \
  "$(as_nobody bash -c "echo 'hist:keys=count' >> '$W/trigger'" 2>/dev/null && echo allowed || echo denied)"
expect_eq "nor add through the socket" "histctl: histd's control socket needs root ($WORK/histd.sock: Permission denied)" \
  "$(as_nobody "${HISTCTL[@]}" add syscalls:sys_enter_write 'hist:keys=count' 2>&1)"
expect_eq "nothing changed" "1" "$(grep -c '^hist:' "$W/trigger")"
expect_eq "state directory is private" "700" "$(stat -c %a "$WORK/state")"

# With --group adm, members of adm may change triggers.
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
HISTD_EXTRA=(--group adm)
"$HISTD_BIN" --foreground --mount "$MNT" --socket "$WORK/histd.sock" --state-dir "$WORK/state" --pin-dir "$PIN" \
  "${HISTD_EXTRA[@]}" >>"$WORK/histd.log" 2>&1 &
HISTD_PID=$!
await_tree "$MNT" "$HISTD_PID" "$WORK/histd.log"
expect_eq "the socket is root's and the group's" "660 root adm" "$(stat -c '%a %U %G' "$WORK/histd.sock")"
expect_eq "a member of the group lists through the socket" "$("${HISTCTL[@]}" list)" "$(as_adm "${HISTCTL[@]}" list)"
expect_eq "a member of the group writes the trigger file" "allowed" \
  "$(as_adm bash -c "echo 'hist:keys=count if common_pid == 1' >> '$W/trigger'" 2>/dev/null && echo allowed || echo denied)"
expect_eq "and adds through the socket" "" \
  "$(as_adm "${HISTCTL[@]}" add syscalls:sys_enter_write 'hist:keys=common_pid if common_pid == 1' 2>&1)"
expect_eq "others still may not" "denied" \
  "$(as_nobody bash -c "echo 'hist:keys=buf' >> '$W/trigger'" 2>/dev/null && echo allowed || echo denied)"
rc=0; out=$(as_nobody "${HISTCTL[@]}" show syscalls:sys_enter_write 2>&1) || rc=$?
expect_eq "nor read through the socket" \
  "histctl: histd's control socket needs root or membership of group adm ($WORK/histd.sock: Permission denied) 3" \
  "$out $rc"
expect_eq "three triggers" "3" "$(grep -c '^hist:' "$W/trigger")"
finish
