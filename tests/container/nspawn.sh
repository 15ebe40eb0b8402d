# SPDX-License-Identifier: GPL-2.0-only
# A fresh Debian 12 machine for the tests that need one: a root made by
# mmdebstrap (or copied from $HISTD_CT_BASE, such a root, never changed),
# booted with systemd-nspawn in a PID namespace of its own, granted what
# histd uses of the host as docs/containers.md says: bpf() and
# perf_event_open() let through nspawn's system call filter, /dev/fuse, the
# host's tracefs, and a bpffs of its own (histd's pins stay out of the
# host's). It shares the host's network: a service it starts listens there.
# Sourced by a test that set WORK (a directory of its own, removed at exit)
# and calls ct_cleanup from its EXIT trap.
NSPAWN_PID=
INIT=

# ct_owner PID: the process as "pid start-time" (a pid alone may be reused).
ct_owner() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  echo "$1 $(cut -d' ' -f20 <<<"$stat")"
}

# ct_sweep: what an earlier test killed from outside (no EXIT trap ran) left
# beside WORK: its bpffs, still mounted, keeps its container's histd's
# programs attached to the host's tracepoints, and they would run on every
# event of the tests after it. A directory whose owner is gone is unmounted
# and removed; one whose owner lives (a test running beside) is left alone.
ct_sweep() {
  local dir owner
  for dir in "$(dirname "$WORK")"/histd-*; do
    [ "$dir" != "$WORK" ] && [ -f "$dir/owner" ] || continue
    owner=$(cat "$dir/owner")
    [ "$(ct_owner "${owner%% *}")" = "$owner" ] && continue
    echo "removing $dir, left by a test that no longer runs"
    umount -l "$dir/bpffs" 2>/dev/null || true
    rm -rf --one-file-system "$dir"
  done
}

# ct_root ROOT: a fresh Debian 12 root with systemd at ROOT.
ct_root() {
  ct_owner $$ >"$WORK/owner"
  ct_sweep
  if [ -n "${HISTD_CT_BASE:-}" ]; then
    cp -a "$HISTD_CT_BASE" "$1"
    return
  fi
  mmdebstrap --variant=minbase --include=systemd,systemd-sysv,dbus bookworm "$1" >"$WORK/mmdebstrap.log" 2>&1 ||
    { tail -20 "$WORK/mmdebstrap.log"; echo "FAIL: mmdebstrap (it needs the Debian archive)"; exit 1; }
}

# ct_run ROOT NAME COMMAND...: COMMAND in ROOT, not booted (apt, say).
ct_run() {
  local root=$1 name=$2; shift 2
  systemd-nspawn -q -D "$root" --register=no --keep-unit -M "$name-${WORK##*.}" -E DEBIAN_FRONTEND=noninteractive "$@"
}

# ct_boot ROOT NAME [NSPAWN ARGS...]: boots ROOT and waits until its
# systemd is running; INIT is that systemd's pid on the host.
ct_boot() {
  local root=$1 name=$2; shift 2
  mkdir -p "$WORK/bpffs"
  mountpoint -q "$WORK/bpffs" || mount -t bpf bpf "$WORK/bpffs"
  # nspawn's own system call filter, which every process systemd starts in
  # the container inherits, refuses bpf() and perf_event_open() (EPERM):
  # --system-call-filter lets them through, as a machine without nspawn does.
  systemd-nspawn -q -D "$root" -b --register=no --keep-unit --console=passive --capability=all \
    --system-call-filter="bpf perf_event_open" --bind=/dev/fuse --bind="$WORK/bpffs":/sys/fs/bpf \
    --bind=/sys/kernel/tracing -M "$name-${WORK##*.}" "$@" >"$WORK/nspawn.log" 2>&1 &
  NSPAWN_PID=$!
  for _ in $(seq 100); do
    INIT=$(ps -o pid= --ppid "$NSPAWN_PID" | tr -d " " | head -n 1 || true)
    [ -n "$INIT" ] && [ "$(cat "/proc/$INIT/comm" 2>/dev/null)" = "systemd" ] && break
    INIT=
    sleep 0.1
  done
  [ -n "$INIT" ] || { cat "$WORK/nspawn.log"; echo "FAIL: the container did not boot"; exit 1; }
  for _ in $(seq 300); do ct test -S /run/systemd/private && break; sleep 0.1; done
  local state
  state=$(ct timeout 120 systemctl is-system-running --wait 2>&1 || true)
  expect_eq "the container boots (systemd is running)" "running" "$state"
  [ "$state" = "running" ] || ct systemctl --failed --no-pager || true
}

# ct COMMAND...: COMMAND in the booted container as root, in its init's
# namespaces (its PID namespace too), outside any unit, with root's
# environment and nothing of the caller's.
ct() {
  nsenter -t "$INIT" -m -u -i -n -p -- /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

# ct_cleanup: powers the container off (killed if it takes over 30 s) and
# unmounts its bpffs, which drops every pin made there.
ct_cleanup() {
  if [ -n "$NSPAWN_PID" ] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
    kill -TERM "$NSPAWN_PID" 2>/dev/null || true  # nspawn powers the container off
    for _ in $(seq 300); do kill -0 "$NSPAWN_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$NSPAWN_PID" 2>/dev/null || true
    wait "$NSPAWN_PID" 2>/dev/null || true
  fi
  umount -l "$WORK/bpffs" 2>/dev/null || true
}
