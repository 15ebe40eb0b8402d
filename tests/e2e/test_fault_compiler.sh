#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fault: the compiler fails, or the verifier refuses what it produced. The
# command is refused with the whole story (clang's output, the verifier log),
# error_log gets an entry, and nothing changes: the event keeps its program
# and its counts, the trigger file and the state file stay as they were.
source "$(dirname "$0")/lib.sh"

REAL_CLANG=$(command -v clang) || { echo "FAIL: no clang in PATH"; exit 1; }
BAD_OBJECT=$(cd "$(dirname "$HISTD_BIN")" && pwd)/tests/verifier_reject.bpf.o
[ -f "$BAD_OBJECT" ] || { echo "FAIL: $BAD_OBJECT is not built"; exit 1; }
HISTCTL=("$HISTCTL_BIN" --socket "$WORK/histd.sock")

# A clang that does what $WORK/clang.mode says: pass (run the real one),
# fail (print an error, exit 1), bad (write the verifier-refused object).
cat >"$WORK/clang" <<EOF
#!/usr/bin/env bash
case "\$(cat '$WORK/clang.mode')" in
  pass) exec '$REAL_CLANG' "\$@" ;;
  fail) echo "fake-clang: error: out of dilithium crystals"; exit 1 ;;
  bad)
    out=; prev=
    for a in "\$@"; do [ "\$prev" = -o ] && out=\$a; prev=\$a; done
    cp '$BAD_OBJECT' "\$out" ;;
esac
EOF
chmod +x "$WORK/clang"
echo pass >"$WORK/clang.mode"

# A missing compiler is refused at start, before anything is mounted.
rc=0; "$HISTD_BIN" --foreground --mount "$MNT" --socket "$WORK/none.sock" --state-dir "$WORK/none" \
  --pin-dir "" --clang "$WORK/no-such-clang" >"$WORK/start.log" 2>&1 || rc=$?
expect_eq "histd refuses a --clang that is not there" "1" "$rc"
expect_eq "and says which" "1" "$(grep -c "^histd: --clang $WORK/no-such-clang: No such file or directory" "$WORK/start.log")"

histd_start --clang "$WORK/clang"
expect_eq "histd names the compiler it uses" "1" "$(grep -c "compiler $WORK/clang\$" "$WORK/histd.log")"
counted_writes
writes 3
expect_eq "the first trigger counts" "3" "$(hits)"
triggers=$(cat "$W/trigger")
state=$(cat "$WORK/state/triggers.json")
: >"$MNT/error_log"

# 1. clang fails.
echo fail >"$WORK/clang.mode"
err=$( (echo "hist:keys=common_pid if count == $SIZE" >>"$W/trigger") 2>&1 || true)
expect_eq "a failing clang: the writer gets EINVAL" "1" "$(grep -c 'Invalid argument' <<<"$err")"
expect_eq "trigger file unchanged" "$triggers" "$(cat "$W/trigger")"
expect_eq "state file unchanged" "$state" "$(cat "$WORK/state/triggers.json")"
expect_eq "error_log: one entry naming the compiler" "1" \
  "$(grep -c "hist:syscalls:sys_enter_write: error: command failed: $WORK/clang failed on the generated unit (exit status 1" "$MNT/error_log")"
expect_eq "error_log: with the command" "1" \
  "$(grep -c "^  Command: hist:keys=common_pid if count == $SIZE\$" "$MNT/error_log")"
expect_eq "hist file shows the error" "1" "$(grep -c '^ERROR: command failed: ' "$W/hist")"
expect_eq "histd's log has clang's output" "1" "$(grep -c '^fake-clang: error: out of dilithium crystals' "$WORK/histd.log")"
rc=0; out=$("${HISTCTL[@]}" add syscalls:sys_enter_write "hist:keys=common_pid if count == $SIZE" 2>&1) || rc=$?
expect_eq "histctl: refused" "1" "$rc"
expect_eq "histctl: the error includes clang's output" "1" "$(grep -c 'fake-clang: error: out of dilithium crystals' <<<"$out")"
writes 2
expect_eq "the old program still counts" "5" "$(hits)"

# 2. The verifier refuses the object.
echo bad >"$WORK/clang.mode"
: >"$MNT/error_log"
err=$( (echo "hist:keys=common_pid if count == $SIZE" >>"$W/trigger") 2>&1 || true)
expect_eq "a refused program: the writer gets the kernel's errno" "1" "$(grep -c 'Permission denied' <<<"$err")"
expect_eq "trigger file unchanged" "$triggers" "$(cat "$W/trigger")"
expect_eq "state file unchanged" "$state" "$(cat "$WORK/state/triggers.json")"
expect_eq "error_log: one entry" "1" \
  "$(grep -c 'error: command failed: the kernel refused the generated program (Permission denied); the verifier log:' "$MNT/error_log")"
rc=0; out=$("${HISTCTL[@]}" add syscalls:sys_enter_write "hist:keys=common_pid if count == $SIZE" 2>&1) || rc=$?
expect_eq "histctl: refused" "1" "$rc"
expect_eq "histctl: the error carries the verifier log" "1" \
  "$(grep -c 'invalid bpf_context access off=0 size=8' <<<"$out")"
expect_eq "histd's log too" "1" "$(grep -c 'invalid bpf_context access off=0 size=8' "$WORK/histd.log" | sed 's/^[1-9][0-9]*$/1/')"
writes 2
expect_eq "the old program still counts" "7" "$(hits)"

# 3. A repaired compiler: the refused object was not kept in the cache.
echo pass >"$WORK/clang.mode"
echo "hist:keys=common_pid if count == $SIZE" >>"$W/trigger"
expect_eq "the same command now applies" "2" "$(grep -c '^hist:' "$W/trigger")"
writes 1
expect_eq "and the first trigger kept every count" "8" "$(hits)"
finish
