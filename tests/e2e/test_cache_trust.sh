#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The object cache: histd loads a cached object only if
# its bytes hash to what histd recorded when it wrote it. An object planted
# in place of another (a working BPF program that counts something else), a
# byte changed, a symlink to a good copy: each is refused, removed and
# compiled again, and the trigger counts what it says.
source "$(dirname "$0")/lib.sh"
CACHE=$WORK/state/cache

# The cache entry of the unit comparing count with OP (its name without
# .c): the number is a value the program is loaded with, not in the text.
entry_of() { grep -l " $1 histd_k\[0\])" "$CACHE"/*.c | sed 's/\.c$//'; }
stop() { kill -TERM "$HISTD_PID"; wait "$HISTD_PID" || true; }
restart() {
  : >"$WORK/histd.log"
  histd_start
}

histd_start
counted_writes
mine=$SIZE
other=$((SIZE + 1))
# A unit counting `count != mine`, compiled and cached: the object to plant
# (loaded with mine's number, it would count every other write).
echo "!hist:keys=count:vals=hitcount if count == $mine" >>"$W/trigger"
echo "hist:keys=count:vals=hitcount if count != $mine" >>"$W/trigger"
planted=$(entry_of "!=").o
echo "!hist:keys=count:vals=hitcount if count != $mine" >>"$W/trigger"
echo "hist:keys=count:vals=hitcount if count == $mine" >>"$W/trigger"
target=$(entry_of "==")
expect_eq "both units are cached" "yes" "$([ -f "$planted" ] && [ -f "$target.o" ] && [ -f "$target.sha256" ] && echo yes)"
expect_eq "each with the SHA-256 of its object" "$(sha256sum <"$target.o" | cut -d' ' -f1)" "$(cat "$target.sha256")"

# check WHAT: after a restart (the trigger restored from the cache), the
# tampered object was refused and the trigger counts writes of $mine only.
check() {
  expect_eq "$1: histd says it refused the object" "1" \
    "$(grep -c "^histd: refusing the cached object $target.o (" "$WORK/histd.log")"
  expect_eq "$1: the object was compiled again" "$(cat "$target.sha256")" "$(sha256sum <"$target.o" | cut -d' ' -f1)"
  expect_eq "$1: the trigger is back" "1" "$(grep -c "count == $mine" "$W/trigger")"
  local before; before=$(hits)
  SIZE=$other writes 2
  SIZE=$mine writes 3
  expect_eq "$1: it counts what it says" "$((${before:-0} + 3))" "$(hits)"
}

stop
cp "$planted" "$target.o"
restart
check "another unit's object planted in its place"

stop
printf 'X' | dd of="$target.o" bs=1 seek=200 conv=notrunc status=none
restart
check "one byte of the object changed"

stop
cp "$target.o" "$WORK/good-copy.o"
good=$(sha256sum <"$WORK/good-copy.o")
rm "$target.o"
ln -s "$WORK/good-copy.o" "$target.o"
restart
check "a symlink to a good copy"
expect_eq "the symlink was replaced, not written through" "no:$good" \
  "$([ -L "$target.o" ] && echo yes || echo no):$(sha256sum <"$WORK/good-copy.o")"
finish
