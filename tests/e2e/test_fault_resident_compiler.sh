#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fault: the resident compiler's surroundings.
# - histd (and so histd-cc) started in a directory that is then deleted:
#   every compile used to fail ("histd-cc: cannot resolve unit.c"); nothing
#   depends on the working directory now.
# - histd-cc killed between compiles: it used to stay a zombie until the
#   next compile; it is reaped at once and a new one started, which compiles
#   the next trigger.
source "$(dirname "$0")/lib.sh"

HISTD_BIN=$(realpath "$HISTD_BIN")
mkdir "$WORK/cwd"
cd "$WORK/cwd"
histd_start
cd /
rmdir "$WORK/cwd"
counted_writes || true  # refused (EINVAL) before the fix
writes 2
expect_eq "started in a deleted directory: a trigger applies" "2" "$(hits)"
expect_eq "compiled by histd-cc, not by clang after a failure" "0" \
  "$(grep -c 'clang compiles this unit\|failed on the generated unit' "$WORK/histd.log")"

server() { ps -o pid= --ppid "$HISTD_PID" | tr -d ' ' | while read -r p; do
  [ "$(cat "/proc/$p/comm" 2>/dev/null)" = histd-cc ] && echo "$p"; done; }
first=$(server)
expect_eq "histd-cc runs as histd's child" "1" "$(wc -w <<<"$first")"
kill -KILL "$first"
state=Z
for _ in $(seq 50); do
  state=$(awk '{print $3}' "/proc/$first/stat" 2>/dev/null || true)
  [ -z "$state" ] && break
  sleep 0.1
done
expect_eq "a killed histd-cc is reaped (no zombie left)" "" "$state"
next=
for _ in $(seq 50); do next=$(server); [ -n "$next" ] && break; sleep 0.1; done
expect_eq "and another one runs" "yes" "$([ -n "$next" ] && [ "$next" != "$first" ] && echo yes)"
expect_eq "histd said so" "1" "$(grep -c "histd-cc (pid $first) ended with signal 9 between compiles; starting another" "$WORK/histd.log")"
echo "hist:keys=common_pid if count == $SIZE" >>"$W/trigger"
expect_eq "the next trigger applies" "2" "$(grep -c '^hist:' "$W/trigger")"
expect_eq "compiled by the new histd-cc" "0" "$(grep -c 'clang compiles this unit' "$WORK/histd.log")"
finish
