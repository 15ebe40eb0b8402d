#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# histd's Debian package under a real systemd.
# `cpack -G DEB` builds histd_<version>_amd64.deb: its name, Depends:, files
# and conffiles are checked; it is installed with apt into a fresh Debian 12
# root (mmdebstrap, or a copy of $HISTD_CT_BASE if set: such a root, never
# changed), which is booted with systemd-nspawn. From outside the service
# (nsenter into the container's init namespaces): the unit verifies clean,
# `systemctl start histd` gives a tree in init's mount namespace, a trigger
# written there counts a known workload, `reload` applies what
# /etc/histd/triggers.d declares, `reload` and `restart` keep the
# counts, `stop` leaves no mount behind, `enable --now` serves the tree
# again, with metrics-listen and textfile-dir the service serves /metrics and
# the page from an unprivileged exporter and writes the textfile, and
# removing the package stops histd.
#
# Usage: test_service.sh BUILD_DIR. Root. Skips (exit 77, said loudly) only
# on a kernel without FUSE, bpffs or tracefs events; anything else missing
# is a failure. Everything it makes is below its temp dir, removed at exit.
set -euo pipefail
BUILD=$(cd "${1:?usage: test_service.sh BUILD_DIR}" && pwd)
SKIP=77

skip() {
  echo "*** SKIPPED: $* ***" >&2
  echo "*** the package's systemd test did not run on this machine ***" >&2
  exit "$SKIP"
}
if [ "$(id -u)" -ne 0 ]; then
  [ -n "${HISTD_REQUIRE_PRIVILEGED:-}" ] && { echo "FAIL: needs root"; exit 1; }
  skip "not root"
fi
grep -qw fuse /proc/filesystems && [ -c /dev/fuse ] || skip "this kernel has no FUSE (/dev/fuse)"
grep -qw bpf /proc/filesystems || skip "this kernel has no bpffs"
[ -d /sys/kernel/tracing/events/syscalls ] || skip "this kernel has no tracefs syscall events at /sys/kernel/tracing"
for tool in cpack dpkg-deb systemd-nspawn nsenter mmdebstrap stress-ng; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (scripts/install-deps.sh installs it)"; exit 1; }
done

source "$(dirname "$0")/../expect.sh"
source "$(dirname "$0")/../container/nspawn.sh"
WORK=$(mktemp -d /tmp/histd-pkg.XXXXXX)
ROOT=$WORK/root
STRESS=
FAILURES=0

cleanup() {
  if [ -n "$STRESS" ]; then kill "$STRESS" 2>/dev/null || true; fi
  ct_cleanup
  # Never past a mount that is somehow still there (a bind of the host's /sys).
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT

yes_no() { if "$@"; then echo yes; else echo no; fi; }

# --- the package ---------------------------------------------------------------
VERSION=$("$BUILD/histd" --version | sed -n 's/^histd //p')
(cd "$WORK" && cpack -G DEB -B "$WORK/pkg" --config "$BUILD/CPackConfig.cmake" >"$WORK/cpack.log" 2>&1) ||
  { cat "$WORK/cpack.log"; echo "FAIL: cpack"; exit 1; }
DEB=$WORK/pkg/histd_${VERSION}_amd64.deb
expect_eq "cpack builds histd_<histd --version>_amd64.deb" "yes" "$(yes_no test -f "$DEB")"
[ -f "$DEB" ] || { ls "$WORK/pkg"; exit 1; }
expect_eq "the package's version is histd's" "$VERSION" "$(dpkg-deb -f "$DEB" Version)"
expect_eq "histctl --version says the same" "histctl $VERSION" "$("$BUILD/histctl" --version)"
depends=$(dpkg-deb -f "$DEB" Depends | tr ',' '\n' | sed 's/^ *//; s/ .*//' | sort)
for dep in clang libbpf-dev linux-libc-dev fuse3 adduser libbpf1 libfuse3-3 libclang-cpp14 libllvm14 libseccomp2 \
           libssl3 libsystemd0 libfmt9 libmicrohttpd12; do
  expect_eq "Depends: $dep" "$dep" "$(grep -x "$dep" <<<"$depends" || true)"
done
contents=$(dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's|^\./|/|')
for f in /usr/share/doc/histd/copyright /usr/bin/histd /usr/bin/histctl /usr/bin/histd-cc /usr/bin/histd-exporter /lib/systemd/system/histd.service /etc/histd/histd.conf \
         /usr/share/man/man8/histd.8.gz /usr/share/man/man8/histctl.8.gz /usr/lib/histd/bpf/dispatcher.bpf.o \
         /usr/lib/histd/bpf/syscall_dispatcher.bpf.o /usr/lib/histd/bpf/hist_helpers.bpf.h \
         /usr/lib/histd/bpf/hist_shared.h; do
  expect_eq "the package holds $f" "$f" "$(grep -x "$f" <<<"$contents" || true)"
done
mkdir "$WORK/control"
dpkg-deb -e "$DEB" "$WORK/control"
expect_eq "the config is a conffile" "/etc/histd/histd.conf" "$(cat "$WORK/control/conffiles")"

# --- a fresh Debian 12 with the package installed ----------------------------
ct_root "$ROOT"
mkdir -p "$ROOT/mnt/pkg"
cp "$DEB" "$ROOT/mnt/pkg/"
# Not booted: apt, run in the root as a plain command.
ct_run "$ROOT" histd-apt /bin/sh -c \
  "apt-get update -q && apt-get install -y -q --no-install-recommends /mnt/pkg/${DEB##*/}" >"$WORK/apt.log" 2>&1 ||
  { tail -30 "$WORK/apt.log"; echo "FAIL: apt-get install of the package"; exit 1; }
echo "ok: apt-get installs the package and its dependencies into a fresh Debian 12"
# histd run by hand in the container, nspawn's system call filter not let
# through (docs/containers.md): it refuses to start, in one line naming what is missing.
systemd-nspawn -q -D "$ROOT" --register=no --keep-unit -M "histd-sec-${WORK##*.}" --capability=all \
  --bind=/dev/fuse --bind=/sys/kernel/tracing /usr/bin/histd --foreground --mount /tmp/t --pin-dir "" \
  --state-dir /tmp/s --socket /tmp/s.sock >"$WORK/filtered.log" 2>&1 || true
expect_eq "without --system-call-filter it says what is missing and how to grant it" \
  "histd: cannot run here: a seccomp filter forbids bpf() (systemd-nspawn: --system-call-filter='bpf perf_event_open'; podman: --security-opt seccomp=unconfined; Kubernetes: securityContext.seccompProfile.type: Unconfined)" \
  "$(tr -d '\r' <"$WORK/filtered.log" | grep '^histd: cannot' || tail -3 "$WORK/filtered.log")"
# A workload the trigger can tell from anything else on the machine: dd
# under its own name, writing blocks of a size of its own.
cp "$ROOT/usr/bin/dd" "$ROOT/usr/local/bin/histdwl"
SIZE=$((20000 + $$ % 40000))

# --- boot it ---------------------------------------------------------------------
ct_boot "$ROOT" histd-pkg

T=/run/histd/tracing
W=$T/events/syscalls/sys_enter_write
R=$T/events/syscalls/sys_enter_read
rows() { ct cat "$1" | awk '/^#/ {next} /^$/ {if (seen) exit; next} {seen=1; print}'; }
workload() { ct histdwl if=/dev/zero of=/dev/null bs="$SIZE" count="$1" status=none; }
main_pid() { ct systemctl show -p MainPID --value histd; }

verify=$(ct systemd-analyze verify --man=no /lib/systemd/system/histd.service 2>&1) || verify+=" (exit $?)"
expect_eq "systemd-analyze verify of the installed unit is clean" "" "$verify"

ct systemctl start histd || true
expect_eq "systemctl start histd" "active" "$(ct systemctl is-active histd || true)"
pid=$(main_pid)
expect_eq "the service runs in init's mount namespace" "$(ct readlink /proc/1/ns/mnt)" \
  "$(ct readlink "/proc/$pid/ns/mnt" 2>&1)"
expect_eq "the tree is mounted where users look" "yes" "$(yes_no ct mountpoint -q "$T")"
expect_eq "with every event" "yes" "$(yes_no ct test -f "$W/trigger")"
# docs/containers.md: the host reads the tree through the container's root.
expect_eq "the host reads the tree through the container's root" "yes" \
  "$(yes_no test -f "/proc/$INIT/root$W/format")"
# The first trigger is compiled cold, by histd-cc under the unit's
# MemoryDenyWriteExecute= and system call filter.
ct sh -c "echo 'hist:keys=count:vals=hitcount if comm == \"histdwl\" && count == $SIZE' > $W/trigger" || true
ct sh -c "echo 'hist:keys=common_stacktrace:vals=hitcount if comm == \"histdwl\"' > $R/trigger" || true
workload 3
expect_eq "a trigger added through the tree counts the workload" "{ count: $(printf '%10d' "$SIZE") } hitcount:          3" \
  "$(rows "$W/hist")"
expect_eq "compiled by the resident compiler" "1" \
  "$(ct journalctl -u histd --no-pager | grep -c 'resident compiler /usr/bin/histd-cc' || true)"
expect_eq "histctl explain shows the service's program: its trigger's plan and kernel" "2" \
  "$(ct histctl explain syscalls:sys_enter_write | grep -cE '^(trigger: hist:keys=count:|kernel: Linux [0-9.]+ or later)' || true)"
# A command reading another event's variable is explained by the service,
# which changes nothing: its compile runs outside the tree's lock too.
ct histctl add syscalls:sys_enter_read 'hist:keys=common_pid:t0=common_timestamp' >/dev/null || true
expect_eq "histctl explain asks the service for what it cannot build alone" "1" \
  "$(ct histctl explain syscalls:sys_exit_read 'hist:keys=common_pid:d=common_timestamp-$t0' |
    grep -c '^trigger: hist:keys=common_pid:vals=hitcount:d=common_timestamp-\$t0' || true)"
expect_eq "and adds nothing" "0" "$(ct grep -c '^hist:' "$T/events/syscalls/sys_exit_read/trigger" || true)"
ct histctl remove syscalls:sys_enter_read 'hist:keys=common_pid:t0=common_timestamp' >/dev/null || true
# So is a command on a synthetic event: its format is the service's alone.
ct histctl synth add 'pkg_lat u64 lat' >/dev/null || true
expect_eq "histctl explain asks the service about its synthetic event" "1" \
  "$(ct histctl explain synthetic:pkg_lat 'hist:keys=lat.log2' | grep -c '^trigger: hist:keys=lat.log2:vals=hitcount' || true)"
ct histctl synth remove pkg_lat >/dev/null || true
# Kernel addresses need CAP_SYSLOG even for root: without it, stack frames
# have no names.
expect_eq "stack traces are symbolized" "yes" "$(yes_no grep -q 'perf_syscall_enter+0x' <(ct cat "$R/hist"))"
# The service runs in the container's PID namespace, where FUSE names a
# trace_marker writer; its line must carry the writer's pid as the
# machine's kernel does (the host's, as every BPF event of it).
cp "$ROOT/bin/bash" "$ROOT/usr/local/bin/histdmk"
# (`; true`: bash would exec a last command in its place, renaming itself)
ct histdmk -c "echo histd-mark > $T/trace_marker; sleep 5; true" &
MARKER=$!
for _ in $(seq 50); do mk=$(pgrep -x histdmk || true); [ -n "$mk" ] && break; sleep 0.1; done
for _ in $(seq 50); do ct grep -q 'tracing_mark_write: histd-mark$' "$T/trace" && break; sleep 0.1; done
expect_eq "a trace_marker line written in the container shows the writer's host pid" "histdmk-${mk:-?}" \
  "$(ct sed -n 's/^ *\([^ ]*\) .*tracing_mark_write: histd-mark$/\1/p' "$T/trace" || true)"
kill "$MARKER" 2>/dev/null || true
wait "$MARKER" 2>/dev/null || true

# The reload applies what /etc/histd/triggers.d declares.
ct sh -c "echo 'syscalls:sys_enter_close hist:keys=common_pid if comm == \"histdwl\"' \
  >/etc/histd/triggers.d/50-test.conf" || true
expect_eq "systemctl reload histd succeeds" "0" "$(ct systemctl reload histd >/dev/null 2>&1; echo $?)"
# histctl reload returns once the reload is done; histd says RELOADING=1
# (the unit shows "reloading"), reloads, then READY=1 with the summary.
for _ in $(seq 100); do
  grep -q 'configuration /etc/histd/triggers.d: 1 added' <(ct journalctl -u histd --no-pager) &&
    [ "$(ct systemctl is-active histd || true)" = active ] && break
  sleep 0.1
done
expect_eq "systemctl reload keeps the same histd running" "active $pid" \
  "$(ct systemctl is-active histd || true) $(main_pid)"
expect_eq "its status is the reload's summary" \
  "StatusText=configuration /etc/histd/triggers.d: 1 added, 0 changed, 0 removed, 0 unchanged, 0 errors" \
  "$(ct systemctl show -p StatusText histd || true)"
expect_eq "and applies the trigger /etc/histd/triggers.d declares" "1" \
  "$(ct grep -c '^hist:keys=common_pid:' "$T/events/syscalls/sys_enter_close/trigger" || true)"
expect_eq "and its counts" "{ count: $(printf '%10d' "$SIZE") } hitcount:          3" "$(rows "$W/hist")"
# A configuration with an error: the reload applies the rest, and fails.
ct sh -c "echo 'syscalls:sys_enter_close hist:keys=nosuchfield' >/etc/histd/triggers.d/60-bad.conf" || true
rc=$(ct systemctl reload histd >/dev/null 2>&1; echo $?)
expect_eq "systemctl reload fails when a line of the configuration was not applied" "yes" \
  "$([ "$rc" -ne 0 ] && echo yes || echo "no: exit $rc")"
expect_eq "  and the journal names the line, with its caret" "yes" \
  "$(grep -q '^.*  *\^$' <(ct journalctl -u histd --no-pager | grep -A2 '60-bad.conf:1: error: Couldn.t find field') &&
    echo yes || echo no)"
expect_eq "  histd runs on" "active $pid" "$(ct systemctl is-active histd || true) $(main_pid)"
ct rm -f /etc/histd/triggers.d/60-bad.conf || true
ct systemctl reload histd >/dev/null 2>&1 || true

ct systemctl restart histd || true
expect_eq "systemctl restart histd" "active" "$(ct systemctl is-active histd || true)"
expect_eq "a restart keeps the counts" "{ count: $(printf '%10d' "$SIZE") } hitcount:          3" "$(rows "$W/hist")"
workload 2
expect_eq "and counts on" "{ count: $(printf '%10d' "$SIZE") } hitcount:          5" "$(rows "$W/hist")"

# A start that compiles every saved trigger again (the object cache empty,
# as after an upgrade changed the compiler) outlasts TimeoutStartSec=: histd
# asks systemd for more time while units compile (daemon/service/start_progress.h).
# The start must outlast the timeout for the test to mean anything, on a
# fast host too: 300 triggers whose filters have 1 to 100 terms, so that
# each of the 75 programs (4 triggers each) is compiled, not shared with
# another of its shape (triggers differing only in numbers share one).
EVENTS="sys_enter_getppid sys_enter_getpid sys_enter_gettid"
for e in $EVENTS; do
  G=$T/events/syscalls/$e/trigger
  ct sh -c "f='common_pid != 1'; for i in \$(seq 2 101); do
              echo \"hist:keys=common_pid.buckets=\$i if \$f\" >>$G; f=\"\$f && common_pid != \$i\"; done" || true
done
ct mkdir -p /etc/systemd/system/histd.service.d || true
ct sh -c 'printf "[Service]\nTimeoutStartSec=1s\n" >/etc/systemd/system/histd.service.d/50-short-start.conf' || true
ct systemctl daemon-reload || true
started_ms() {
  local on off
  on=$(ct systemctl show -p ActiveEnterTimestampMonotonic --value histd || echo 0)
  off=$(ct systemctl show -p InactiveExitTimestampMonotonic --value histd || echo 0)
  echo $(((on - off) / 1000))
}
# start_loaded WHAT: a start with both cores and the disk kept busy by
# Debian's stress-ng, watched as systemd sees it (its state and the status
# text histd sends) until it is active or has failed.
start_loaded() {
  ct systemctl stop histd || true
  stress-ng --cpu "$(nproc)" --io 1 --timeout 120s --quiet &
  STRESS=$!
  sleep 1
  ct systemctl start --no-block histd || true
  : >"$WORK/seen"
  for _ in $(seq 1200); do
    ct systemctl show -p ActiveState -p StatusText histd 2>/dev/null | tr '\n' ' ' >>"$WORK/seen" || true
    echo >>"$WORK/seen"
    grep -qE 'ActiveState=(active|failed)' <(tail -1 "$WORK/seen") && break
    sleep 0.1
  done
  kill "$STRESS" 2>/dev/null || true; wait "$STRESS" 2>/dev/null || true; STRESS=
  local state; state=$(ct systemctl is-active histd || true)
  expect_eq "$1 with TimeoutStartSec=1s under stress-ng" "active" "$state"
  if [ "$state" = active ]; then echo "   (that start took $(started_ms) ms)"; else ct journalctl -u histd -n 20 --no-pager || true; fi
  expect_eq "  systemd saw it starting, as histd said" "yes" \
    "$(awk '/ActiveState=activating/ && /StatusText=starting: / {seen = 1} END {print seen ? "yes" : "no"}' "$WORK/seen")"
}
ct rm -rf /var/lib/histd/cache || true
start_loaded "a start compiling 300 saved triggers"
expect_eq "  naming the phase and the units compiled" "yes" \
  "$(grep -qE 'StatusText=starting: restoring saved triggers, [0-9]+ units? compiled' "$WORK/seen" && echo yes || echo no)"
took=$(started_ms)
expect_eq "  took longer than the timeout" "yes" "$([ "$took" -gt 1000 ] && echo yes || echo "no: $took ms")"
for e in $EVENTS; do
  G=$T/events/syscalls/$e/trigger
  expect_eq "and restored them all ($e)" "100" "$(ct grep -c '^hist:keys=common_pid.buckets=' "$G" || true)"
  # Every table read through the service (a read opens what the trigger holds;
  # e2e.test_open_files passes the soft limit of 1024, which histd raises).
  expect_eq "and their hist file is read whole ($e)" "100" "$(ct grep -c '^    Hits:' "${G%/trigger}/hist" || true)"
done
expect_eq "its status cleared once ready" "StatusText=" "$(ct systemctl show -p StatusText histd || true)"
start_loaded "a start restoring them from a warm cache"
expect_eq "  with them all" "300" "$(ct cat $T/events/syscalls/sys_enter_get{ppid,pid,tid}/trigger | grep -c '^hist:' || true)"
for e in $EVENTS; do ct sh -c ": >$T/events/syscalls/$e/trigger" || true; done
ct rm -f /etc/systemd/system/histd.service.d/50-short-start.conf || true
ct systemctl daemon-reload || true

# Metrics over HTTP: metrics-listen in histd.conf; the service runs
# histd-exporter as the user the package made for it, without capabilities,
# on the port (the container shares the machine's network).
MPORT=$((20000 + ($$ + 7) % 20000))
ct sh -c "echo 'metrics-listen = \"127.0.0.1:$MPORT\"' >>/etc/histd/histd.conf" || true
# And the textfile for node_exporter, in the directory histd.conf suggests.
ct mkdir -p /var/lib/prometheus/node-exporter || true
ct sh -c "printf 'textfile-dir = \"/var/lib/prometheus/node-exporter\"\ntextfile-interval = 1\n' >>/etc/histd/histd.conf" ||
  true
ct systemctl restart histd || true
scrape() {
  python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$MPORT/metrics', timeout=5).read().decode())" \
    2>/dev/null || true
}
for _ in $(seq 50); do grep -q '^histd_table_hits_total' <(scrape) && break; sleep 0.1; done
expect_eq "the service serves /metrics with metrics-listen" "yes" \
  "$(yes_no grep -q '^histd_table_hits_total{table=' <(scrape))"
# The container has no procps (nothing histd needs pulls it in): /proc.
ct_named() { ct sh -c "grep -lx '$1' /proc/[0-9]*/comm 2>/dev/null | cut -d/ -f3" || true; }
ct_owned_by() { ct sh -c "for p in /proc/[0-9]*; do [ \"\$(stat -c %U \$p)\" = '$1' ] && echo \${p#/proc/}; done" || true; }
exporter=$(ct_named histd-exporter | head -1)
expect_eq "the package made the exporter a system user of its own" "histd-exporter system nologin" \
  "$(ct getent passwd histd-exporter | awk -F: '{print $1, ($3 < 1000 ? "system" : "not system"), $7}' |
    sed 's|/usr/sbin/nologin|nologin|')"
expect_eq "from histd-exporter, as histd-exporter" "histd-exporter" \
  "$(ct stat -c %U "/proc/${exporter:-1}" 2>/dev/null || true)"
expect_eq "that nothing else runs as" "$exporter" "$(ct_owned_by histd-exporter | tr '\n' ' ' | xargs)"
expect_eq "without capabilities" "0000000000000000" \
  "$(ct awk '/^CapEff:/ {print $2}' "/proc/${exporter:-1}/status" 2>/dev/null || true)"
# The page at /: the trigger line, served with its content security policy.
page_headers=$(python3 -c "
import urllib.request
r = urllib.request.urlopen('http://127.0.0.1:$MPORT/', timeout=5)
body = r.read().decode()
print(r.headers['Content-Type'], '|', r.headers['Content-Security-Policy'].split(';')[0], '|',
      'hist:keys=count' in body and '<!DOCTYPE html>' in body)" 2>&1 || true)
expect_eq "and its page at /" "text/html; charset=utf-8 | default-src 'none' | True" "$page_headers"
for _ in $(seq 50); do ct test -s /var/lib/prometheus/node-exporter/histd.prom && break; sleep 0.1; done
expect_eq "the service writes the textfile" "yes" \
  "$(yes_no ct grep -q '^histd_table_hits_total{table=' /var/lib/prometheus/node-exporter/histd.prom)"
expect_eq "whole, readable by node_exporter (0644), and nothing else there" "-rw-r--r-- histd.prom" \
  "$(ct sh -c 'cd /var/lib/prometheus/node-exporter && ls -l | awk "NR > 1 {print \$1, \$NF}"' 2>&1 || true)"
ct sed -i '/^metrics-listen = /d; /^textfile-/d' /etc/histd/histd.conf || true

ct systemctl stop histd || true
expect_eq "systemctl stop histd" "inactive" "$(ct systemctl is-active histd || true)"
expect_eq "leaves no mount behind" "0" "$(ct grep -c 'fuse.histd' /proc/1/mountinfo || true)"
expect_eq "the mount point is an empty directory" "" "$(ct ls -A "$T" 2>&1)"

ct systemctl enable --now histd >/dev/null 2>&1 || true
expect_eq "systemctl enable --now histd" "enabled active" \
  "$(ct systemctl is-enabled histd || true) $(ct systemctl is-active histd || true)"
expect_eq "serves the tree with the counts kept" "{ count: $(printf '%10d' "$SIZE") } hitcount:          5" \
  "$(rows "$W/hist")"

ct apt-get remove -y -q histd >"$WORK/remove.log" 2>&1 || { tail "$WORK/remove.log"; true; }
expect_eq "removing the package stops histd" "inactive" "$(ct systemctl is-active histd || true)"
expect_eq "and unmounts its tree" "0" "$(ct grep -c 'fuse.histd' /proc/1/mountinfo || true)"
ct apt-get purge -y -q histd >"$WORK/purge.log" 2>&1 || { tail "$WORK/purge.log"; true; }
expect_eq "purging it leaves no link systemctl enable made" "" \
  "$(ct find /etc/systemd/system -name 'histd.service' 2>/dev/null || true)"
expect_eq "  nor its state" "" "$(ct ls -A /var/lib/histd 2>/dev/null || true)"

if [ "$FAILURES" -ne 0 ]; then
  echo "--- journal of histd.service"; ct journalctl -u histd --no-pager | tail -40 || true
  echo "$FAILURES check(s) failed"; exit 1
fi
echo "all checks passed"
