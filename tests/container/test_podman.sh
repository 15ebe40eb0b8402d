#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# docs/containers.md's podman recipe, as written there: an image built from
# histd's Debian package with packaging/Containerfile on a Debian 12 base
# (made here by mmdebstrap and `podman import`: no registry is needed),
# histd run in it with the capabilities, /dev/fuse and the host's tracefs,
# its /run/histd bound to a host directory with shared propagation. The
# tree must appear on the host, count a workload of the host, be readable
# from a second container, keep its counts over `podman restart`, be gone
# after `podman stop`; without the capabilities histd must refuse in one
# line. Pins go to a bpffs of the test's own.
#
# Usage: test_podman.sh BUILD_DIR (root; Debian's podman and runc).
set -euo pipefail
BUILD=$(cd "${1:?usage: test_podman.sh BUILD_DIR}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "FAIL: needs root"; exit 1; }
for tool in podman runc mmdebstrap cpack; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (scripts/install-deps.sh installs it)"; exit 1; }
done
source "$SRC/tests/expect.sh"
FAILURES=0
WORK=$(mktemp -d /var/tmp/histd-podman.XXXXXX)
TAG=$(tr '[:upper:]' '[:lower:]' <<<"${WORK##*.}")
BASE=localhost/histd-test-base-$TAG
IMAGE=localhost/histd-test-$TAG
NAME=histd-test-$TAG
SHARE=$WORK/share
cleanup() {
  podman rm -f -t 5 "$NAME" >/dev/null 2>&1 || true
  podman rmi -f "$IMAGE" "$BASE" >/dev/null 2>&1 || true
  umount -l "$SHARE/tracing" 2>/dev/null || true
  umount -l "$SHARE" 2>/dev/null || true
  umount -l "$WORK/bpffs" 2>/dev/null || true
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT

# What this machine needs beyond the recipe (docs/containers.md, "When
# podman refuses"): crun refuses hybrid cgroups (v1 controllers), runc
# runs there; podman sets the container's limits to defaults of its own,
# higher than a root without CAP_SYS_RESOURCE (this machine's) may set:
# the open files histd may have here, and enough processes.
HOST_FLAGS=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
[ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] || HOST_FLAGS+=(--runtime runc)
run() { podman run "${HOST_FLAGS[@]}" "$@"; }

# --- the image ---------------------------------------------------------------------
VERSION=$("$BUILD/histd" --version | sed -n 's/^histd //p')
(cd "$WORK" && cpack -G DEB -B "$WORK/pkg" --config "$BUILD/CPackConfig.cmake" >"$WORK/cpack.log" 2>&1) ||
  { cat "$WORK/cpack.log"; echo "FAIL: cpack"; exit 1; }
DEB=$WORK/pkg/histd_${VERSION}_amd64.deb
if [ -n "${HISTD_CT_BASE:-}" ]; then
  tar -C "$HISTD_CT_BASE" -cf - . | podman import -q - "$BASE" >/dev/null
else
  mmdebstrap --variant=minbase bookworm - 2>"$WORK/mmdebstrap.log" | podman import -q - "$BASE" >/dev/null ||
    { tail -20 "$WORK/mmdebstrap.log"; echo "FAIL: mmdebstrap (it needs the Debian archive)"; exit 1; }
fi
mkdir "$WORK/context"
cp "$DEB" "$WORK/context/"
# chroot isolation: buildah's RUN without an OCI runtime (see HOST_FLAGS).
podman build -q --isolation=chroot -t "$IMAGE" --build-arg BASE="$BASE" -f "$SRC/packaging/Containerfile" \
  "$WORK/context" >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; echo "FAIL: podman build"; exit 1; }
echo "ok: podman build makes an image from the package"

# --- refusals ----------------------------------------------------------------------
refused=$(run --rm --device /dev/fuse -v /sys/kernel/tracing:/sys/kernel/tracing "$IMAGE" --pin-dir "" 2>&1 || true)
expect_eq "without the capabilities histd says what is missing and how to grant it" \
  "histd: cannot run here: bpf() is refused without CAP_BPF (systemd-nspawn: --capability=CAP_BPF,CAP_PERFMON,CAP_SYS_ADMIN; podman: --cap-add=BPF,PERFMON,SYS_ADMIN (or --privileged); Kubernetes: securityContext.capabilities.add: [BPF, PERFMON, SYS_ADMIN])" \
  "$(grep '^histd: cannot' <<<"$refused" || tail -3 <<<"$refused")"
refused=$(run --rm --cap-add=BPF,PERFMON,SYS_ADMIN -v /sys/kernel/tracing:/sys/kernel/tracing "$IMAGE" --pin-dir "" 2>&1 || true)
expect_eq "without /dev/fuse too" "yes" \
  "$(grep -q '^histd: cannot run here: there is no /dev/fuse: .* podman: --device /dev/fuse;' <<<"$refused" && echo yes ||
    tail -3 <<<"$refused")"

# --- histd for the host --------------------------------------------------------------
mkdir -p "$SHARE" "$WORK/bpffs"
mount --bind "$SHARE" "$SHARE"
mount --make-shared "$SHARE"
mount -t bpf bpf "$WORK/bpffs"
run -d --name "$NAME" --cap-add=BPF,PERFMON,SYS_ADMIN --device /dev/fuse \
  -v /sys/kernel/tracing:/sys/kernel/tracing -v "$WORK/bpffs":/sys/fs/bpf \
  --mount type=bind,src="$SHARE",dst=/run/histd,bind-propagation=rshared "$IMAGE" >/dev/null
T=$SHARE/tracing
tree_up() { for _ in $(seq 600); do [ -e "$T/events/syscalls" ] && return 0; sleep 0.1; done; return 1; }
tree_up || podman logs "$NAME" | tail -5
expect_eq "the tree appears on the host, through the shared bind" "yes" "$([ -d "$T/events/syscalls" ] && echo yes || echo no)"
W=$T/events/syscalls/sys_enter_write
# A workload of the host's the trigger can tell from anything else: dd
# under its own name, writing blocks of a size of its own.
ln -s "$(command -v dd)" "$WORK/histdpod"
SIZE=$((20000 + RANDOM % 40000))
echo "hist:keys=count:vals=hitcount if comm == \"histdpod\" && count == $SIZE" >"$W/trigger" ||
  echo "FAIL: the trigger write"
"$WORK/histdpod" if=/dev/zero of=/dev/null bs="$SIZE" count=3 status=none
rows() { awk '/^#/ {next} /^$/ {if (seen) exit; next} {seen=1; print}' "$1"; }
ROW="{ count: $(printf '%10d' "$SIZE") } hitcount:          3"
expect_eq "a trigger written on the host counts the host's workload" "$ROW" "$(rows "$W/hist")"
expect_eq "another container reads the tree through a bind" "$ROW" \
  "$(run --rm -v "$T":/sys/kernel/tracing:ro --entrypoint /bin/cat "$IMAGE" /sys/kernel/tracing/events/syscalls/sys_enter_write/hist |
    awk '/^#/ {next} /^$/ {if (seen) exit; next} {seen=1; print}')"
expect_eq "histctl in the container talks to it" "histd $VERSION (pid 1)" \
  "$(podman exec "$NAME" histctl status | head -1 | sed 's/, up .*//')"
podman restart -t 10 "$NAME" >/dev/null
tree_up || true
expect_eq "podman restart keeps the counts (pinned in bpffs)" "$ROW" "$(rows "$W/hist" 2>&1)"
podman stop -t 10 "$NAME" >/dev/null
expect_eq "podman stop leaves no mount on the host" "no" "$(mountpoint -q "$T" && echo yes || echo no)"
expect_eq "and histd ended cleanly" "0" "$(podman inspect -f '{{.State.ExitCode}}' "$NAME")"

if [ "$FAILURES" -ne 0 ]; then
  echo "--- histd's log"; podman logs "$NAME" 2>&1 | tail -20
  echo "$FAILURES check(s) failed"; exit 1
fi
echo "all checks passed"
