#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What a test killed by its timeout (SIGKILL: no EXIT trap runs) leaves on
# the host, swept before and after a ctest run (the fixture histd_host,
# which every privileged test requires): histds a test started (found by
# their test pin directory, /sys/fs/bpf/histd-test-*), their trees still
# mounted under /tmp/histd-*, and their pinned programs (still attached to
# the machine's tracepoints) and tables. Nothing of a histd that is not a
# test's is touched.
#   bash tests/sweep.sh     (as root; prints what it swept)
set -uo pipefail
swept=0
# A test's histd: its command line names a test pin directory.
for p in $(pgrep -x histd || true); do
  if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- '--pin-dir /sys/fs/bpf/histd-test-'; then
    echo "sweep: a test's histd, pid $p"
    kill -KILL "$p" 2>/dev/null || true
    swept=$((swept + 1))
  fi
done
sleep 0.2
# Its tree: a fuse.histd mount in a test's directory under /tmp.
while read -r point; do
  echo "sweep: a test's tree at $point"
  fusermount3 -u "$point" 2>/dev/null || umount -l "$point" 2>/dev/null || true
  swept=$((swept + 1))
done < <(awk '$3 == "fuse.histd" && $2 ~ "^/tmp/histd-" {print $2}' /proc/self/mounts)
# Its pins: unpinning a link detaches its program.
for d in /sys/fs/bpf/histd-test-*; do
  [ -e "$d" ] || continue
  echo "sweep: a test's pins at $d"
  rm -rf "$d"
  swept=$((swept + 1))
done
echo "sweep: $swept left behind by killed tests"
