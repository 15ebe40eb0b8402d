#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# No reader who may not see kernel addresses learns one, by reading or by
# experiment: a member of --group (not root, kptr_restrict as the machine
# has it) may key and sum address fields, which render hidden, but may not
# compare, order, compute with or copy them (EPERM, error_log with a caret,
# nothing changed), through the tree and the socket alike. Root may; what
# root makes is hidden from the member, in hist, trace and synthetic events.
source "$(dirname "$0")/lib.sh"
chmod 755 "$WORK"
GROUP=histd-addr-${WORK##*.}
groupadd "$GROUP"
test_cleanup() { groupdel "$GROUP" 2>/dev/null || true; }
PORT=$(own_number 20000 20000)
histd_start --group "$GROUP" --metrics-listen "127.0.0.1:$PORT"
as_member() { setpriv --reuid=65534 --regid=65534 --groups="$(getent group "$GROUP" | cut -d: -f3)" "$@"; }
cp "$HISTCTL_BIN" "$WORK/histctl"; chmod 755 "$WORK/histctl"
HISTCTL=("$WORK/histctl" --socket "$WORK/histd.sock")
K=$MNT/events/kmem/kmalloc
expect_eq "the member may not see addresses here (kptr_restrict $(cat /proc/sys/kernel/kptr_restrict))" "no" \
  "$(as_member grep -q ' [tT] [a-z_]*$' /proc/kallsyms && [ "$(as_member head -c 16 /proc/kallsyms)" != 0000000000000000 ] &&
    echo yes || echo no)"

# Each attack of the kind that would give the address away.
member_write() { as_member bash -c "echo '$1' >> '$2/trigger'" 2>&1 | sed 's/.*: //'; }
echo 'leakev unsigned long a' >"$MNT/synthetic_events"
while IFS='|' read -r command caret; do
  : >"$MNT/error_log"
  expect_eq "member: $command is refused" "Operation not permitted" "$(member_write "$command" "$K")"
  expect_eq "  with an error_log line" "kernel addresses are hidden from this writer" \
    "$(sed -n 's/.*error: \(kernel addresses[^:]*\):.*/\1/p' "$MNT/error_log")"
  # The caret sits under the field: column 12 of "  Command: " plus its place.
  col=$(($(awk -v c="$caret" '/Command:/ {print index($0, c)}' "$MNT/error_log") - 1))
  expect_eq "  the caret under $caret" "$(printf '%*s^' "$col" '')" "$(tail -1 "$MNT/error_log")"
done <<'EOF'
hist:keys=common_pid if call_site < 0xffffffff81800000|call_site
hist:keys=call_site.buckets=4096|buckets=4096
hist:keys=common_pid:vals=call_site.percent|percent
hist:keys=common_pid:a=call_site|call_site
hist:keys=common_pid:vals=$d:d=bytes_req-ptr|ptr
hist:keys=common_pid:m=bytes_req:onmax($m).save(call_site)|call_site
hist:keys=common_pid:onmatch(kmem.kmalloc).trace(leakev,call_site)|call_site
traceon if call_site > 0xffffffff81000000|call_site
EOF
expect_eq "nothing was made" "" "$(grep -v '^#' "$K/trigger")"
rc=0; out=$(as_member "${HISTCTL[@]}" add kmem:kmalloc 'hist:keys=common_pid if ptr == 0' 2>&1) || rc=$?
expect_eq "through the socket the same" \
  "kernel addresses are hidden from this writer: ptr holds a kernel address: it may be a key or a value, but not compared, computed with or copied" \
  "$(sed -n 's/.*error: //p' <<<"$out" | head -1)"
expect_eq "histctl exits non-zero" "yes" "$([ "$rc" -ne 0 ] && echo yes)"

# What the member may: keys and sums, which it reads hidden.
for command in 'hist:keys=call_site.sym:vals=bytes_req' 'hist:keys=ptr:vals=call_site'; do
  expect_eq "member: $command is allowed" "" "$(member_write "$command" "$K")"
done
sleep 1
expect_eq "the member reads every ptr key as 0" "" \
  "$(as_member cat "$K/hist" | grep -E 'ptr: +[1-9]' | grep -v ' 0$' | grep -E 'ptr: +[0-9]{12,}' || true)"
expect_eq "and every call_site sum as 0" "" \
  "$(as_member cat "$K/hist" | sed -n 's/.*call_site: *\([0-9]*\).*/\1/p' | grep -v '^0$' || true)"
root_rows=$(cat "$K/hist")
expect_eq "root reads them" "yes" "$(grep -qE 'call_site: +[1-9][0-9]{10,}' <<<"$root_rows" && echo yes || echo no)"

# Whoever reaches the port (here a user with no group at all) learns no
# address from the metrics or the page: not a sum with a hitcount of 1, nor
# the bounds of .buckets over addresses.
echo 'hist:keys=call_site.buckets=1' >>"$K/trigger"
sleep 1
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
for path in /metrics /; do
  as_nobody /usr/bin/python3 -c "import urllib.request, sys
sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$PORT$path', timeout=10).read().decode())" >"$WORK/scrape"
  expect_eq "GET $path as an unprivileged user: the tables are there" "yes" \
    "$(grep -q 'call_site' "$WORK/scrape" && echo yes || echo no)"
  expect_eq "  but no kernel address, in decimal, hex or as a float" "" \
    "$(grep -oiE '1844674[0-9]{12}|ffffffff[0-9a-f]{8}|1\.84467[0-9]*e\+19' "$WORK/scrape" | head -3 || true)"
done
expect_eq "root reads the addresses in the hist file meanwhile" "yes" \
  "$(grep -qE 'call_site: ~ 18446744' "$K/hist" && echo yes || echo no)"

# Root may copy an address, into the one synthetic type that hides it.
echo 'leaku64 u64 a' >>"$MNT/synthetic_events"
: >"$MNT/error_log"
expect_eq "root: an address into a u64 synthetic field is refused" "Invalid argument" \
  "$(bash -c "echo 'hist:keys=common_pid:s=call_site:onchange(\$s).trace(leaku64,\$s)' >> '$K/trigger'" 2>&1 |
    sed 's/.*: //')"
expect_eq "  saying where it may go" "yes" \
  "$(grep -q 'a kernel address goes into an unsigned long field' "$MNT/error_log" && echo yes || cat "$MNT/error_log")"
echo 'hist:keys=common_pid:s=call_site:onchange($s).trace(leakev,$s)' >>"$K/trigger"
echo 'hist:keys=a' >"$MNT/events/synthetic/leakev/trigger"
echo 1 >"$MNT/events/synthetic/leakev/enable"
sleep 1
expect_eq "root reads the addresses in the synthetic event's hist" "yes" \
  "$(grep -qE 'a: +18446' "$MNT/events/synthetic/leakev/hist" && echo yes || echo no)"
expect_eq "the member reads them as 0" "" \
  "$(as_member cat "$MNT/events/synthetic/leakev/hist" | grep -E '^\{ a: +[1-9]' || true)"
expect_eq "and in its trace lines" "" "$(as_member cat "$MNT/trace" | grep -E 'leakev: a=[1-9]' | head -3 || true)"
expect_eq "which root reads" "yes" "$(grep -qE 'leakev: a=18446' "$MNT/trace" && echo yes || echo no)"
expect_eq "the member may not compare the synthetic field" "Operation not permitted" \
  "$(member_write 'hist:keys=common_pid if a > 100' "$MNT/events/synthetic/leakev")"
echo 0 >"$MNT/events/synthetic/leakev/enable"

# Probes read whatever memory the traced code reads: root's alone, as in
# the kernel; the member is refused with a line in error_log.
for probe in 'e:mye sched/sched_switch' 'p:myu /bin/bash:0x1000' 'r:myr /bin/bash:0x1000'; do
  : >"$MNT/error_log"
  expect_eq "member: $probe to dynamic_events is refused" "Permission denied" \
    "$(as_member bash -c "echo '$probe' >> '$MNT/dynamic_events'" 2>&1 | sed 's/.*: //')"
  expect_eq "  with an error_log line" "dynamic_events: error: only root may define or remove probe events" \
    "$(sed -n 's/^\[[^]]*\] //p' "$MNT/error_log" | head -1)"
done
expect_eq "nothing was made" "" "$(grep -E 'mye|myu' "$MNT/dynamic_events" /sys/kernel/tracing/uprobe_events || true)"
finish
