#!/usr/bin/env bash
# The ASan + UBSan build (clang) into ./build-san, with the fuzz targets.
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang CXX=clang++ cmake -S . -B build-san -G Ninja -DHISTD_WERROR=ON -DHISTD_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-san -j"$(nproc)"
