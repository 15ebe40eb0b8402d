#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The whole suite, N rounds in a row, while Debian's stress-ng keeps every
# core and the disk busy: a test that fails only when the machine is loaded
# fails here. Every failure is reported with its log kept.
#   bash scripts/soak.sh [N]     (as root, after scripts/install-deps.sh and
#                                 scripts/build.sh; N=5 by default)
# SOAK_DIR (default /var/tmp/histd-soak-<time>) keeps, per round, ctest's
# output and LastTest.log; SOAK_SANITIZED=1 runs the ASan and UBSan tests
# too (build-san, from scripts/build-sanitized.sh); SOAK_STRESS="..." sets
# stress-ng's load (default: a CPU worker per core and a disk writer).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SOAK_DIR=${SOAK_DIR:-/var/tmp/histd-soak-$(date +%Y%m%dT%H%M%S)}
read -r -a STRESS_ARGS <<<"${SOAK_STRESS:---cpu $(nproc) --hdd 1 --hdd-bytes 256M}"
command -v stress-ng >/dev/null || { echo "soak: stress-ng is needed (bash scripts/install-deps.sh)"; exit 1; }
[ -x build/histd ] || { echo "soak: no build/histd (bash scripts/build.sh)"; exit 1; }
mkdir -p "$SOAK_DIR"
STRESS=
stop_stress() { if [ -n "$STRESS" ]; then kill "$STRESS" 2>/dev/null || true; wait "$STRESS" 2>/dev/null || true; STRESS=; fi; }
trap stop_stress EXIT
export HISTD_REQUIRE_PRIVILEGED=1

# suite DIR BUILD [CTEST ARGS...]: one ctest run, its output and log kept in
# DIR; the names of the tests that failed, one a line, in DIR/failed.
suite() {
  local dir=$1 build=$2; shift 2
  mkdir -p "$dir"
  ctest --test-dir "$build" --output-on-failure -j2 --timeout 600 "$@" >"$dir/ctest.out" 2>&1 || true
  cp "$build/Testing/Temporary/LastTest.log" "$dir/LastTest.log" 2>/dev/null || true
  sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (.*)$/\1/p' "$dir/ctest.out" >"$dir/failed"
}

for r in $(seq "$ROUNDS"); do
  # The load runs in its own directory on the same disk as the tests.
  mkdir -p "$SOAK_DIR/stress"
  (cd "$SOAK_DIR/stress" && exec stress-ng "${STRESS_ARGS[@]}" --timeout 0 --quiet) &
  STRESS=$!
  start=$SECONDS
  suite "$SOAK_DIR/round-$r/release" build
  if [ "${SOAK_SANITIZED:-0}" = 1 ]; then
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      suite "$SOAK_DIR/round-$r/sanitized" build-san -L 'unit|privileged' -LE e2e
  fi
  stop_stress
  failed=$(cat "$SOAK_DIR/round-$r"/*/failed | grep -c . || true)
  echo "round $r: $failed failed, $((SECONDS - start)) s ($(grep -h 'tests passed' "$SOAK_DIR/round-$r"/*/ctest.out | tr '\n' ' '))"
  cat "$SOAK_DIR/round-$r"/*/failed | sed 's/^/  FAILED: /'
done
rm -rf "$SOAK_DIR/stress"
total=$(cat "$SOAK_DIR"/round-*/*/failed | grep -c . || true)
passed=$(for r in $(seq "$ROUNDS"); do cat "$SOAK_DIR/round-$r"/*/failed | grep -q . || echo "$r"; done | grep -c . || true)
echo "soak: $passed of $ROUNDS rounds passed, $total failure(s); logs in $SOAK_DIR"
if [ "$total" -gt 0 ]; then
  echo "failures by test:"
  cat "$SOAK_DIR"/round-*/*/failed | sort | uniq -c | sort -rn
  exit 1
fi
