#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs, builds and runs every test: unit (no root), BPF and end-to-end
# (root, BPF, FUSE) in the release build; unit and BPF tests again under ASan
# and UBSan; each fuzz target for FUZZ_SECONDS (default 30 here, 60 in
# scripts/fuzz.sh run alone: CI must stay within 30 minutes). Run as root,
# privileged tests must run: a missing capability fails. Each phase says how
# long it took (CI must stay within 30 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
phase_start=$SECONDS
phase() {
  echo "== $1 (after $((SECONDS - phase_start)) s)"
}
phase "installing what is missing"
bash scripts/install-deps.sh
phase "release build"
bash scripts/build.sh
if [ "$(id -u)" -eq 0 ]; then export HISTD_REQUIRE_PRIVILEGED=1; fi
phase "every test, release build"
ctest --test-dir build --output-on-failure -j2 --timeout 600
phase "ASan and UBSan build"
bash scripts/build-sanitized.sh
phase "unit and BPF tests under ASan and UBSan"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-san --output-on-failure -j2 --timeout 600 -L 'unit|privileged' -LE e2e
phase "fuzzing"
FUZZ_SECONDS=${FUZZ_SECONDS:-30} bash scripts/fuzz.sh
phase "done"
