#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Percentiles and intervals in histctl: `show --percentiles` over
# a known distribution of closed fds (workers of histd_bench_close, each
# closing a range of invalid fds, filtered on their comms: other tests close
# fds beside this one), the bucket bounds against the hand computation, per
# label set, for a .log2, a .buckets=N and a plain key, several tables on the
# event, one without a numeric key (exit 1), bad lists (exit 2); and
# `watch --json`: one JSON line per interval whose deltas are the closes made
# in it, a clear shown as a reset, and the terminal's columns. Events the
# kernel skipped (Missed) are tolerated: then only the buckets are compared.
source "$(dirname "$0")/lib.sh"
CLOSE=$(dirname "$HISTD_BIN")/histd_bench_close
[ -x "$CLOSE" ] || { echo "no $CLOSE"; exit 1; }
PROCS=()
test_cleanup() { for p in "${PROCS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; }
histd_start
HISTCTL() { "$HISTCTL_BIN" --socket "$WORK/histd.sock" "$@"; }
EV=syscalls:sys_enter_close
declare -A GO WORKER COMM PID
for w in A B C D E; do COMM[$w]=$(own_comm "close$w"); done
is() { echo "common_comm == \"${COMM[$1]}\""; }  # the filter on worker $1

# worker_start NAME N BASE: a worker named ${COMM[NAME]} that will close fds
# BASE..BASE+N-1 (all invalid: it has only 0-2 open, and the fds stay below
# 1<<24, which other tests close), blocked until worker_go NAME (it reads
# its stdin first: on a sys_enter_read watched by shown_pid_on); its pid in
# ${WORKER[NAME]} (this shell's, for kill -0: never in a filter).
worker_start() {
  mkfifo "$WORK/$1.go"
  "$(comm_link "${COMM[$1]}" "$CLOSE")" "$2" "$3" <"$WORK/$1.go" >"$WORK/$1.pid" &
  PROCS+=($!)
  WORKER[$1]=$!
  local fd
  exec {fd}>"$WORK/$1.go"
  GO[$1]=$fd
  for _ in $(seq 100); do [ -s "$WORK/$1.pid" ] && break; sleep 0.1; done
}
worker_go() {
  local fd=${GO[$1]}
  echo go >&"$fd"
  exec {fd}>&-
  while kill -0 "${WORKER[$1]}" 2>/dev/null; do sleep 0.05; done
}
missed() { HISTCTL show --json "$EV" | python3 -c 'import json,sys; print(sum(t["totals"]["missed"] for t in json.load(sys.stdin)["tables"]))'; }

# ---- show --percentiles --------------------------------------------------
# A: 900 closes in 2^11 (fds 1025..1924), B: 90 in 2^12 (2049..2138), C: 10 in 2^13 (4097..4106).
# The label sets of the .buckets=100 table are pids: the pids the tables
# show, learnt from the workers' reads (lib.sh, shown_pid).
shown_pid_on syscalls/sys_enter_read "${COMM[A]}" "${COMM[B]}" "${COMM[C]}"
worker_start A 900 1025
worker_start B 90 2049
worker_start C 10 4097
FILTER="$(is A) || $(is B) || $(is C)"
HISTCTL add $EV "hist:keys=fd.log2 if $FILTER"
HISTCTL add $EV "hist:keys=common_pid,fd.buckets=100 if $FILTER"
HISTCTL add $EV "hist:keys=fd if $(is C)"
for w in A B C; do worker_go $w; PID[$w]=$(shown_pid syscalls/sys_enter_read "${COMM[$w]}"); done
M=$(missed)
[ "$M" = 0 ] || echo "note: the kernel skipped $M events: buckets compared, not estimates"
P=50,95,99.5,100
rc=0; HISTCTL show $EV --percentiles $P >"$WORK/pct.txt" || rc=$?
expect_eq "show --percentiles: exit 0" "0" "$rc"
# The log2 table's section, by hand: ranks 500, 950, 995, 1000 of 1000.
section() { awk -v n="$1" '/^# hist:/ {s++} s == n' "$WORK/pct.txt"; }
if [ "$M" = 0 ]; then
  expect_eq "the .log2 table: each percentile's bucket and the estimate within it" \
    "# percentiles of fd.log2 by hitcount; in [lower, upper]: the bucket that holds it, both ends included
hits: 1000
  p50    in [1025, 2048]  ~ 1593.3 (estimate within the bucket)
  p95    in [2049, 4096]  ~ 3186.2 (estimate within the bucket)
  p99.5  in [4097, 8192]  ~ 6144.5 (estimate within the bucket)
  p100   in [4097, 8192]  ~ 8192 (estimate within the bucket)" "$(section 1 | sed 1d)"
else
  expect_eq "the .log2 table: each percentile's bucket" \
    "p50 [1025, 2048]
p95 [2049, 4096]
p99.5 [4097, 8192]
p100 [4097, 8192]" "$(section 1 | sed -n 's/^  \(p[0-9.]*\) *in \(\[[0-9, ]*\]\).*/\1 \2/p')"
fi
expect_eq "each table its own section, named by its trigger" \
  "# hist:keys=fd.log2:vals=hitcount:sort=hitcount:size=2048 if $FILTER [active]
# hist:keys=common_pid,fd.buckets=100:vals=hitcount:sort=hitcount:size=2048 if $FILTER [active]
# hist:keys=fd:vals=hitcount:sort=hitcount:size=2048 if $(is C) [active]" \
  "$(grep '^# hist:' "$WORK/pct.txt")"

# The same as JSON: per label set (the pid) of the .buckets=100 table, and
# the plain key's exact values.
HISTCTL show $EV --percentiles $P --json >"$WORK/pct.json"
buckets() {
  python3 - "$WORK/pct.json" "$1" "$2" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
t = doc["tables"][int(sys.argv[2])]
for s in t["label_sets"]:
    if sys.argv[3] and s["keys"].get("common_pid") != int(sys.argv[3]):
        continue
    print(s["hits"], " ".join("%s[%d,%d]%s" % (p["name"], p["lower"], p["upper"], "=" if p["exact"] else "~")
                              for p in s["percentiles"]))
EOF
}
expect_eq "--json: the percentiles asked for" "[50, 95, 99.5, 100]" \
  "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["percentiles"])' "$WORK/pct.json")"
# A: fds 1025..1924 in buckets of 100: 75 in 1000-1099, 100 in each of 1100..1899, 25 in 1900-1999.
expect_eq ".buckets=100, worker A: ranks 450, 855, 895.5, 900 of 900" \
  "p50[1400,1499]~ p95[1800,1899]~ p99.5[1900,1999]~ p100[1900,1999]~" \
  "$(buckets 1 "${PID[A]}" | cut -d' ' -f2-)"
# B: 2049..2138: 51 in 2000-2099, 39 in 2100-2199.
expect_eq ".buckets=100, worker B: ranks 45, 85.5, 89.55, 90 of 90" \
  "p50[2000,2099]~ p95[2100,2199]~ p99.5[2100,2199]~ p100[2100,2199]~" \
  "$(buckets 1 "${PID[B]}" | cut -d' ' -f2-)"
expect_eq ".buckets=100, worker C: 3 in 4000-4099, 7 in 4100-4199" \
  "p50[4100,4199]~ p95[4100,4199]~ p99.5[4100,4199]~ p100[4100,4199]~" \
  "$(buckets 1 "${PID[C]}" | cut -d' ' -f2-)"
if [ "$M" = 0 ]; then
  expect_eq "each label set's hits: the closes of its worker" "900 90 10" \
    "$(for w in A B C; do buckets 1 "${PID[$w]}" | cut -d' ' -f1; done | xargs)"
  expect_eq "a plain key: exact values (fds 4097..4106: the 5th, then the 10th)" \
    "10 p50[4101,4101]= p95[4106,4106]= p99.5[4106,4106]= p100[4106,4106]=" "$(buckets 2 '')"
  expect_eq "a plain key in text: '= value (exact)'" "  p50    = 4101 (exact)" "$(section 3 | grep '^  p50 ')"
fi

# A table with no numeric key: said on stderr, naming it; the others still printed; exit 1.
HISTCTL add $EV "hist:keys=common_pid.execname if $FILTER"
rc=0; HISTCTL show $EV --percentiles 50 >"$WORK/out" 2>"$WORK/err" || rc=$?
expect_eq "a table without a numeric key: exit 1" "1" "$rc"
expect_eq "... and why, naming its trigger" \
  "histctl: $EV, table 4 (hist:keys=common_pid.execname:vals=hitcount:sort=hitcount:size=2048 if $FILTER [active]): it has no .log2, .buckets or numeric key to take percentiles over" \
  "$(cat "$WORK/err")"
expect_eq "... the other tables' percentiles printed" "3" "$(grep -c '^# percentiles of ' "$WORK/out")"
rc=0; HISTCTL show $EV --percentiles 50 --key fd >"$WORK/out" 2>"$WORK/err" || rc=$?
expect_eq "--key names a key the table lacks: exit 1, said" "1 it has no key 'fd' (its keys: common_pid.execname)" \
  "$rc $(sed -n 's/.*table 4 ([^)]*): //p' "$WORK/err")"
rc=0; HISTCTL show syscalls:sys_enter_dup --percentiles 50 2>"$WORK/err" || rc=$?
expect_eq "an event without a trigger: exit 1" \
  "1 histctl: syscalls:sys_enter_dup has no hist trigger: no table to take percentiles of" "$rc $(cat "$WORK/err")"

# Bad lists: where and why, exit 2.
bad_list() { local rc=0; HISTCTL show $EV --percentiles "$1" 2>&1 || rc=$?; echo "exit $rc"; }
expect_eq "a list item that is not a number" "histctl: --percentiles: '99.x' is not a number (a percentile such as 99.9)
  50,99.x
     ^
exit 2" "$(bad_list 50,99.x)"
expect_eq "a percentile out of (0, 100]" "histctl: --percentiles: '100.5' is not in (0, 100]
  0.5,100.5
      ^
exit 2" "$(bad_list 0.5,100.5)"
expect_eq "an empty list" "histctl: --percentiles: no percentile given: expected a list such as 50,90,99
  
  ^
exit 2" "$(bad_list '')"

# ---- watch --json ----------------------------------------------------------
: >"$MNT/events/syscalls/sys_enter_close/trigger"
worker_start D 100 513    # 2^10
worker_start E 30 2049    # 2^12
FILTER="$(is D) || $(is E)"
HISTCTL add $EV "hist:keys=fd.log2 if $FILTER"
lines() { wc -l <"$WORK/watch.jsonl"; }
wait_lines() { for _ in $(seq 150); do [ "$(lines)" -ge "$1" ] && return; sleep 0.1; done; }
HISTCTL watch $EV --interval 2 --json --count 3 --percentiles 50,100 >"$WORK/watch.jsonl" &
WATCH=$!
PROCS+=($WATCH)
wait_lines 1
worker_go D
wait_lines 2
HISTCTL add $EV "hist:keys=fd.log2:clear if $FILTER"
worker_go E
wait "$WATCH"
expect_eq "watch --json --count 3: three lines" "3" "$(lines)"
# Per line: reset, hits delta (with the missed delta), each entry's fd and
# delta, the percentiles' buckets, and whether the rates are the deltas per
# elapsed second.
python3 - "$WORK/watch.jsonl" >"$WORK/watch.txt" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    t = d["tables"][0]
    ok = all(abs(t["rates"][k] - t["deltas"][k] / d["elapsed"]) < 0.01 * max(1, t["rates"][k]) for k in t["rates"])
    entries = " ".join("%d:+%d" % (e["keys"]["fd"], e["deltas"]["hitcount"]) for e in t["entries"])
    pct = " ".join("%s[%d,%d]" % (p["name"], p["lower"], p["upper"])
                   for s in t.get("percentiles", {}).get("label_sets", []) for p in s["percentiles"])
    print(d["event"], d["interval"], "reset" if t["reset"] else "-", t["deltas"]["hits"], t["deltas"]["missed"],
          entries or "none", pct or "none", "rates" if ok else "rates wrong", type(d["time"]).__name__)
EOF
check_line() {  # N RESET CLOSES ENTRIES PERCENTILES
  local got; got=$(sed -n "${1}p" "$WORK/watch.txt")
  read -r ev interval reset hits mis rest <<<"$got"
  if [ "$hits" != "$3" ] && [ $((hits + mis)) -ge "$3" ] && [ "$hits" -le "$3" ]; then
    echo "note: interval $1: $mis events skipped by the kernel"
    expect_eq "watch line $1" "$EV 2.0 $2" "$ev $interval $reset"
  else
    expect_eq "watch line $1" "$EV 2.0 $2 $3 0 $4 $5 rates float" "$got"
  fi
}
check_line 1 - 0 none none
check_line 2 - 100 "10:+100" "p50[513,1024] p100[513,1024]"
check_line 3 reset 30 "12:+30" "p50[2049,4096] p100[2049,4096]"

# The terminal view: columns for each value, its delta and rate, and the
# percentiles (of E's closes: 30, or fewer when the kernel skipped some).
N=$(HISTCTL show --json $EV | python3 -c 'import json,sys; print(json.load(sys.stdin)["tables"][0]["totals"]["hits"])')
HISTCTL watch $EV --interval 0.2 --count 2 --percentiles 50 >"$WORK/watch.out"
expect_eq "watch: a column per value, its delta and its rate (the first refresh)" "1" \
  "$(grep -cE '^keys +hitcount +delta +rate/s$' "$WORK/watch.out")"
expect_eq "watch: the first refresh counts from 0; the second shows what changed: nothing" \
  "{\"fd\":12,\"fd.log2\":\"2^12\"} $N +$N -
no entry changed (1 entries)" "$(grep -E '^\{"fd":12|^no entry changed' "$WORK/watch.out" | tr -s ' ')"
expect_eq "watch: the percentiles of the interval, a column each (none in an interval without events)" \
  "percentiles of fd.log2 in this interval:
label set hits p50
{} $N [2049, 4096] ~3072.5
percentiles of fd.log2 in this interval: none (no events)" \
  "$(sed -n '/^percentiles of/,/^{}/p' "$WORK/watch.out" | tr -s ' ')"
finish
