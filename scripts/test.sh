#!/usr/bin/env bash
# Installs, builds and runs every test: unit (no root), BPF and end-to-end
# (root, BPF, FUSE) in the release build; unit and BPF tests again under ASan
# and UBSan; each fuzz target for FUZZ_SECONDS (default 60). Run as root,
# privileged tests must run: a missing capability fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
if [ "$(id -u)" -eq 0 ]; then export HISTD_REQUIRE_PRIVILEGED=1; fi
ctest --test-dir build --output-on-failure -j2 --timeout 600
echo "== under ASan and UBSan"
bash scripts/build-sanitized.sh
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-san --output-on-failure -j2 --timeout 600 -L 'unit|privileged' -LE e2e
echo "== fuzzing"
bash scripts/fuzz.sh
