#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The ASan + UBSan build (clang) into ./build-san: the unit and BPF test
# programs (and what they run: histd-cc, the test objects) and the fuzz
# targets. -O1 and line tables only: what sanitizers need for their reports,
# at half the compile time of a release build's flags.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ccache.sh
CC=clang CXX=clang++ cmake -S . -B build-san -G Ninja "${CCACHE_LAUNCHER[@]}" -DHISTD_WERROR=ON -DHISTD_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" >/dev/null
cmake --build build-san -j"$(nproc)" --target histd_unit_tests histd_bpf_tests histd-cc histd_test_objects \
  fuzz_trigger fuzz_filter fuzz_format
