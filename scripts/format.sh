#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The C++ sources in .clang-format's style (Debian 12's clang-format 14).
#   bash scripts/format.sh           formats them in place
#   bash scripts/format.sh --check   lists those that differ, and fails if any
#                                    (ctest docs.format)
# Not formatted: the BPF C under bpf/ and bench/ (the kernel's style, as the
# headers they include), the codegen goldens (generated text) and the
# kernel's selftests.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(find lib daemon tests bench -type f \( -name '*.cpp' -o -name '*.h' \) \
  -not -name '*.bpf.h' -not -path 'tests/unit/golden/*' -not -path 'tests/kselftest/*' | sort)
if [ "${1:-}" != "--check" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
differ=0
for f in "${files[@]}"; do
  if ! clang-format "$f" | cmp -s "$f" -; then
    echo "not formatted: $f (bash scripts/format.sh)"
    differ=$((differ + 1))
  fi
done
echo "${#files[@]} files checked, $differ not formatted"
[ "$differ" = 0 ]
