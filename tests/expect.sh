# SPDX-License-Identifier: GPL-2.0-only
# expect_eq NAME EXPECTED ACTUAL: "ok: NAME", or "FAIL: NAME" with a diff and
# one more in FAILURES. Sourced by the shell tests (e2e, docs, package).
expect_eq() {
  if [ "$2" == "$3" ]; then
    echo "ok: $1"
  else
    echo "FAIL: $1"; diff -u <(printf '%s\n' "$2") <(printf '%s\n' "$3") || true
    FAILURES=$((FAILURES + 1))
  fi
}
