#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The tree's names are fixed, and what would change them fails as it fails
# on tracefs: creating a file EACCES ("Permission denied"),
# making a directory (outside instances/) or link, removing or renaming EPERM, and ENOENT for a
# name that is not there. Never ENOSYS.
source "$(dirname "$0")/lib.sh"
histd_start
# The error text of one command ("" when it succeeds).
err() { "$@" 2>&1 >/dev/null | sed -n 's/.*: \([A-Z][a-z][^:]*\)$/\1/p' | tail -1; }
expect_eq "echo > a new file" "Permission denied" "$(err bash -c "echo 1 > '$MNT/nosuch'")"
expect_eq "echo > a new file in an event" "Permission denied" \
  "$(err bash -c "echo 1 > '$MNT/events/sched/sched_switch/nosuch'")"
expect_eq "touch a new file" "Permission denied" "$(err touch "$MNT/nosuch")"
expect_eq "mkdir" "Operation not permitted" "$(err mkdir "$MNT/events/mine")"
expect_eq "ln -s" "Operation not permitted" "$(err ln -s x "$MNT/link")"
expect_eq "rm an existing file" "Operation not permitted" "$(err rm -f "$MNT/trace_marker")"
expect_eq "rm what is not there" "" "$(err rm -f "$MNT/nosuch")"
expect_eq "rmdir an event" "Operation not permitted" "$(err rmdir "$MNT/events/sched/sched_switch")"
expect_eq "mv" "Operation not permitted" "$(err mv "$MNT/README" "$MNT/README2")"
expect_eq "chmod" "Operation not permitted" "$(err chmod 0666 "$MNT/trace")"
expect_eq "touch an existing file (as tracefs, a no-op)" "" "$(err touch "$MNT/trace")"
# The kernel's probe event files are there when the kernel has them.
probe_files=$(for f in kprobe_events uprobe_events; do [ -e "/sys/kernel/tracing/$f" ] && printf ' %s' "$f"; done || true)
expect_eq "the tree is as it was" "README available_events available_tracers buffer_size_kb buffer_total_size_kb current_tracer dynamic_events error_log events instances options per_cpu printk_formats saved_cmdlines saved_cmdlines_size saved_tgids set_event set_event_pid snapshot synthetic_events timestamp_mode trace trace_clock trace_marker trace_options trace_pipe tracing_cpumask tracing_on$probe_files" \
  "$(ls "$MNT" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "and trace keeps its mode" "-rw-------" "$(stat -c %A "$MNT/trace")"
# A listing's entry types (d_type) are what a stat of each says, as tracefs
# lists them: ls -F, os.walk and find trust them without a stat.
listed_types() {
  /usr/bin/python3 - "$1" <<'PY'
import os, stat, sys
for e in sorted(os.scandir(sys.argv[1]), key=lambda e: e.name):
    listed = e.is_dir(follow_symlinks=False)
    real = stat.S_ISDIR(os.lstat(e.path).st_mode)
    if listed != real:
        print(e.name, "listed as", "dir" if listed else "file", "but is", "dir" if real else "file")
PY
}
for d in "$MNT" "$MNT/events" "$MNT/events/sched" "$MNT/events/sched/sched_switch" "$MNT/per_cpu" "$MNT/per_cpu/cpu0"; do
  expect_eq "every entry of ${d#"$MNT"}/ is listed with its own type" "" "$(listed_types "$d")"
done
expect_eq "events/enable, header_page and header_event are listed as files" "enable header_event header_page" \
  "$(/usr/bin/python3 -c "import os; print(' '.join(sorted(e.name for e in os.scandir('$MNT/events') if not e.is_dir())))")"
# As tracefs: ftrace's pseudo-events have a directory each but are no
# available events, and events/ftrace/ has no enable file.
expect_eq "available_events lists no ftrace:* event" "0" "$(grep -c '^ftrace:' "$MNT/available_events" || true)"
expect_eq "events/ftrace has no enable file" "no" "$([ -e "$MNT/events/ftrace/enable" ] && echo yes || echo no)"
expect_eq "but ftrace:print has its format and id" "yes yes" \
  "$(grep -q '^name: print$' "$MNT/events/ftrace/print/format" && echo yes) $(grep -qx '[0-9]*' "$MNT/events/ftrace/print/id" && echo yes)"
finish
