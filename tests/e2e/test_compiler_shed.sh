#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The resident compiler gives back its memory while nothing is compiled and
# stays: with --compiler-idle-shed 1, histd-cc's resident
# size falls to well under half of what it held after a compile, its pid does
# not change, and the next trigger is still compiled by it (not clang, no
# restart) and counts; what the shed dropped, gone from the page cache too,
# is read ahead for that compile.
source "$(dirname "$0")/lib.sh"
histd_start --compiler-idle-shed 1
ctl() { "$HISTCTL_BIN" --socket "$WORK/histd.sock" "$@"; }
compiler() { ctl status --json |
  python3 -c "import json,sys; c=json.load(sys.stdin)['compiler']; print(*(c[k] for k in '$1'.split()))"; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

pid=$(compiler pid)
W=$MNT/events/syscalls/sys_enter_getppid
echo "hist:keys=common_pid" >>"$W/trigger"
compiled=$(rss_kib "$pid")
# Shed a second after the compile; give a loaded machine a few.
for _ in $(seq 50); do [ "$(rss_kib "$pid")" -lt $((compiled / 2)) ] && break; sleep 0.1; done
idle=$(rss_kib "$pid")
echo "histd-cc: $((compiled / 1024)) MiB after a compile, $((idle / 1024)) MiB idle"
expect_eq "idle, histd-cc holds less than half of what it did after compiling" "yes" \
  "$([ "$idle" -lt $((compiled / 2)) ] && echo yes || echo "no: $idle of $compiled KiB")"
expect_eq "it is still running, the same process" "running $pid" "$(compiler 'state pid')"

# What a long idle may do next (some machines do it within minutes): the
# page cache lets go of the libraries' pages the shed unmapped. histd-cc
# then asks for what it dropped to be read ahead when the next request
# comes, rather than reading a page at a time as the compile faults (~65
# reads for this unit without it). Pages another process maps (a
# parallel test's histd-cc or clang) cannot leave the page cache: those
# are no reads either way.
python3 - "$pid" <<'PY'
import os, sys
libs = {line.split()[5] for line in open(f"/proc/{sys.argv[1]}/maps") if len(line.split()) == 6 and ".so" in line.split()[5]}
for path in libs:
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
PY
major_faults() { awk '{print $12}' "/proc/$pid/stat"; }
before=$(major_faults)

W2=$MNT/events/syscalls/sys_enter_getpid
# Another unit (keyed by two fields): the first one's cached object would
# not need histd-cc.
echo "hist:keys=common_pid,__syscall_nr:vals=hitcount" >>"$W2/trigger"
expect_eq "the next trigger is compiled by it: no restart, no clang" "2 0 0 $pid" \
  "$(compiler 'compiles_served clang_compiles restarts pid')"
reads=$(($(major_faults) - before))
echo "histd-cc read $reads times itself while compiling after the page cache let go of its libraries"
expect_eq "what the shed dropped was read ahead, not a page at a time by the compile" "yes" \
  "$([ "$reads" -le 16 ] && echo yes || echo "no: $reads reads")"
python3 -c 'import os; [(os.getppid(), os.getpid()) for _ in range(50)]'
expect_eq "both triggers count" "2" "$(cat "$W/hist" "$W2/hist" | grep -cE '^ *Hits: [1-9]')"
finish
