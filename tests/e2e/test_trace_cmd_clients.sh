#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# trace-cmd's other commands on histd's tree, unchanged, in a namespace
# where the tree is the tracefs (in_ns, lib.sh): `list -C` and `stat` read
# the clock and the buffers; `start` with a hist trigger (-R) beside the
# recording of the same events, then `stop` and `extract`: the histogram
# counts what the recording holds; `record -e all` for a second.
source "$(dirname "$0")/lib.sh"
command -v trace-cmd >/dev/null || { echo "FAIL: trace-cmd is needed (apt-get install trace-cmd)"; exit 1; }
histd_start --max-triggers 64
cpus=$(ls -d "$MNT"/per_cpu/cpu* | wc -l)

expect_eq "trace-cmd list -C: the clock histd stamps with" "[mono]" "$(in_ns "$MNT" trace-cmd list -C)"
stat=$(in_ns "$MNT" trace-cmd stat 2>&1)
after() { grep -A1 -F "$1" <<<"$stat" | tail -1 | tr -d ' '; }
expect_eq "trace-cmd stat: each CPU's buffer" "4096" "$(after 'Buffer size in kilobytes (per cpu):')"
expect_eq "  and all of them" "$((4096 * cpus))" "$(after 'Buffer total size in kilobytes:')"

# A hist trigger beside the recording of the same writes: the same program
# sees each write for both, so the histogram counts what was recorded.
COMM=$(own_comm tcli)
DD=$(comm_link "$COMM" dd)
SIZE=$(own_number 1000 3000)
in_ns "$MNT" trace-cmd start -e syscalls:sys_enter_write -f "count == $SIZE" \
  -R "hist:keys=common_comm:vals=count if count == $SIZE" >"$WORK/start.log" 2>&1 ||
  { echo "FAIL: trace-cmd start:"; cat "$WORK/start.log"; }
"$DD" if=/dev/zero of=/dev/null bs="$SIZE" count=5 status=none
hist=$(cat "$MNT/events/syscalls/sys_enter_write/hist")
in_ns "$MNT" trace-cmd stop >/dev/null 2>&1
(cd "$WORK" && in_ns "$MNT" trace-cmd extract -o "$WORK/hist.dat") >"$WORK/extract.log" 2>&1 ||
  { echo "FAIL: trace-cmd extract:"; cat "$WORK/extract.log"; }
hits=$(sed -n "s/^{ common_comm: $COMM *} hitcount: *\([0-9]*\) .*/\1/p" <<<"$hist")
recorded=$(trace-cmd report -i "$WORK/hist.dat" 2>/dev/null | grep -c "sys_enter_write: .*count: $(printf '0x%08x' "$SIZE")\$" || true)
expect_eq "trace-cmd start -R: a histogram of the writes" "yes" \
  "$([ "${hits:-0}" -ge 1 ] && [ "$hits" -le 5 ] && echo yes || echo "no: $hist")"
expect_eq "  which counts what the recording holds" "$hits" "$recorded"
in_ns "$MNT" trace-cmd reset >/dev/null 2>&1 || true
expect_eq "trace-cmd reset takes the trigger away" "" \
  "$(grep -v '^#' "$MNT/events/syscalls/sys_enter_write/trigger")"

# record -e all for a second: histd enables as many events as its trigger
# limit allows (each is a BPF program, and a write past the limit is
# refused with ENOSPC), trace-cmd records them and ends; none stays enabled.
rc=0
(cd "$WORK" && in_ns "$MNT" timeout -k 10 120 trace-cmd record -o "$WORK/all.dat" -e all sleep 1) \
  >"$WORK/all.log" 2>&1 || rc=$?
expect_eq "trace-cmd record -e all ends, with its file" "0 yes" "$rc $([ -s "$WORK/all.dat" ] && echo yes)"
[ "$rc" = 0 ] || tail -5 "$WORK/all.log"
expect_eq "  and leaves none enabled" "0" "$(cat "$MNT/events/enable")"

finish
