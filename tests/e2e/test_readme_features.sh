#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The tree's README names the features histd has in the kernel's words,
# which tools (the kernel's ftrace selftests, libtracefs) look for before
# they use one. Each phrase it has is backed here by a command
# histd accepts; the phrases of features histd lacks are not in it.
source "$(dirname "$0")/lib.sh"
histd_start
R=$MNT/README
has() { grep -Fq -- "$1" "$R" && echo yes || echo no; }
accepts() { if printf '%s' "$2" >>"$MNT/$1" 2>/dev/null; then echo accepted; else echo refused; fi; }

# Phrase, then a command that uses the feature.
expect_eq "README: synthetic_events example" yes "$(has "' >> synthetic_events")"
expect_eq "README: long[] stack field" yes "$(has "long[] stack' >> synthetic_events")"
expect_eq "its example is accepted" accepted "$(accepts synthetic_events 'myevent u64 lat; char name[]; long[] stack')"
expect_eq "README: variables" yes "$(has '<var1>=<field|var_ref|numeric_literal>')"
expect_eq "variables of each kind are accepted" accepted \
  "$(accepts events/sched/sched_waking/trigger 'hist:keys=pid:ts0=common_timestamp.usecs,p=prio,k=1000,q=$p')"
expect_eq "README: common_stacktrace keys" yes "$(has "can be any field, or the special string 'common_stacktrace'")"
expect_eq "a common_stacktrace key is accepted" accepted \
  "$(accepts events/sched/sched_switch/trigger 'hist:keys=common_stacktrace')"
expect_eq "README: onchange(var)" yes "$(has 'onchange(var)')"
expect_eq "README: onmax(var)" yes "$(has 'onmax(var)')"
expect_eq "README: save(field,...)" yes "$(has 'save(field,...)')"
expect_eq "onchange().save() is accepted" accepted \
  "$(accepts events/sched/sched_wakeup/trigger 'hist:keys=pid:np=prio:onchange($np).save(comm,prio)')"
expect_eq "README: snapshot()" yes "$(has 'snapshot()')"
expect_eq "onmax().snapshot() is accepted" accepted \
  "$(accepts events/sched/sched_wakeup_new/trigger 'hist:keys=pid:m=prio:onmax($m).snapshot()')"
expect_eq "README: trace(<synthetic_event>" yes "$(has 'trace(<synthetic_event>')"
expect_eq "onmatch().trace() is accepted" accepted \
  "$(accepts events/sched/sched_switch/trigger 'hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).trace(myevent,$lat,next_comm,common_stacktrace)')"

expect_eq "README: s: synthetic events" yes "$(has 's:[synthetic/]<event> <field> [<field>]')"
expect_eq "an s: definition is accepted" accepted "$(accepts dynamic_events 's:synthetic/dynev u64 lat')"
expect_eq "and removed" accepted "$(accepts dynamic_events '-:synthetic/dynev')"

expect_eq "README: eprobes" yes "$(has 'e[:[<group>/][<event>]] <attached-group>.<attached-event> [<args>]')"
expect_eq "an e: definition is accepted" accepted \
  "$(accepts dynamic_events 'e:ep sched.sched_switch prev=$prev_pid:s32')"
expect_eq "and removed" accepted "$(accepts dynamic_events '-:eprobes/ep')"
# Not (yet) in histd: not named.
expect_eq "README: no traceon/traceoff triggers" no "$(has 'traceon')"

for t in sched_switch sched_wakeup sched_wakeup_new sched_waking; do : >"$MNT/events/sched/$t/trigger"; done
echo '!myevent' >>"$MNT/synthetic_events"
finish
