#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What a test killed by its timeout (SIGKILL: no EXIT trap runs) leaves on
# the host, swept before and after a ctest run (the fixture histd_host,
# which every privileged test requires): its histds, its tree still
# mounted, its pinned programs (still attached to the machine's
# tracepoints) and tables, its directory. Only what a test that is gone
# left: another suite may be running on the machine (another checkout, a
# soak), and its tests' histds, mounts and pins are alive. An e2e test's
# directory /tmp/histd-e2e.X names its owner (tests/e2e/lib.sh writes its
# pid and start time there) and its pins are /sys/fs/bpf/histd-test-X; a
# BPF test's pins end in its pid. Nothing of a histd that is not a test's
# is touched.
#   bash tests/sweep.sh     (as root; prints what it swept)
set -uo pipefail
swept=0

# alive PID START: that process still runs (not another one given its pid,
# nor a zombie: killed, not yet reaped).
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  [ "$(awk '{print $1, $20}' <<<"${stat##*) }")" != "Z $2" ] &&
    [ "$(awk '{print $20}' <<<"${stat##*) }")" = "$2" ]
}
# gone WORK: the test that made the e2e directory WORK has ended.
gone() {
  local pid start
  # No owner: made a moment ago, or by a lib.sh of old; not ours to judge.
  read -r pid start 2>/dev/null <"$1/owner" || return 1
  ! alive "$pid" "$start"
}
# kill_histds TEXT: the histds whose command line contains TEXT.
kill_histds() {
  local p
  for p in $(pgrep -x histd || true); do
    if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$1"; then
      echo "sweep: a test's histd, pid $p"
      kill -KILL "$p" 2>/dev/null || true
      swept=$((swept + 1))
    fi
  done
}
# unmount_under DIR: the histd trees mounted below DIR.
unmount_under() {
  local point
  while read -r point; do
    echo "sweep: a test's tree at $point"
    fusermount3 -u "$point" 2>/dev/null || umount -l "$point" 2>/dev/null || true
    swept=$((swept + 1))
  done < <(awk -v d="$1/" '$3 == "fuse.histd" && index($2, d) == 1 {print $2}' /proc/self/mounts)
}
# unpin DIR: unpinning a link detaches its program.
unpin() {
  [ -e "$1" ] || return 0
  echo "sweep: a test's pins at $1"
  rm -rf "$1"
  swept=$((swept + 1))
}

for work in /tmp/histd-e2e.*; do
  [ -d "$work" ] && gone "$work" || continue
  kill_histds "$work/"
  kill_histds "--pin-dir /sys/fs/bpf/histd-test-${work##*.} "
  sleep 0.2
  unmount_under "$work"
  unpin "/sys/fs/bpf/histd-test-${work##*.}"
  rm -rf --one-file-system "$work"
done
for d in /sys/fs/bpf/histd-test-*; do
  [ -e "$d" ] || continue
  suffix=${d#/sys/fs/bpf/histd-test-}
  if [ -d "/tmp/histd-e2e.${suffix%%-*}" ]; then
    # An e2e test's, alive (the loop above swept the others): its PIN, or
    # one of the PIN-<name> directories of a test running several histds.
    continue
  elif [[ $suffix =~ -([0-9]+)$ ]]; then
    # A BPF test's: alive while that pid is a test binary (histd_*_tests).
    grep -q '^histd_' "/proc/${BASH_REMATCH[1]}/comm" 2>/dev/null && continue
  fi
  kill_histds "--pin-dir $d "
  unpin "$d"
done
# A tree whose histd is gone (its mount answers ENOTCONN), whoever's.
while read -r point; do
  stat "$point" >/dev/null 2>&1 && continue
  echo "sweep: a dead tree at $point"
  umount -l "$point" 2>/dev/null || true
  swept=$((swept + 1))
done < <(awk '$3 == "fuse.histd" && $2 ~ "^/tmp/histd-" {print $2}' /proc/self/mounts)
echo "sweep: $swept left behind by killed tests"
