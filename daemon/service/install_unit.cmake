# SPDX-License-Identifier: GPL-2.0-only
# Run by `cmake --install` (an install(CODE) of CMakeLists.txt), not at
# configure time: the prefix is the one the install was given
# (`--prefix P`, or /usr under cpack), which configure time cannot know.
# Installs histd.service naming the histd and the histd.conf installed with
# it, that histd.conf, and the (empty) configuration directory it names. DESTDIR, when set, is prepended by file(INSTALL)
# and never written into the unit (a staging directory is not where the
# files will run from).
#
# In: HISTD_UNIT_TEMPLATE, HISTD_CONF, HISTD_BINDIR_REL (bin, relative to
# the prefix), HISTD_SCRATCH (a directory of the build tree).

# Where GNUInstallDirs and Debian put them for the system's own prefix; under
# any other prefix, everything stays below it.
if(CMAKE_INSTALL_PREFIX MATCHES "^/usr/?$")
  set(histd_sysconfdir "/etc")
  set(histd_unitdir "/lib/systemd/system")
else()
  set(histd_sysconfdir "${CMAKE_INSTALL_PREFIX}/etc")
  set(histd_unitdir "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
endif()
set(HISTD_BINDIR "${CMAKE_INSTALL_PREFIX}/${HISTD_BINDIR_REL}")
set(HISTD_SYSCONFDIR "${histd_sysconfdir}")

# One file per prefix: installs to two prefixes at once (tests running in
# parallel) must not copy each other's unit.
string(MD5 histd_key "${CMAKE_INSTALL_PREFIX}")
set(histd_unit "${HISTD_SCRATCH}/${histd_key}/histd.service")
configure_file("${HISTD_UNIT_TEMPLATE}" "${histd_unit}" @ONLY)
file(INSTALL DESTINATION "${histd_unitdir}" TYPE FILE PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
     FILES "${histd_unit}")
# histd.conf names the configuration directory installed beside it (empty:
# what operators add there is theirs).
file(READ "${HISTD_CONF}" histd_conf)
string(REPLACE "config-dir = \"/etc/histd/triggers.d\"" "config-dir = \"${histd_sysconfdir}/histd/triggers.d\""
       histd_conf "${histd_conf}")
file(WRITE "${HISTD_SCRATCH}/${histd_key}/histd.conf" "${histd_conf}")
file(MAKE_DIRECTORY "${HISTD_SCRATCH}/${histd_key}/triggers.d")
file(INSTALL DESTINATION "${histd_sysconfdir}/histd" TYPE FILE PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
     FILES "${HISTD_SCRATCH}/${histd_key}/histd.conf")
file(INSTALL DESTINATION "${histd_sysconfdir}/histd" TYPE DIRECTORY
     DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE
     FILES "${HISTD_SCRATCH}/${histd_key}/triggers.d")
