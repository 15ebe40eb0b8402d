#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The kernel's own ftrace selftests for event triggers (test.d/trigger of
# tools/testing/selftests/ftrace), run unchanged against histd's tree. They
# are the kernel's (GPL), not ours: they are taken from Debian's
# linux-source package at run time, never copied into this repository.
#
# ftracetest finds tracefs as the first tracefs line of /proc/mounts. It runs
# in a mount namespace of its own (unshare -m) in which histd's tree is bound
# over every tracefs mount point, so that whichever it picks is histd's; histd
# itself runs outside, in the machine's namespace, and reads the real tracefs
# for its event formats. Nothing else is changed: no script is edited.
#
# Each test file runs on its own (ftracetest runs a test flagged `instance`
# a second time in instances/), and every result is reported with the
# reason the test's log gives. The run fails on FAIL, UNRESOLVED or a test
# bug, and when a test listed in ftrace_passing.txt does not pass; UNSUPPORTED
# (a tracefs file or feature histd lacks) is listed, not failed; so is N/A:
# in a child PID namespace, a test of ftrace_pidns.txt that fails as that
# file says it must there, on any kernel.
#
#   ftracetest.sh HISTD HISTCTL     (root; KSFT_SOURCE=tarball, KSFT_CACHE=dir)
source "$(dirname "$0")/../e2e/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
TARBALL=${KSFT_SOURCE:-$(ls /usr/src/linux-source-6.12.tar.xz 2>/dev/null || true)}
[ -n "$TARBALL" ] && [ -f "$TARBALL" ] || { echo "no linux-source tarball (apt-get install linux-source-6.12)"; exit 1; }
command -v unshare >/dev/null || { echo "unshare (util-linux) is needed"; exit 1; }

# The selftests, extracted once per tarball (about 10 s) into a cache.
CACHE=${KSFT_CACHE:-/var/cache/histd-ksft}
stamp=$(stat -c '%s-%Y' "$TARBALL")
top=$(basename "$TARBALL" .tar.xz)
SRC=$CACHE/$top/tools/testing/selftests/ftrace
if [ "$(cat "$CACHE/$top.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -x "$SRC/ftracetest" ]; then
  rm -rf "${CACHE:?}/$top"
  mkdir -p "$CACHE"
  tar -xJf "$TARBALL" -C "$CACHE" --wildcards "$top/tools/testing/selftests/ftrace/*"
  echo "$stamp" >"$CACHE/$top.stamp"
fi

histd_start
LOGS=$WORK/logs
mkdir -p "$LOGS"
# Binds histd's tree over each tracefs mount point of the new namespace
# (mounting one at /sys/kernel/tracing if there is none), then runs the
# test file given.
run_one() {
  unshare -m --propagation private bash -c '
    set -e
    mnt=$1; shift
    points=$(awk '\''$3 == "tracefs" { print $2 }'\'' /proc/mounts)
    if [ -z "$points" ]; then mount -t tracefs nodev /sys/kernel/tracing; points=/sys/kernel/tracing; fi
    for p in $points; do mount --bind "$mnt" "$p"; done
    cd "$1"; shift
    exec ./ftracetest "$@"' _ "$MNT" "$SRC" "$@"
}

# A line is a test's name as reported, "(instance)" included.
declare -A passing=()
while read -r name; do
  [ -n "$name" ] && [ "${name:0:1}" != "#" ] && passing[$name]=1
done <"$HERE/ftrace_passing.txt"

# The reason a test gives for its result: its last line that is not a
# shell trace (set -x) or the harness's own exit.
reason_of() {
  grep -v -e '^+' -e '^execute: ' "$1" 2>/dev/null | grep -v '^\s*$' | tail -1 | cut -c1-160
}

declare -A pidns_fails=() pidns_why=()
if in_child_pid_namespace; then
  echo "in a child PID namespace: the tests of ftrace_pidns.txt that fail as it says are N/A"
  while IFS=$'\t' read -r name message why; do
    [ -n "$name" ] && [ "${name:0:1}" != "#" ] || continue
    pidns_fails[$name]=$message pidns_why[$name]=$why
  done <"$HERE/ftrace_pidns.txt"
fi

# Tests that compare two reads of a table that every fork on the machine
# changes: on a busy machine (ctest -j2) a fork between the reads fails them,
# as it would on the kernel's own tracefs. Such a test that fails is run
# again (twice at most), and the failure it had is reported.
declare -A racy=()
while read -r name _; do
  [ -n "$name" ] && [ "${name:0:1}" != "#" ] && racy[$name]=1
done <"$HERE/ftrace_racy.txt"

declare -A counts=() seen=()
bad=0
cd "$SRC"
for tc in $(find test.d/trigger -name '*.tc' | sort); do
  dir=$LOGS/$(basename "$tc" .tc)
  out=$(run_one -k -l "$dir" "$tc" 2>&1 || true)
  for _ in 1 2; do
    [ -n "${racy[${tc#test.d/}]:-}" ] && grep -q '\[FAIL\]$' <<<"$out" || break
    echo "RETRIED      ${tc#test.d/} -- it failed: $(reason_of "$(ls "$dir"/*-log.* 2>/dev/null | head -1)")"
    rm -rf "$dir"
    out=$(run_one -k -l "$dir" "$tc" 2>&1 || true)
  done
  n=0
  while IFS= read -r line; do
    result=$(sed -n 's/.*\[\([A-Z]*\)\]$/\1/p' <<<"$line")
    [ -n "$result" ] || continue
    n=$((n + 1))
    name=${tc#test.d/}
    case "$line" in *"(instance)"*) name="$name (instance)" ;; esac
    log=$(ls "$dir"/"$n"-*-log.* 2>/dev/null | head -1)
    why=
    [ "$result" = PASS ] || why=" -- $(reason_of "$log")"
    if [ "$result" = FAIL ] && [ -n "${pidns_fails[${tc#test.d/}]:-}" ] &&
       [ "${why# -- }" = "${pidns_fails[${tc#test.d/}]}" ]; then
      result=N/A
      why="$why -- cannot pass in a child PID namespace: ${pidns_why[${tc#test.d/}]}"
    fi
    printf '%-12s %s%s\n' "$result" "$name" "$why"
    counts[$result]=$((${counts[$result]:-0} + 1))
    case "$result" in
      PASS | UNSUPPORTED | XFAIL | N/A) ;;
      *) bad=$((bad + 1)) ;;
    esac
    seen[$name]=1
    if [ -n "${passing[$name]:-}" ] && [ "$result" != PASS ] && [ "$result" != N/A ]; then
      echo "    ^ listed in ftrace_passing.txt: a regression"
      bad=$((bad + 1))
    fi
  done < <(grep -E '^\[[0-9]+\]' <<<"$out")
  if [ "$n" -eq 0 ]; then
    echo "NO RESULT    ${tc#test.d/}: ftracetest said:"; sed 's/^/    /' <<<"$out" | tail -20
    bad=$((bad + 1))
  fi
done
cd /
# A listed test that gave no result at all (its run did not happen) fails too.
for name in "${!passing[@]}"; do
  [ -n "${seen[$name]:-}" ] && continue
  echo "NOT RUN      $name -- listed in ftrace_passing.txt"
  bad=$((bad + 1))
done
echo
for r in "${!counts[@]}"; do echo "$r: ${counts[$r]}"; done | sort
if [ "$bad" -ne 0 ]; then
  echo "$bad result(s) failed the run"
  exit 1
fi
echo "no test failed"
