#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fleet configuration: triggers and synthetic events
# declared in --config-dir's *.conf files are applied at start, and again on
# SIGHUP and `histctl reload`: added, changed and removed to match the files,
# unchanged ones keeping their counts (however they are spelled: a trigger
# is known by what it is), bad lines reported with file:line and
# a caret while the rest applies, triggers added by hand left alone, and a
# restart neither losing nor duplicating what the files declared.
source "$(dirname "$0")/lib.sh"
EXAMPLES=$(cd "$(dirname "$0")/../../examples/triggers.d" && pwd)
CONF=$WORK/triggers.d
mkdir -p "$CONF"
W=$MNT/events/syscalls/sys_enter_write
R=$MNT/events/syscalls/sys_enter_read
SIZE=$(own_number 20000 40000)  # writes of exactly $SIZE bytes are this test's
writes() { dd if=/dev/zero of=/dev/null bs="$SIZE" count="$1" status=none; }
COUNTED='hist:keys=count:vals=hitcount:sort=hitcount:size=2048 if count'  # the declared counter's line
hctl() { "$HISTCTL_BIN" --socket "$WORK/histd.sock" "$@"; }
# The hitcount of the table whose trigger line starts with $2, in hist file $1.
hits_of() {
  awk -v t="# trigger info: $2" 'index($0, t) == 1 {on = 1; next} on && /hitcount:/ {print $NF; exit}' "$1"
}
lines_of() { grep -c "$2" "$1" || true; }
# The last reload summary histd logged.
summary() { grep 'histd: configuration ' "$WORK/histd.log" | tail -1 | sed 's/^histd: configuration [^:]*: //'; }
reload_by_signal() {
  local before; before=$(grep -c 'histd: configuration ' "$WORK/histd.log")
  kill -HUP "$HISTD_PID"
  for _ in $(seq 100); do
    [ "$(grep -c 'histd: configuration ' "$WORK/histd.log")" -gt "$before" ] && return 0
    sleep 0.1
  done
  echo "no reload logged after SIGHUP"; FAILURES=$((FAILURES + 1))
}

cat >"$CONF/10-writes.conf" <<EOF
# our writes, by size
syscalls:sys_enter_write hist:keys=count if count == $SIZE

syscalls:sys_enter_write hist:keys=fd:vals=count if count == $SIZE
syscalls:sys_enter_read hist:keys=fd:junk
EOF
cp "$EXAMPLES/wakeup-latency.conf" "$CONF/50-wakeup-latency.conf"
# Not configuration: an editor's backup, a hidden file, another suffix.
for f in '10-writes.conf~' '.20-hidden.conf' '30-notes.txt'; do
  echo 'syscalls:sys_enter_read hist:keys=count' >"$CONF/$f"
done
histd_start --config-dir "$CONF"

echo "== at start: every good line applied, the bad one reported"
expect_eq "the two triggers of 10-writes.conf" "2" "$(lines_of "$W/trigger" "if count == $SIZE")"
expect_eq "the example's synthetic event" "$(printf 'wakeup_latency\tu64 lat; pid_t pid; int prio')" \
  "$(cat "$MNT/synthetic_events")"
expect_eq "and its triggers, in order" "1 1 1" \
  "$(lines_of "$MNT/events/sched/sched_waking/trigger" 'saved_pid=pid') $(lines_of \
    "$MNT/events/sched/sched_switch/trigger" 'onmatch(sched.sched_waking).wakeup_latency') $(lines_of \
    "$MNT/events/synthetic/wakeup_latency/trigger" 'keys=pid,prio,lat')"
expect_eq "backups, hidden files and other names not read" "" "$(cat "$R/trigger" | grep -v '^#' || true)"
expect_eq "the bad line: file:line, the line, a caret under the fault" \
  "$(printf '%s\n  %s\n  %s^' "$CONF/10-writes.conf:5: error: unknown hist trigger attribute" \
    'syscalls:sys_enter_read hist:keys=fd:junk' "$(printf '%37s' '')")" \
  "$(grep -A2 '10-writes.conf:5: error' "$WORK/histd.log")"
expect_eq "the summary at start" "6 added, 0 changed, 0 removed, 0 unchanged, 1 error" "$(summary)"
expect_eq "error_log names the file and line too" "1" "$(lines_of "$MNT/error_log" "10-writes.conf:5: error")"

writes 3
expect_eq "a declared trigger counts" "3" "$(hits_of "$W/hist" "$COUNTED")"

echo "== triggers added by hand are the users'"
echo "hist:keys=count:vals=hitcount:sort=hitcount:size=256 if count == $((SIZE + 1))" >>"$W/trigger"
hctl add syscalls:sys_enter_read 'hist:keys=count'

echo "== SIGHUP: a line added, one changed, one removed, a bad line fixed"
cat >"$CONF/10-writes.conf" <<EOF
syscalls:sys_enter_write hist:keys=count if count == $SIZE
syscalls:sys_enter_write hist:keys=fd:vals=count:size=4096 if count == $SIZE
syscalls:sys_enter_read hist:keys=fd
EOF
sed -i '/^synthetic:wakeup_latency/d' "$CONF/50-wakeup-latency.conf"
reload_by_signal
expect_eq "the summary" "1 added, 1 changed, 1 removed, 4 unchanged, 0 errors" "$(summary)"
expect_eq "histd is still there" "yes" "$(kill -0 "$HISTD_PID" 2>/dev/null && echo yes)"
expect_eq "the unchanged trigger kept its count" "3" "$(hits_of "$W/hist" "$COUNTED")"
expect_eq "the changed one has its new size" "1" "$(lines_of "$W/trigger" 'keys=fd:vals=hitcount,count:sort=hitcount:size=4096')"
expect_eq "the added one is there" "1" "$(lines_of "$R/trigger" '^hist:keys=fd:')"
expect_eq "the removed one is gone" "0" \
  "$(lines_of "$MNT/events/synthetic/wakeup_latency/trigger" 'keys=pid,prio,lat')"
expect_eq "histctl list --json tells the configuration's from the users'" \
  "syscalls:sys_enter_read keys=count: false, syscalls:sys_enter_read keys=fd: true" \
  "$(hctl list --json | python3 -c 'import json, sys
ts = json.load(sys.stdin)["triggers"]
print(", ".join(t["event"] + " " + t["trigger"].split(":")[1] + ": " + str(t.get("config", False)).lower()
                for t in ts if t["event"] == "syscalls:sys_enter_read"))')"
expect_eq "the hand-added triggers are untouched" "1 1" \
  "$(lines_of "$W/trigger" "size=256 if count == $((SIZE + 1))") $(lines_of "$R/trigger" '^hist:keys=count:')"

echo "== pause declared: the same trigger, paused, its counts kept"
sed -i "1s/.*/syscalls:sys_enter_write hist:keys=count:pause if count == $SIZE/" "$CONF/10-writes.conf"
rc=0; out=$(hctl reload) || rc=$?
expect_eq "histctl reload prints what changed and the summary" \
  "$(printf '%s\n%s' "changed syscalls:sys_enter_write hist:keys=count:pause if count == $SIZE ($CONF/10-writes.conf:1)" \
    "configuration $CONF: 0 added, 1 changed, 0 removed, 5 unchanged, 0 errors")" "$out"
expect_eq "and exits 0" "0" "$rc"
expect_eq "paused" "1" "$(lines_of "$W/trigger" "hist:keys=count:.* if count == $SIZE \[paused\]")"
writes 2
expect_eq "counts kept, and no more while paused" "3" "$(hits_of "$W/hist" "$COUNTED")"

echo "== histctl reload with bad lines: exit 1, each with file:line and a caret; the rest applied"
cat >"$CONF/20-more.conf" <<EOF
syscalls:sys_enter_close hist:keys=fdd
syscalls:sys_enter_close hist:keys=fd
nosuch:event hist:keys=fd
EOF
rc=0; hctl reload >"$WORK/out" 2>"$WORK/err" || rc=$?
expect_eq "exit 1" "1" "$rc"
expect_eq "the errors, in the files' order" \
  "$(printf '%s\n  %s\n  %s^\n%s\n  %s\n  %s^' \
    "$CONF/20-more.conf:1: error: Couldn't find field" 'syscalls:sys_enter_close hist:keys=fdd' \
    "$(printf '%35s' '')" "$CONF/20-more.conf:3: error: command failed: no event nosuch:event" \
    'nosuch:event hist:keys=fd' '')" "$(cat "$WORK/err")"
expect_eq "the summary" "configuration $CONF: 1 added, 0 changed, 0 removed, 6 unchanged, 2 errors" \
  "$(tail -1 "$WORK/out")"
expect_eq "the good line applied" "1" "$(lines_of "$MNT/events/syscalls/sys_enter_close/trigger" '^hist:keys=fd:')"
expect_eq "a hand-added trigger declared again is not taken over" "1" \
  "$(echo 'syscalls:sys_enter_read hist:keys=count' >"$CONF/30-dup.conf"; hctl reload 2>&1 >/dev/null |
    grep -c '30-dup.conf:1: error: Hist trigger already exists')"
echo 'syscalls:sys_enter_close hist:keys=common_pid' >"$CONF/40-open.conf"
chmod 666 "$CONF/40-open.conf"
rc=0; hctl reload >"$WORK/out" 2>"$WORK/err" || rc=$?
expect_eq "a file others may write is not read, and says why (exit 1)" \
  "1 $CONF/40-open.conf: error: configuration file not read: writable by others (mode 666): anyone who can write it could have histd compile it" \
  "$rc $(grep '40-open.conf' "$WORK/err")"
expect_eq "nothing it declares applied" "0" \
  "$(lines_of "$MNT/events/syscalls/sys_enter_close/trigger" '^hist:keys=common_pid:')"
rm "$CONF/30-dup.conf" "$CONF/20-more.conf" "$CONF/40-open.conf"
hctl reload >/dev/null || true
ln -s /etc/shadow "$CONF/50-shadow.conf"
: >"$MNT/error_log"
rc=0; hctl reload >"$WORK/out" 2>"$WORK/err" || rc=$?
expect_eq "a link out of the directory is not read, and says so (exit 1)" \
  "1 $CONF/50-shadow.conf: error: configuration file not read: a symbolic link out of the directory: not read" \
  "$rc $(cat "$WORK/err")"
shadow_line=$(head -1 /etc/shadow | cut -d: -f1-2)
expect_eq "nothing of what it points to is echoed: not in the reply, error_log nor histd's log" "" \
  "$(grep -hF "$shadow_line" "$WORK/err" "$WORK/out" "$MNT/error_log" "$WORK/histd.log" || true)"
rm "$CONF/50-shadow.conf"
echo 'syscalls:sys_enter_close hist:keys=common_pid' >"$CONF/.inside"
chmod 644 "$CONF/.inside"
ln -s .inside "$CONF/50-inside.conf"
expect_eq "a link to a file inside the directory is read" "0" "$(hctl reload >/dev/null 2>&1; echo $?)"
expect_eq "and what it declares applied" "1" \
  "$(lines_of "$MNT/events/syscalls/sys_enter_close/trigger" '^hist:keys=common_pid:')"
rm "$CONF/.inside" "$CONF/50-inside.conf"
hctl reload >/dev/null || true
# A directory below one an unprivileged user owns: the user could swap it.
mkdir -p "$WORK/home"; chown nobody "$WORK/home"; chmod 755 "$WORK" "$WORK/home"
mkdir "$WORK/home/triggers.d"
echo 'syscalls:sys_enter_close hist:keys=count' >"$WORK/home/triggers.d/10-x.conf"
mkdir -p "$WORK/mnt-u" "$WORK/u"
"$HISTD_BIN" --foreground --mount "$WORK/mnt-u" --socket "$WORK/u/histd.sock" --state-dir "$WORK/u/state" \
  --pin-dir "" --config-dir "$WORK/home/triggers.d" >"$WORK/u.log" 2>&1 &
upid=$!
await_tree "$WORK/mnt-u" "$upid" "$WORK/u.log"
expect_eq "a directory below one another user owns is not read, and says why" \
  "$WORK/home/triggers.d: error: configuration file not read: $WORK/home (owner uid 65534, mode 755) lets someone else replace it" \
  "$(grep -m1 'home/triggers.d: error' "$WORK/u.log")"
expect_eq "nothing it declares applied" "" "$(grep -v '^#' "$WORK/mnt-u/events/syscalls/sys_enter_close/trigger")"
kill -TERM "$upid"; wait "$upid" || true
chmod 700 "$WORK"
expect_eq "and stays when the line goes" "1" "$(lines_of "$R/trigger" '^hist:keys=count:')"

echo "== a restart restores the declared triggers once, counts and pause kept"
before=$(cat "$W/trigger" "$R/trigger" "$MNT/events/sched/sched_switch/trigger")
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start --config-dir "$CONF"
expect_eq "the same triggers, none twice" "$before" \
  "$(cat "$W/trigger" "$R/trigger" "$MNT/events/sched/sched_switch/trigger")"
expect_eq "all unchanged at start" "0 added, 0 changed, 0 removed, 6 unchanged, 0 errors" "$(summary)"
expect_eq "counts kept" "3" "$(hits_of "$W/hist" "$COUNTED")"

echo "== a declared trigger that does not restore stays saved, and comes back"
# 7 triggers (5 declared, 2 by hand) for 6 places: the newest, declared on
# sys_enter_read, is refused at start, and again by the reload at start.
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start --config-dir "$CONF" --max-triggers 6
expect_eq "not restored, not applied" "0 added, 0 changed, 0 removed, 5 unchanged, 1 error" "$(summary)"
expect_eq "said with its file and line" "$CONF/10-writes.conf:3: error: too many triggers: the limit is 6 and 6 are in use
  syscalls:sys_enter_read hist:keys=fd" "$(grep -A1 "10-writes.conf:3: error" "$WORK/histd.log")"
expect_eq "still saved" "1" "$(grep -c '"config": "hist:keys=fd",' "$WORK/state/triggers.json")"
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start --config-dir "$CONF"
expect_eq "back once the limit allows it" "1" "$(lines_of "$R/trigger" '^hist:keys=fd:')"
expect_eq "and nothing else to do" "0 added, 0 changed, 0 removed, 6 unchanged, 0 errors" "$(summary)"

echo "== the same trigger in other words is kept, and its counts with it"
S2=$((SIZE + 2))
writes2() { dd if=/dev/zero of=/dev/null bs="$S2" count="$1" status=none; }
REWORDED="hist:keys=count:vals=hitcount:sort=hitcount:size=2048 if count == $S2"  # its trigger line
echo "syscalls:sys_enter_write hist:key=count if count == $S2" >"$CONF/60-reworded.conf"
expect_eq "declared" "$(printf '%s\n%s' \
  "added syscalls:sys_enter_write hist:key=count if count == $S2 ($CONF/60-reworded.conf:1)" \
  "configuration $CONF: 1 added, 0 changed, 0 removed, 6 unchanged, 0 errors")" "$(hctl reload)"
writes2 4
expect_eq "it counts" "4" "$(hits_of "$W/hist" "$REWORDED")"
# keys= for key=, the hitcount and the default sort spelled out, the default size.
echo "syscalls:sys_enter_write hist:keys=count:vals=hitcount:sort=hitcount:size=2048 if count == $S2" \
  >"$CONF/60-reworded.conf"
expect_eq "rewritten in other words: unchanged, and said why" "$(printf '%s\n%s' \
  "unchanged syscalls:sys_enter_write hist:keys=count:vals=hitcount:sort=hitcount:size=2048 if count == $S2 ($CONF/60-reworded.conf:1): the same trigger as hist:key=count if count == $S2" \
  "configuration $CONF: 0 added, 0 changed, 0 removed, 7 unchanged, 0 errors")" "$(hctl reload)"
expect_eq "the counts kept" "4" "$(hits_of "$W/hist" "$REWORDED")"
writes2 1
expect_eq "and counting on" "5" "$(hits_of "$W/hist" "$REWORDED")"
expect_eq "one trigger" "1" "$(lines_of "$W/trigger" "if count == $S2")"
expect_eq "the new words are recorded: nothing to say the next time" \
  "configuration $CONF: 0 added, 0 changed, 0 removed, 7 unchanged, 0 errors" "$(hctl reload)"
sed -i 's/^sched:sched_waking hist:keys=/sched:sched_waking hist:key=/' "$CONF/50-wakeup-latency.conf"
out=$(hctl reload)
expect_eq "the owner of variables in other words: kept, and their readers with it" \
  "1 configuration $CONF: 0 added, 0 changed, 0 removed, 7 unchanged, 0 errors" \
  "$(grep -c '^unchanged sched:sched_waking hist:key=\$saved_pid:' <<<"$out") $(tail -1 <<<"$out")"
kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start --config-dir "$CONF"
expect_eq "nor after a restart" "0 added, 0 changed, 0 removed, 7 unchanged, 0 errors" "$(summary)"
expect_eq "which kept the counts" "5" "$(hits_of "$W/hist" "$REWORDED")"
echo "syscalls:sys_enter_write hist:keys=common_pid if count == $S2" >"$CONF/60-reworded.conf"
expect_eq "another key is another trigger: the old one goes" "$(printf '%s\n%s\n%s' \
  "removed syscalls:sys_enter_write hist:keys=count:vals=hitcount:sort=hitcount:size=2048 if count == $S2" \
  "added syscalls:sys_enter_write hist:keys=common_pid if count == $S2 ($CONF/60-reworded.conf:1)" \
  "configuration $CONF: 1 added, 0 changed, 1 removed, 6 unchanged, 0 errors")" "$(hctl reload)"
expect_eq "and its counts with it" "0 1" \
  "$(lines_of "$W/trigger" "^$REWORDED") $(lines_of "$W/trigger" "hist:keys=common_pid:.* if count == $S2")"
writes2 2
expect_eq "the new one counts from 0" "2" "$(hits_of "$W/hist" "hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 if count == $S2")"

echo "== every line gone: what the files declared goes, the hand-added stays"
rm "$CONF"/*.conf
hctl reload >/dev/null
expect_eq "only the hand-added triggers are left" \
  "$(printf '%s\n%s' "syscalls:sys_enter_read hist:keys=count:vals=hitcount:sort=hitcount:size=2048 [active]" \
    "syscalls:sys_enter_write hist:keys=count:vals=hitcount:sort=hitcount:size=256 if count == $((SIZE + 1)) [active]")" \
  "$(hctl list)"
expect_eq "and no synthetic event" "" "$(cat "$MNT/synthetic_events")"
finish
