#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The installed histd.conf documents every option of `histd --help`, and
# nothing else; histd takes the file as it is, and with every line that is
# commented out put in.
source "$(dirname "$0")/lib.sh"
CONF_FILE=$(cd "$(dirname "$0")/../../daemon/service" && pwd)/histd.conf

# --help, --version and --config are about the command line itself.
options=$("$HISTD_BIN" --help | grep -oE -- '--[a-z][a-z-]*' | sed 's/^--//' | grep -vxE 'help|version|config' | sort -u)
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
finish
