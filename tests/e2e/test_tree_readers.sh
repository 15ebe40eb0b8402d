#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Reading the tree is root's, or --group's, as tracefs (0700 root) is: hist
# files show kernel addresses. Anyone else gets EACCES, trace_pipe included;
# a member of the group reads kernel addresses as zeros unless the kernel
# would show them to it (kptr_restrict, perf_event_paranoid), while root
# sees them. `histctl show` follows the same rule.
source "$(dirname "$0")/lib.sh"
chmod 755 "$WORK"
as_nobody() { timeout 5 setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_adm() { timeout 5 setpriv --reuid=65534 --regid=65534 --groups=4 "$@"; }
denied() { "$@" >/dev/null 2>&1 && echo allowed || echo denied; }
cp "$HISTCTL_BIN" "$WORK/histctl"; chmod 755 "$WORK/histctl"
HISTCTL=("$WORK/histctl" --socket "$WORK/histd.sock")
K=$MNT/events/kmem/kmalloc

histd_start
echo 'hist:keys=call_site.sym:vals=bytes_req,ptr' > "$K/trigger"
for f in README available_events trace trace_pipe error_log; do
  expect_eq "without --group, nobody may not read $f" "denied" "$(denied as_nobody cat "$MNT/$f")"
done
expect_eq "nor list the tree" "denied" "$(denied as_nobody ls "$MNT/events")"
expect_eq "nor read a hist file" "denied" "$(denied as_nobody cat "$K/hist")"
expect_eq "modes: the tree is root's" "700 700 400 600 400" \
  "$(stat -c %a "$MNT" "$MNT/events" "$K/hist" "$K/trigger" "$MNT/trace_pipe" | tr '\n' ' ' | sed 's/ $//')"

kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true
histd_start --group adm
expect_eq "with --group: the group reads, and writes what it may write" "750 750 440 660 440" \
  "$(stat -c %a "$MNT" "$MNT/events" "$K/hist" "$K/trigger" "$MNT/trace_pipe" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "others still may not read" "denied" "$(denied as_nobody cat "$K/hist")"
expect_eq "a member reads README" "allowed" "$(denied as_adm cat "$MNT/README")"

# Does the kernel show this machine's kernel addresses to uid 65534
# (kallsyms_show_value: it has no CAP_SYSLOG)?
restrict=$(cat /proc/sys/kernel/kptr_restrict)
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 2)
if [ "$restrict" -eq 0 ] && [ "$paranoid" -le 1 ]; then hidden=no; else hidden=yes; fi
echo "kptr_restrict=$restrict perf_event_paranoid=$paranoid: kernel addresses hidden from the group: $hidden"

for _ in $(seq 50); do [ "$(rows "$K/hist" | wc -l)" -gt 0 ] && break; sleep 0.1; done
root_hist=$(cat "$K/hist")
adm_hist=$(as_adm cat "$K/hist")
adm_json=$(as_adm cat "$K/hist.json")
adm_show=$(as_adm "${HISTCTL[@]}" show kmem:kmalloc)
root_json=$(cat "$K/hist.json")
# Entry lines that show a kernel address: "[ffff...]" (.sym) or a ptr sum.
addresses() { grep -c -E '\[ffff[0-9a-f]{12}\]|ptr: +[1-9]' <<<"$1" || true; }
zeros() { grep -c -E '^\{ call_site: \[0\] [a-z_].* ptr:          0$' <<<"$1" || true; }
big_numbers() { grep -c -E '(^|[^0-9])18446[0-9]{14}' <<<"$1" || true; }
expect_eq "root sees kernel addresses" "yes" "$([ "$(addresses "$root_hist")" -gt 0 ] && echo yes || echo no)"
expect_eq "root's hist.json has them" "yes" "$([ "$(big_numbers "$root_json")" -gt 0 ] && echo yes || echo no)"
if [ "$hidden" = yes ]; then
  entries=$(rows <(echo "$adm_hist") | wc -l)
  expect_eq "the member reads entries" "yes" "$([ "$entries" -gt 0 ] && echo yes || echo no)"
  expect_eq "every entry with zeros for addresses, symbol names kept" "$entries" "$(zeros "$adm_hist")"
  expect_eq "no kernel address in its hist" "0" "$(addresses "$adm_hist")"
  expect_eq "none in its hist.json" "0" "$(big_numbers "$adm_json")"
  expect_eq "the .sym form keeps the name in hist.json" "yes" \
    "$(grep -q -E '"call_site.sym": "[a-z_]' <<<"$adm_json" && echo yes || echo no)"
  expect_eq "histctl show hides them too" "0" "$(addresses "$adm_show")"
  expect_eq "histctl show reads entries" "yes" "$([ "$(zeros "$adm_show")" -gt 0 ] && echo yes || echo no)"
else
  expect_eq "the kernel shows them to the member: so does histd" "yes" \
    "$([ "$(addresses "$adm_hist")" -gt 0 ] && echo yes || echo no)"
fi
expect_eq "root's histctl show keeps them" "yes" \
  "$([ "$(addresses "$("${HISTCTL[@]}" show kmem:kmalloc)")" -gt 0 ] && echo yes || echo no)"
echo '!hist:keys=call_site.sym:vals=bytes_req,ptr' >> "$K/trigger"
finish
