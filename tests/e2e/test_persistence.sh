#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Triggers and counts survive a restart (SIGTERM) and a crash (kill -9):
# triggers come back from the state directory, counts from pinned maps.
source "$(dirname "$0")/lib.sh"
histd_start
W=$MNT/events/syscalls/sys_enter_write

child_start 'for i in 1 2 3; do printf abc >/dev/null; done'
echo "hist:keys=count:vals=hitcount if common_comm == \"$CHILD_COMM\"" > "$W/trigger"
echo "hist:keys=fd:vals=count:pause if common_comm == \"$CHILD_COMM\"" >> "$W/trigger"
echo "hist:keys=count.log2 if common_comm == \"$CHILD_COMM\"" >> "$W/trigger"  # an array of slots, not a hash
child_go
before=$(cat "$W/trigger")
counted=$(printf '%s\n%s' "{ count:          3 } hitcount:          3" "{ count: ~ 2^2  } hitcount:          3")
expect_eq "counted before the restart" "$counted" "$(grep "^{" "$W/hist")"
expect_eq "state file is private" "600" "$(stat -c %a "$WORK/state/triggers.json")"
# keys=count keeps its repeats in hot slots (the first event makes the entry,
# the next ones add in the slot), pinned beside the table: the counts below
# hold only if the slots come back too.
expect_eq "hot slots for keys=count and keys=fd, pinned" "2 2" \
  "$(grep -c '^  hot slots: percpu_array' "$W/hist_debug") $(ls "$PIN" | grep -c '_hot$')"

kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start
expect_eq "triggers restored after SIGTERM, pause state too" "$before" "$(cat "$W/trigger")"
expect_eq "counts kept after SIGTERM" "$counted" "$(grep "^{" "$W/hist")"

# After a crash the programs stay attached: what happens while histd is
# down is counted too. Writes of exactly 4321 bytes are ours.
D=$MNT/events/syscalls/sys_enter_write
echo "hist:keys=count:vals=hitcount if count == 4321" >> "$W/trigger"
write4321() { python3 -c 'import os; os.write(os.open("/dev/null", os.O_WRONLY), b"x" * 4321)'; }
write4321
expect_eq "counted before the crash" "1" "$(grep -c '{ count:       4321 } hitcount:          1' "$W/hist")"
kill -KILL "$HISTD_PID"; wait "$HISTD_PID" 2>/dev/null || true
write4321; write4321
histd_start
expect_eq "triggers restored after kill -9" "4" "$(grep -c '^hist:' "$W/trigger")"
expect_eq "counts kept after kill -9" "1" "$(grep -c '{ count:          3 } hitcount:          3' "$W/hist")"
expect_eq "log2 slots kept after kill -9" "1" "$(grep -c '{ count: ~ 2^2  } hitcount:          3' "$W/hist")"
expect_eq "and the writes made while histd was down were counted" "1" \
  "$(grep -c '{ count:       4321 } hitcount:          3' "$W/hist")"
expect_eq "nothing reported as unrestorable" "0" "$(grep -c 'could not restore' "$WORK/histd.log")"

# A table pinned without hot slots (by a histd before them: every count in
# the hash) is adopted, and gets fresh slots, pinned again. One event: it
# makes the entry in the hash, its slot is taken empty.
echo "hist:keys=count:vals=hitcount if count == 4322" >> "$W/trigger"
python3 -c 'import os; os.write(os.open("/dev/null", os.O_WRONLY), b"x" * 4322)'
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
hot_pins=$(ls "$PIN" | grep -c '_hot$')
rm -f "$PIN"/*_hot
histd_start
expect_eq "a table without its hot slots adopted, with its count" "1" \
  "$(grep -c '{ count:       4322 } hitcount:          1' "$W/hist")"
expect_eq "and fresh slots pinned for every table that has them" "$hot_pins" "$(ls "$PIN" | grep -c '_hot$')"
for _ in 1 2; do python3 -c 'import os; os.write(os.open("/dev/null", os.O_WRONLY), b"x" * 4322)'; done
expect_eq "which count on" "1" "$(grep -c '{ count:       4322 } hitcount:          3' "$W/hist")"

# Removing a trigger unpins its table: re-adding starts from zero.
echo "!hist:keys=count:vals=hitcount if common_comm == \"$CHILD_COMM\"" >> "$W/trigger"
echo "hist:keys=count:vals=hitcount if common_comm == \"$CHILD_COMM\"" >> "$W/trigger"
expect_eq "a removed trigger's counts are gone" "    Hits: 0" \
  "$(awk '/trigger info: hist:keys=count:.* if common_comm/ {t=1} t && /Hits:/ {print; exit}' "$W/hist")"

# Synthetic events and a latency chain come back too, and keep working:
# definitions before triggers, variable owners before their users.
: > "$W/trigger"
echo 'marker_lat u64 lat' > "$MNT/synthetic_events"
echo 'hist:keys=common_pid:ts0=common_timestamp.usecs if buf == "go"' > "$MNT/events/ftrace/print/trigger"
echo 'hist:keys=common_pid:l=common_timestamp.usecs-$ts0:onmatch(ftrace.print).marker_lat($l) if buf == "stop"' >> "$MNT/events/ftrace/print/trigger"
echo 'hist:keys=common_pid' > "$MNT/events/synthetic/marker_lat/trigger"
chain=$(cat "$MNT/events/ftrace/print/trigger")
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start
expect_eq "synthetic definition restored" "$(printf 'marker_lat\tu64 lat')" "$(cat "$MNT/synthetic_events")"
expect_eq "the chain's triggers restored in order" "$chain" "$(cat "$MNT/events/ftrace/print/trigger")"
bash -c 'printf go > "$1/trace_marker"; printf stop > "$1/trace_marker"' _ "$MNT"
writer=$(marker_pid stop)
sleep 0.5
expect_eq "and the restored chain generates" "1" \
  "$(grep -cE "^\{ common_pid: +$writer \} hitcount: +1$" "$MNT/events/synthetic/marker_lat/hist")"
expect_eq "nothing reported as unrestorable after the chain" "0" "$(grep -c 'could not restore' "$WORK/histd.log")"
finish
