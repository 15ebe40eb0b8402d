#!/usr/bin/env bash
# Installs the Debian 12 packages histd needs to build, run and test.
# Installs only what is missing, so it is quick on a prepared machine.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  clang                      # compiles BPF units at run time
  llvm-14-dev libclang-14-dev libclang-cpp14-dev  # histd-cc, the resident compiler: LLVM's and clang's headers and libclang-cpp
  libclang-rt-dev            # ASan, UBSan and libFuzzer runtimes for the sanitized tests
  libbpf-dev bpftool         # loading BPF objects
  libfuse3-dev fuse3         # the tracefs-shaped tree
  libcli11-dev libfmt-dev    # command lines, formatting
  libgtest-dev               # tests
  nlohmann-json3-dev         # the control protocol, JSON output
  libsystemd-dev             # sd_notify for the systemd service
  libseccomp-dev             # syscall names for .syscall
  libssl-dev                 # libcrypto: SHA-256 of cached objects, checked before loading
  libtraceevent-dev          # kernel event records printed as the kernel's trace prints them
  libtracefs-dev             # tests: a libtracefs client (tracefs_sql) drives histd's tree
  libmicrohttpd-dev          # histd-exporter: /metrics over HTTP
  python3                    # tests: poll() and packet helpers
  mandoc groff-base          # man pages: lint (mandoc -Tlint, groff -ww), rendered by the man-page test
  dpkg-dev lintian           # the Debian package: cpack's dpkg-shlibdeps, lintian
  systemd systemd-container mmdebstrap  # the package's test: systemd-analyze, a booted Debian 12 container
  stress-ng                  # the package's test: a start under load; scripts/soak.sh
  linux-source-6.12 xz-utils iputils-ping  # the kernel's ftrace selftests (run from the source tarball; some need ping)
  prometheus python3-prometheus-client      # tests: promtool checks histd's metrics, the OpenMetrics parser reads them,
  prometheus-node-exporter                  #   Prometheus scrapes two histds, node_exporter reads --textfile-dir
  chromium                   # tests: the page at / in a real headless browser
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
