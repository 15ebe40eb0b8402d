#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for
# FUZZ_SECONDS (default 60) from the committed seed corpus. A crash leaves
# its input in build-san/fuzz-<target>/crash-*: add it to
# tests/fuzz/corpus/<target>/ so that it stays a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
bash scripts/build-sanitized.sh
for t in trigger filter format; do
  work=build-san/fuzz-$t
  rm -rf "$work"; mkdir -p "$work/corpus"
  cp tests/fuzz/corpus/$t/* "$work/corpus/"
  ( cd "$work" && ../fuzz_$t -seed="${FUZZ_SEED:-1}" -max_total_time="$SECONDS_EACH" -timeout=10 -print_final_stats=1 corpus \
      >"log" 2>&1 ) &
done
status=0
for job in $(jobs -p); do wait "$job" || status=1; done
for t in trigger filter format; do
  echo "fuzz_$t: $(grep -m1 -oE 'stat::number_of_executed_units: *[0-9]+' build-san/fuzz-$t/log | grep -oE '[0-9]+$') inputs"
  if ls build-san/fuzz-$t/crash-* >/dev/null 2>&1; then tail -40 build-san/fuzz-$t/log; status=1; fi
done
exit $status
