#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs, builds and runs every test: unit (no root), BPF and end-to-end
# (root, BPF, FUSE) in the release build; unit and BPF tests again under ASan
# and UBSan; each fuzz target for FUZZ_SECONDS (default 30 here, 60 in
# scripts/fuzz.sh run alone); then, as root, the README's two commands in a
# fresh Debian 12 container (tests/container/test_readme.sh). Run as root,
# privileged tests must run: a missing capability fails. Each phase says how
# long it took (CI must stay within 45 minutes).
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
# In the README's container test (below), the tests that make containers
# of their own (package.*) are left to the host's run: a container in a
# container is not a place histd is meant to run.
outer=()
[ -z "${HISTD_IN_README_TEST:-}" ] || outer=(-LE package)
phase "every test, release build"
ctest --test-dir build --output-on-failure -j2 --timeout 600 "${outer[@]}"
phase "ASan and UBSan build"
bash scripts/build-sanitized.sh
phase "unit and BPF tests under ASan and UBSan"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-san --output-on-failure -j2 --timeout 600 -L 'unit|privileged' -LE e2e
phase "fuzzing"
FUZZ_SECONDS=${FUZZ_SECONDS:-30} bash scripts/fuzz.sh
# The README's two commands again, in a fresh Debian 12 container with a PID
# namespace of its own (there, this step is not run again).
if [ "$(id -u)" -eq 0 ] && [ -z "${HISTD_IN_README_TEST:-}" ]; then
  phase "the README's commands in a fresh Debian 12 container"
  bash tests/container/test_readme.sh
fi
phase "done"
