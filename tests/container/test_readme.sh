#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The README's two commands on a fresh Debian 12 machine: a root made by
# mmdebstrap, booted with systemd-nspawn (a PID namespace of its own; what
# histd uses of the host granted as docs/containers.md says), this checkout
# copied in without its builds and .git. The quick start must install at
# most 120 packages, start and enable no service, leave nothing listening
# and print the demo's own line; then scripts/test.sh must pass in there.
# It says what the quick start took: time, packages, download and disk.
# The host's apt cache is lent to the container, so that a second run does
# not download again; apt still installs every package. Its compile cache is
# lent to the second command (below).
#
# Usage: test_readme.sh (root). scripts/test.sh runs it after the rest;
# the scripts/test.sh it runs in the container does not run it again.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "FAIL: needs root"; exit 1; }
for tool in systemd-nspawn nsenter mmdebstrap ss; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (scripts/install-deps.sh installs it)"; exit 1; }
done
source "$SRC/tests/expect.sh"
source "$SRC/tests/container/nspawn.sh"
FAILURES=0
WORK=$(mktemp -d /var/tmp/histd-readme.XXXXXX)
ROOT=$WORK/root
cleanup() {
  ct_cleanup
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT

# The checkout goes to the same path in there as here: the sanitized
# build's precompiled headers name their build directory, so only a build
# at the same path reuses this machine's compiles (below). It is copied in
# after the boot, which empties the container's /tmp; nspawn is asked not
# to mount a tmpfs of its own there. Under the kernel's file systems it
# goes to /root/histd (and is compiled again).
DEST=$SRC
case $DEST in /run/* | /dev/* | /proc/* | /sys/*) DEST=/root/histd ;; esac
export SYSTEMD_NSPAWN_TMPFS_TMP=0
ct_root "$ROOT"
# The host's compile cache is lent to the second command (the first's build
# is timed as a user's, so it compiles everything): a hit still reads every
# header the compile includes, so a missing -dev package fails as before.
# It spares CI the release and sanitized builds' compiles again.
lend=()
if command -v ccache >/dev/null; then
  ccache_dir=$(ccache -k cache_dir)
  mkdir -p "$ccache_dir"
  lend=(--bind="$ccache_dir":/var/cache/histd-ccache)
fi
ct_boot "$ROOT" histd-readme --bind=/var/cache/apt/archives "${lend[@]}"
mkdir -p "$ROOT$DEST"
tar -C "$SRC" --exclude=./.git --exclude='./build*' --exclude=./.cache -cf - . | tar -C "$ROOT$DEST" -xf -

# What the container leaves listening: the host's listening TCP sockets
# whose process is in the container's PID namespace.
ct_listeners() {
  local ns line p
  ns=$(readlink "/proc/$INIT/ns/pid")
  ss -Hltnp | while read -r line; do
    for p in $(grep -o 'pid=[0-9]*' <<<"$line" | cut -d= -f2); do
      if [ "$(readlink "/proc/$p/ns/pid" 2>/dev/null)" = "$ns" ]; then awk '{print $4}' <<<"$line"; break; fi
    done
  done | sort -u
}
services() { ct systemctl list-units --type=service --state=running --no-legend --plain | awk '{print $1}' | sort; }
enabled() { ct systemctl list-unit-files --state=enabled --no-legend | awk '{print $1}' | sort; }
packages() { ct dpkg-query -W -f='${Package}\n' | wc -l; }
services >"$WORK/services.before"
enabled >"$WORK/enabled.before"
listening_before=$(ct_listeners)
packages_before=$(packages)

# --- the first command ---------------------------------------------------------
start=$SECONDS
rc=0
ct bash -c "cd $(printf %q "$DEST") && bash scripts/quickstart.sh" >"$WORK/quickstart.log" 2>&1 || rc=$?
took=$((SECONDS - start))
expect_eq "the quick start succeeds" "0" "$rc"
[ "$rc" -eq 0 ] || tail -40 "$WORK/quickstart.log"
expect_eq "and shows the demo's own line" "yes" \
  "$(grep -qE '^\{ common_comm: histd-demo +\} hitcount: +[1-9]' "$WORK/quickstart.log" && echo yes || echo no)"
installed=$(($(packages) - packages_before))
expect_eq "it installs at most 120 packages" "yes" "$([ "$installed" -le 120 ] && echo yes || echo "no: $installed")"
expect_eq "it starts no service" "$(cat "$WORK/services.before")" "$(services)"
expect_eq "it enables none" "$(cat "$WORK/enabled.before")" "$(enabled)"
expect_eq "it leaves nothing listening" "$listening_before" "$(ct_listeners)"
download=$(sed -n 's|^Need to get [^/]*/\{0,1\}\([0-9.,]* [kMG]B\) of archives.*|\1|p' "$WORK/quickstart.log" | head -1)
disk=$(sed -n 's/^After this operation, \(.*\) of additional disk space will be used.*/\1/p' "$WORK/quickstart.log" | head -1)
echo "quick start in a fresh Debian 12: $took s, $installed packages ($download to download," \
  "$disk on disk), build $(du -sh "$ROOT$DEST/build" | cut -f1)"

# --- the second command ----------------------------------------------------------
start=$SECONDS
rc=0
cache_env=()
[ ${#lend[@]} -eq 0 ] || cache_env=(CCACHE_DIR=/var/cache/histd-ccache)
ct env HISTD_IN_README_TEST=1 FUZZ_SECONDS="${FUZZ_SECONDS:-10}" "${cache_env[@]}" bash -c "cd $(printf %q "$DEST") && bash scripts/test.sh" \
  >"$WORK/test.log" 2>&1 || rc=$?
expect_eq "scripts/test.sh passes in the container" "0" "$rc"
[ "$rc" -eq 0 ] || { grep -E 'tests passed|FAIL|Failed|\*\*\*' "$WORK/test.log" | tail -60; tail -30 "$WORK/test.log"; }
grep -E '^== |tests passed' "$WORK/test.log" || true
echo "scripts/test.sh in the container: $((SECONDS - start)) s"
expect_eq "it starts no service either" "$(cat "$WORK/services.before")" "$(services)"
expect_eq "nor leaves anything listening" "$listening_before" "$(ct_listeners)"

if [ "$FAILURES" -ne 0 ]; then echo "$FAILURES check(s) failed"; exit 1; fi
echo "all checks passed"
