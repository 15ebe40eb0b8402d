#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The installed histd.conf documents every option of `histd --help`, and
# nothing else; histd takes the file as it is, and with every line that is
# commented out put in.
source "$(dirname "$0")/lib.sh"
CONF_FILE=$(cd "$(dirname "$0")/../../daemon/service" && pwd)/histd.conf

# --help, --version and --config are about the command line itself. An
# option's first name (an older one after a comma is still read).
options=$("$HISTD_BIN" --help | grep -oE -- '^ +(-[a-zA-Z],)?--[a-z][a-z-]*' | sed 's/.*--//' |
  grep -vxE 'help|version|config' | sort -u)
documented=$(sed -nE 's/^#? ?([a-z][a-z-]*) = .*/\1/p' "$CONF_FILE" | sort -u)
expect_eq "every option of histd --help has its line in histd.conf, and no other" "$options" "$documented"

# The command line overrides the file: the test's own paths.
histd_start --config "$CONF_FILE"
expect_eq "histd takes histd.conf as installed" "yes" "$(kill -0 "$HISTD_PID" 2>/dev/null && echo yes)"
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
# The exporter's user the package makes is the test's own here.
exporter_user
sed -E 's/^# ([a-z][a-z-]*) = /\1 = /; s/^metrics-user = "histd-exporter"/metrics-user = "'"$EXPORTER_USER"'"/' \
  "$CONF_FILE" >"$WORK/all.conf"
histd_start --config "$WORK/all.conf"
expect_eq "and every default it shows" "yes" "$(kill -0 "$HISTD_PID" 2>/dev/null && echo yes)"
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true

# A misspelt key is not a setting silently left out: histd does not start.
printf 'trace-buffer-size = 8192\ntriggers-per-programm = 8\n' >"$WORK/typo.conf"
rc=0
"$HISTD_BIN" -f --config "$WORK/typo.conf" --mount "$WORK/typo-mnt" >"$WORK/typo.out" 2>&1 || rc=$?
expect_eq "a misspelt key in the file: exit 1" "1" "$rc"
expect_eq "the file and the key named" \
  "histd: $WORK/typo.conf: no option triggers-per-programm (a key is one of histd's options, histd --help, without its dashes)" \
  "$(cat "$WORK/typo.out")"
# Its former name is still an option.
printf 'plain-triggers-per-program = 2\n' >"$WORK/old.conf"
histd_start --config "$WORK/old.conf"
expect_eq "histd takes an option's former name" "yes" "$(kill -0 "$HISTD_PID" 2>/dev/null && echo yes)"
finish
