#!/usr/bin/env bash
# Installs, builds and runs every test: unit (no root), BPF and end-to-end
# (root, BPF, FUSE). Run as root, those must run: a missing capability fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
if [ "$(id -u)" -eq 0 ]; then export HISTD_REQUIRE_PRIVILEGED=1; fi
ctest --test-dir build --output-on-failure -j2 --timeout 600
