#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The doc-test: every command README.md,
# CONTRIBUTING.md, docs/*.md and docs/design/*.md show is run against a
# real histd on this test's mount,
# socket, state and pin directories (the documents' /run/histd/... paths
# stand for them), and must succeed and print what the document shows; a
# block that cannot run here says why. The convention: docs/design/tests.md.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HISTD_BIN=$(realpath "$HISTD_BIN"); HISTCTL_BIN=$(realpath "$HISTCTL_BIN")
# Others may reach the copies of histctl in it (`as nobody` blocks).
chmod 755 "$WORK"
test_cleanup() {
  # A histd a block started itself (daemonized), should the runner have died.
  [ -f "$WORK/doc-test.pids" ] || return 0
  while read -r p; do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$HISTD_BIN" ] && kill -TERM "$p" 2>/dev/null
  done <"$WORK/doc-test.pids"
}
cd "$ROOT"
python3 "$ROOT/tests/e2e/doc_test.py" --histd "$HISTD_BIN" --histctl "$HISTCTL_BIN" --work "$WORK" --mnt "$MNT" \
  --pin "$PIN" --root "$ROOT" README.md CONTRIBUTING.md docs/*.md docs/*/*.md
