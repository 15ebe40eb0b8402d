#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs the Debian 12 packages histd needs, only those missing, so it is
# quick on a prepared machine.
#   bash scripts/install-deps.sh --run   what building and running histd,
#                                        histctl and histd-exporter needs
#                                        (scripts/quickstart.sh)
#   bash scripts/install-deps.sh         that, histd-cc's and what every
#                                        test needs (scripts/test.sh, CI)
# Nothing installed here is left running: the services some test packages
# bring (prometheus, prometheus-node-exporter) are neither started nor
# enabled.
set -euo pipefail
RUN=(
  g++ cmake ninja-build pkg-config
  clang                      # compiles BPF units at run time
  libbpf-dev                 # loading BPF objects
  libfuse3-dev fuse3         # the tracefs-shaped tree
  libcli11-dev libfmt-dev    # command lines, formatting
  nlohmann-json3-dev         # the control protocol, JSON output
  libsystemd-dev             # sd_notify for the systemd service
  libseccomp-dev             # syscall names for .syscall
  libssl-dev                 # libcrypto: SHA-256 of cached objects and the state file
  libtraceevent-dev          # kernel event records printed as the kernel's trace prints them
  libmicrohttpd-dev          # histd-exporter: /metrics over HTTP
  zlib1g-dev                 # histd-exporter: gzip for scrapes that ask for it
)
TEST=(
  llvm-14-dev libclang-14-dev libclang-cpp14-dev  # histd-cc, the resident compiler: LLVM's and clang's headers
                             #   and libclang-cpp (32 packages, python3 among them: not in the quick start)
  libclang-rt-dev            # ASan, UBSan and libFuzzer runtimes for the sanitized tests
  bpftool                    # tests: what is pinned and attached
  libgtest-dev               # tests
  libtracefs-dev             # tests: a libtracefs client (tracefs_sql) drives histd's tree
  trace-cmd                  # tests: trace-cmd record, report and extract on histd's tree
  python3 jq                 # tests: poll() and packet helpers; docs/histctl.md's examples
  mandoc groff-base          # man pages: lint (mandoc -Tlint, groff -ww), rendered by the man-page test
  clang-format               # the C++ sources' style (scripts/format.sh; ctest docs.format)
  ccache                     # the test command's builds reuse what this machine compiled before (scripts/ccache.sh)
  dpkg-dev lintian           # the Debian package: cpack's dpkg-shlibdeps, lintian
  systemd systemd-container mmdebstrap  # the package's test: systemd-analyze, a booted Debian 12 container
  podman runc                # docs/containers.md's podman recipe (runc: where crun refuses hybrid cgroups)
  stress-ng                  # the package's test: a start under load; scripts/soak.sh
  linux-source-6.12 xz-utils iputils-ping  # the kernel's ftrace selftests (run from the source tarball; some need ping)
  prometheus python3-prometheus-client      # tests: promtool checks histd's metrics, the OpenMetrics parser reads them,
  prometheus-node-exporter                  #   Prometheus scrapes two histds, node_exporter reads --textfile-dir
  chromium                   # tests: the page at / in a real headless browser
)
# Units these would start and enable at install, as PACKAGE:UNIT: the tests
# run their own, as plain processes (podman's socket would listen for its
# API, its timer pull images).
SERVICES=(prometheus:prometheus.service prometheus-node-exporter:prometheus-node-exporter.service
          podman:podman.socket podman:podman.service podman:podman-restart.service podman:podman-auto-update.timer
          podman:podman-auto-update.service)

PACKAGES=("${RUN[@]}")
[ "${1:-}" = "--run" ] || PACKAGES+=("${TEST[@]}")
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# invoke-rc.d asks policy-rc.d before it starts a service: 101, "not now".
policy=/usr/sbin/policy-rc.d
own_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  own_policy=1
fi
restore_policy() { [ -z "$own_policy" ] || rm -f "$policy"; }
trap restore_policy EXIT
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
for s in "${SERVICES[@]}"; do
  package=${s%%:*} unit=${s#*:}
  if printf '%s\n' "${missing[@]}" | grep -qx "$package" && [ -e "/lib/systemd/system/$unit" ]; then
    systemctl --root=/ --quiet disable "$unit" || true  # offline: the links alone
    if [ -d /run/systemd/system ]; then systemctl stop "$unit" >/dev/null 2>&1 || true; fi
  fi
done
