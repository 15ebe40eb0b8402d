#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Instances cost what they use. An instance that records nothing holds no
# trace ring (no BPF ring buffer in the kernel, nothing of it mapped in
# histd), even with a hist trigger: 32 of them, read as a user looks at them, add at most 16 MiB to
# histd's resident size and no ring. Instances that record, made and
# removed one after another, leave histd's resident size within 10% of
# where it started, and its open files as they were: rmdir gives back the
# instance's ring, its programs and what its records took of the heap.
source "$(dirname "$0")/lib.sh"

histd_start
I=$MNT/instances
CYCLES=200
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$HISTD_PID/status"; }
fds() { find "/proc/$HISTD_PID/fd" -mindepth 1 | wc -l; }
# KiB of the BPF ring buffers (map type 27) histd holds an fd of.
rings() {
  local f total=0
  for f in /proc/"$HISTD_PID"/fdinfo/*; do
    total=$((total + $(awk '/^map_type:/ {t = $2} /^memlock:/ {m = $2} END {print (t == 27 ? int(m / 1024) : 0)}' \
      "$f" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
# "ok" when $1 <= $2, else both.
at_most() { [ "$1" -le "$2" ] && echo ok || echo "$1 > $2"; }

sleep 1
rss0=$(rss)
rings0=$(rings)
for i in $(seq 32); do
  mkdir "$I/i$i"
  cat "$I/i$i/trace" "$I/i$i/buffer_size_kb" "$I/i$i/tracing_on" "$I/i$i/snapshot" >/dev/null
done
sleep 1
expect_eq "32 idle instances add at most 16 MiB to histd's RSS" "ok" "$(at_most $(($(rss) - rss0)) 16384)"
expect_eq "and hold no trace ring" "$rings0" "$(rings)"
expect_eq "an idle instance's buffer_size_kb is the top tree's" "$(cat "$MNT/buffer_size_kb")" \
  "$(cat "$I/i1/buffer_size_kb")"
echo "idle $$" >"$I/i1/trace_marker"
expect_eq "its trace_marker still writes to its trace" "1" "$(grep -c "tracing_mark_write: idle $$\$" "$I/i1/trace")"
expect_eq "still without a ring" "$rings0" "$(rings)"
# Nor does one whose only trigger is a hist trigger: its program sends
# histd nothing.
echo 'hist:keys=common_pid' >"$I/i2/events/syscalls/sys_enter_getppid/trigger"
bash -c :
expect_eq "an instance with a hist trigger counts" "ok" \
  "$(grep -qE '^ *Hits: [1-9]' "$I/i2/events/syscalls/sys_enter_getppid/hist" && echo ok)"
expect_eq "and holds no ring" "$rings0" "$(rings)"
: >"$I/i2/events/syscalls/sys_enter_getppid/trigger"
for i in $(seq 32); do rmdir "$I/i$i"; done

# The top tree records (its ring and its printer made: what histd keeps
# for its life), then instances record one after another: the getppid()
# of a bash starting, of this test's own (other tasks' would fill the
# buffers).
E=events/syscalls/sys_enter_getppid
COMM=$(own_comm getppid)
RUN=$(comm_link "$COMM" bash)
record() {
  echo "common_comm == \"$COMM\"" >"$1/$E/filter"
  echo 1 >"$1/$E/enable"
}
record "$MNT"
"$RUN" -c :
expect_eq "the top tree records getppid()" "ok" "$(grep -q 'sys_getppid()' "$MNT/trace" && echo ok)"
rss1=$(rss)
fds1=$(fds)
rings1=$(rings)
recorded=0
for n in $(seq "$CYCLES"); do
  mkdir "$I/c"
  record "$I/c"
  "$RUN" -c :
  echo "cycle $n" >"$I/c/trace_marker"
  if grep -q 'sys_getppid()' "$I/c/trace"; then recorded=$((recorded + 1)); fi
  rmdir "$I/c"
done
# Events a busy CPU skipped aside (another BPF program ran there), each
# instance recorded its getppid().
expect_eq "the instances recorded" "ok" "$(at_most $((CYCLES / 2)) "$recorded")"
# Past the tree's trim of freed heap, a few seconds after an rmdir.
sleep 7
expect_eq "after $CYCLES instances that recorded, histd's RSS is within 10% of its start" "ok" \
  "$(at_most "$(rss)" $((rss1 * 11 / 10)))"
expect_eq "its open files are those it had" "$fds1" "$(fds)"
expect_eq "its rings are the top tree's" "$rings1" "$(rings)"
finish
