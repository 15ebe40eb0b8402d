#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The loop every variant runs while it is attached (bench/run.sh sets the
# environment). MODE=wall: prints the loop's ns/call. MODE=stats: also reads
# the BPF run-time statistics of the programs OWNER (default: the parent, the
# attacher) has attached to the getppid tracepoints, before and after the
# loop, and prints "<in-kernel ns per call> <program runs per call>".
# LOOP=other: the loop calls getpid() instead (the cost on other calls).
set -euo pipefail
: "${MODE:?}" "${B:?}" "${CALLS:?}" "${WORK:?}"
if [ "$MODE" = wall ]; then
  exec "$B/histd_bench_loop" "$CALLS" ${LOOP:-}
fi
owner=${OWNER:-$PPID}
here=$(dirname "$0")
python3 "$here/progstats.py" snap "$owner" >"$WORK/stats.before"
"$B/histd_bench_loop" "$CALLS" >/dev/null
python3 "$here/progstats.py" snap "$owner" >"$WORK/stats.after"
python3 "$here/progstats.py" delta "$WORK/stats.before" "$WORK/stats.after" "$CALLS"
