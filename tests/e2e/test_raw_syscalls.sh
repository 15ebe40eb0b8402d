#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# --raw-syscalls (here from the config file): syscall events on the raw
# sys_enter / sys_exit tracepoints count what the classic ones would, say so
# in hist_debug, and survive a crash like any other attachment. A restart
# with the other setting re-attaches the events on the other kind of
# tracepoint, keeping the tables.
source "$(dirname "$0")/lib.sh"
printf 'raw-syscalls = true\n' >"$WORK/histd.conf"
histd_start --config "$WORK/histd.conf"
E=$MNT/events/syscalls
# Raw tracepoint links histd holds, by tracepoint (other processes' do not count).
raw_links() { cat /proc/"$HISTD_PID"/fdinfo/* 2>/dev/null | grep -A4 '^link_type:.raw_tracepoint' | grep -c "^tp_name:.$1\$" || true; }

child_start 'printf abc >/dev/null; printf abcde >/dev/null; printf abcde >/dev/null'
echo "hist:keys=count if common_comm == \"$CHILD_COMM\"" > "$E/sys_enter_write/trigger"
echo "hist:keys=ret:vals=hitcount if common_comm == \"$CHILD_COMM\"" > "$E/sys_exit_write/trigger"
child_go
enter=$(printf '%s\n%s' "{ count:          3 } hitcount:          1" "{ count:          5 } hitcount:          2")
exits=$(printf '%s\n%s' "{ ret:          3 } hitcount:          1" "{ ret:          5 } hitcount:          2")
expect_eq "sys_enter_write counted from the registers" "$enter" "$(grep "^{" "$E/sys_enter_write/hist")"
expect_eq "sys_exit_write: the return value from ax" "$exits" "$(grep "^{" "$E/sys_exit_write/hist")"
expect_eq "hist_debug says raw, with the number" "1 1" \
  "$(grep -c '^  attached: raw tracepoint sys_enter, system call 1 ' "$E/sys_enter_write/hist_debug") $(grep -c '^  attached: raw tracepoint sys_exit, system call 1 ' "$E/sys_exit_write/hist_debug")"
expect_eq "histd holds one raw link each" "1 1" "$(raw_links sys_enter) $(raw_links sys_exit)"

# A crash leaves the raw dispatchers counting; the next histd adopts them.
kill -KILL "$HISTD_PID"; wait "$HISTD_PID" 2>/dev/null || true
printf abcde >/dev/null  # not the child's: filtered out, but runs through the pinned programs
histd_start --config "$WORK/histd.conf"
expect_eq "counts kept after kill -9" "$enter" "$(grep "^{" "$E/sys_enter_write/hist")"
expect_eq "the pinned raw links adopted" "1 1" "$(raw_links sys_enter) $(raw_links sys_exit)"
expect_eq "and only those pinned" "2" "$(find "$PIN" -name '*-raw_link' | wc -l)"

# Restarted with the classic tracepoints: same tables, the raw links gone.
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start
expect_eq "counts kept over the switch" "$exits" "$(grep "^{" "$E/sys_exit_write/hist")"
expect_eq "hist_debug says the classic tracepoint" "1" \
  "$(grep -c '^  attached: tracepoint syscalls:sys_enter_write$' "$E/sys_enter_write/hist_debug")"
expect_eq "no raw link held" "0 0" "$(raw_links sys_enter) $(raw_links sys_exit)"
expect_eq "no raw pins left" "0" "$(find "$PIN" -name '*-raw_*' | wc -l)"
finish
