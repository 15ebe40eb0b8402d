#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Configures and builds histd into ./build (warnings are errors). -O2 with
# line tables only (-g1): backtraces and perf still name functions and
# lines, the package is stripped anyway (packaging/deb.cmake), and full
# debug information cost a third of each optimised file's compile time (CI
# must stay within 45 minutes). A build for a debugger: configure with -g.
#   bash scripts/build.sh            everything: histd, its tools, the tests
#                                    and the bench tools
#   bash scripts/build.sh --daemon   histd, histctl, histd-exporter alone, and
#                                    histd-cc if LLVM's development files are
#                                    there (scripts/quickstart.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
daemon_only=0
[ "${1:-}" = "--daemon" ] && daemon_only=1
tests=ON
[ "$daemon_only" = 1 ] && tests=OFF
# A build that has the tests keeps them: --daemon then builds fewer targets.
if [ "$daemon_only" = 1 ] && [ -f build/CMakeCache.txt ] && grep -q '^HISTD_TESTS:BOOL=ON' build/CMakeCache.txt; then
  tests=ON
fi
source scripts/ccache.sh
ccache_forget_stale_pch build
cmake -S . -B build -G Ninja "${CCACHE_LAUNCHER[@]}" -DHISTD_WERROR=ON -DHISTD_TESTS="$tests" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
if [ "$daemon_only" = 1 ]; then
  cmake --build build -j"$(nproc)" --target histd histctl histd-exporter
else
  cmake --build build -j"$(nproc)"
fi
