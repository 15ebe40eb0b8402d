#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What histd refuses at start, each with a clear
# message and exit 1 before it mounts, listens or pins anything:
# - options that used to be accepted and then fail every trigger, or hide
#   what histd serves (a '.' in the pin directory, a pin directory off
#   bpffs, a mount point that is a file or a live mount, a socket path too
#   long for a unix socket or inside the tree, an unknown group);
# - a state directory (or its cache, or its state file) that someone other
#   than histd's user could write: owned by another user, writable by group
#   or others, a symlink, or below a directory another user owns. The
#   attacker's part (planting a cached object, a symlinked triggers.json) is
#   done as uid 65534.
source "$(dirname "$0")/lib.sh"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
PREFIX=()  # what histd is run under (a seccomp filter, fewer capabilities)

# refused NAME MESSAGE OPTION...: histd with the test's paths, the options
# after them replacing those given twice, must exit 1 saying MESSAGE, and
# leave no mount, socket or pin directory. A histd that starts anyway is
# stopped after 15 s (exit 124).
refused() {
  local name=$1 message=$2 rc=0
  shift 2
  local -A o=([--mount]="$MNT" [--socket]="$WORK/histd.sock" [--state-dir]="$WORK/state" [--pin-dir]="$PIN")
  local extra=() mounts
  mounts() { awk -v m="$1" '$5 == m' /proc/self/mountinfo | wc -l; }
  while [ $# -gt 0 ]; do
    if [ -n "${o[$1]+x}" ]; then o[$1]=$2; else extra+=("$1" "$2"); fi
    shift 2
  done
  mounts=$(mounts "${o[--mount]}")
  timeout 15 "${PREFIX[@]}" "$HISTD_BIN" --foreground --mount "${o[--mount]}" --socket "${o[--socket]}" \
    --state-dir "${o[--state-dir]}" --pin-dir "${o[--pin-dir]}" "${extra[@]}" >"$WORK/start.log" 2>&1 || rc=$?
  expect_eq "$name: exit 1" "1" "$rc"
  expect_eq "$name: says why" "histd: $message" "$(grep '^histd: ' "$WORK/start.log" | tail -1)"
  expect_eq "$name: nothing mounted" "$mounts" "$(mounts "${o[--mount]}")"
  expect_eq "$name: no socket" "no" "$([ -e "${o[--socket]}" ] && echo yes || echo no)"
  expect_eq "$name: no pin directory" "no" "$([ -e "$PIN" ] && echo yes || echo no)"
}

mkdir -p "$MNT"
chmod 0755 "$WORK"  # for uid 65534 to reach its directory below
# ---- options
refused "a '.' in the pin directory" \
  "--pin-dir $PIN.d/x: bpffs refuses names with a '.' ($(basename "$PIN").d): every pin would fail" \
  --pin-dir "$PIN.d/x"
refused "a pin directory off bpffs" \
  "--pin-dir $WORK/pins is not on a bpffs ($WORK is not one): tables could not be pinned; give a directory on bpffs, or --pin-dir '' for none" \
  --pin-dir "$WORK/pins"
touch "$WORK/file"
refused "a mount point that is a file" "--mount $WORK/file: not a directory" --mount "$WORK/file"
mkdir -p "$WORK/live"
mount -t tmpfs histd-test-live "$WORK/live"
test_cleanup() { if mountpoint -q "$WORK/live"; then umount "$WORK/live"; fi; }
refused "a mount point with a live mount" "--mount $WORK/live is a mount point (tmpfs): histd would mount over it" \
  --mount "$WORK/live"
umount "$WORK/live"
long=$WORK/$(printf 's%.0s' $(seq 100)).sock
refused "a socket path too long for sun_path" \
  "--socket $long: ${#long} bytes long, a unix socket's path holds at most 107" --socket "$long"
refused "a socket inside the tree" "--socket $MNT/histd.sock is inside --mount $MNT: the tree would hide it" \
  --socket "$MNT/histd.sock"
refused "an unknown group" "no group histd-no-such-group" --group histd-no-such-group

# ---- the state directory
mkdir -m 0777 "$WORK/open"
refused "a state directory anyone may write" \
  "the state directory $WORK/open is writable by group or others (mode 0777): refusing it" --state-dir "$WORK/open"
mkdir "$WORK/theirs"
chown 65534:65534 "$WORK/theirs"
refused "a state directory of uid 65534" \
  "the state directory $WORK/theirs is owned by uid 65534, not by histd's user (uid 0): refusing it" \
  --state-dir "$WORK/theirs"
refused "a state directory below a directory of uid 65534" \
  "the state directory $WORK/theirs/state: its parent $WORK/theirs is owned by uid 65534 with mode 0755: others could replace it" \
  --state-dir "$WORK/theirs/state"

# uid 65534 plants, in a state directory of its own under a sticky /tmp-like
# directory: a symlink as triggers.json (root would read the file it names
# and later replace it) and an object in the cache.
mkdir -m 1777 "$WORK/sticky"
"${NOBODY[@]}" mkdir -m 0700 "$WORK/sticky/state" "$WORK/sticky/state/cache"
"${NOBODY[@]}" bash -c "echo secret >'$WORK/sticky/target'; ln -s '$WORK/sticky/target' '$WORK/sticky/state/triggers.json'"
"${NOBODY[@]}" bash -c "echo 'not a BPF object' >'$WORK/sticky/state/cache/0000000000000000.o'"
refused "uid 65534's state directory with planted files" \
  "the state directory $WORK/sticky/state is owned by uid 65534, not by histd's user (uid 0): refusing it" \
  --state-dir "$WORK/sticky/state"
expect_eq "the symlink's target is untouched" "secret" "$(cat "$WORK/sticky/target")"

# The same plants in a root-owned state directory (as if copied there):
# each is refused by name, and the symlink is not followed.
mkdir -p -m 0700 "$WORK/state"
ln -s "$WORK/sticky/target" "$WORK/state/triggers.json"
refused "a symlink as the state file" \
  "the state file $WORK/state/triggers.json is a symbolic link: refusing it (it is not followed)"
expect_eq "the link is left as it was" "$WORK/sticky/target" "$(readlink "$WORK/state/triggers.json")"
rm "$WORK/state/triggers.json"
echo '{"version": 1, "triggers": []}' >"$WORK/state/triggers.json"
chown 65534 "$WORK/state/triggers.json"
refused "a state file of uid 65534" \
  "the state file $WORK/state/triggers.json is owned by uid 65534 with mode 0644: refusing it"
rm -r "$WORK/state/triggers.json" "$WORK/state/cache"
ln -s "$WORK/sticky/state/cache" "$WORK/state/cache"
refused "a symlink as the cache directory" \
  "the cache directory $WORK/state/cache is a symbolic link: refusing it (it is not followed)"
rm "$WORK/state/cache"
mkdir -m 0777 "$WORK/state/cache"
refused "a cache directory anyone may write" \
  "the cache directory $WORK/state/cache is writable by group or others (mode 0777): refusing it"
chmod 0700 "$WORK/state/cache"
ln -s "$WORK/state" "$WORK/state-link"
refused "a symlink as the state directory" \
  "the state directory $WORK/state-link is a symbolic link: refusing it (it is not followed)" \
  --state-dir "$WORK/state-link"

# As in a container: what it does not grant, named in one line with how to
# grant it (docs/containers.md).
SECCOMP=$(dirname "$HISTD_BIN")/histd_test_seccomp
NSPAWN_SECCOMP="systemd-nspawn: --system-call-filter='bpf perf_event_open'; podman: --security-opt seccomp=unconfined; Kubernetes: securityContext.seccompProfile.type: Unconfined"
PREFIX=("$SECCOMP" bpf)
refused "a seccomp filter that forbids bpf() (nspawn's default)" \
  "cannot run here: a seccomp filter forbids bpf() ($NSPAWN_SECCOMP)"
PREFIX=("$SECCOMP" perf_event_open)
refused "one that forbids perf_event_open()" \
  "cannot run here: a seccomp filter forbids perf_event_open() ($NSPAWN_SECCOMP)"
PREFIX=(setpriv --bounding-set=-bpf,-sys_admin)
refused "without CAP_BPF and CAP_SYS_ADMIN" \
  "cannot run here: bpf() is refused without CAP_BPF (systemd-nspawn: --capability=CAP_BPF,CAP_PERFMON,CAP_SYS_ADMIN; podman: --cap-add=BPF,PERFMON,SYS_ADMIN (or --privileged); Kubernetes: securityContext.capabilities.add: [BPF, PERFMON, SYS_ADMIN])"
PREFIX=()

# And with all of it mended, histd starts.
histd_start
expect_eq "a sound state directory: histd starts" "yes" "$(kill -0 "$HISTD_PID" && echo yes)"
expect_eq "the state directory is made histd's alone" "700" "$(stat -c %a "$WORK/state")"
expect_eq "the pin directory too" "700" "$(stat -c %a "$PIN")"
finish
