# SPDX-License-Identifier: GPL-2.0-only
# The Debian package, built by `cpack -G DEB` in the build directory:
# histd_<version>_amd64.deb. CPack installs with the prefix /usr, so the
# binaries go to /usr/bin, the BPF files to /usr/lib/histd/bpf, the man
# pages to /usr/share/man/man8, and daemon/service/install_unit.cmake puts
# the unit in /lib/systemd/system and the config in /etc/histd.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME histd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "histd maintainers <histd@localhost>")
# The summary is the description's first line (its synopsis).
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "ftrace hist triggers on eBPF, served as a tracefs-shaped tree")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "histd gives any kernel with eBPF the ftrace hist trigger language: write
hist:keys=... to events/<system>/<event>/trigger in the tree histd mounts
at /run/histd/tracing (or use histctl) and read the hist file, byte for
byte the kernel's table. Each command is compiled into a BPF program on
the tracepoint; tables live in BPF maps, pinned so that counts survive a
restart. Runs as the systemd service histd.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# The shared libraries the binaries link, found by dpkg-shlibdeps; and what
# histd runs: clang (it compiles the generated BPF units), the headers those
# units include (<bpf/bpf_helpers.h> from libbpf-dev, <linux/bpf.h> from
# linux-libc-dev), fuse3 (FUSE's tools, fusermount3 being libfuse's fallback
# for mounting), adduser (the exporter's user, made by postinst).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "clang, libbpf-dev, linux-libc-dev, fuse3, adduser")
set(CPACK_STRIP_FILES ON)
# Maintainer scripts: reload systemd and restart a running histd after an
# upgrade, stop it before removal; conffiles: the config stays the
# operator's across upgrades.
foreach(f postinst prerm postrm)
  configure_file(${CMAKE_SOURCE_DIR}/packaging/${f} ${CMAKE_BINARY_DIR}/packaging/${f} COPYONLY)
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/packaging/conffiles "/etc/histd/histd.conf\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_BINARY_DIR}/packaging/conffiles ${CMAKE_BINARY_DIR}/packaging/postinst
    ${CMAKE_BINARY_DIR}/packaging/prerm ${CMAKE_BINARY_DIR}/packaging/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# lintian takes the BPF objects for binaries of another architecture: they
# are, the kernel's BPF, loaded by histd and never run by the CPU.
# The licence, where Debian keeps every package's.
install(FILES ${CMAKE_SOURCE_DIR}/packaging/copyright DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/histd)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
        RENAME histd)
include(CPack)
