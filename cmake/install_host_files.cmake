# SPDX-License-Identifier: Apache-2.0
# Installs the files of a host installation (run by `cmake --install` and
# cpack, install(SCRIPT) in CMakeLists.txt): the systemd unit and its
# settings file, with the paths of this install's prefix, which is known
# only now (`--prefix` and cpack choose it after configuring). The unit in
# deploy/ names the Debian package's paths (/usr/bin, /etc/default), which
# a /usr install keeps as they are; the settings file goes where
# GNUInstallDirs puts the sysconfdir: /etc for /usr, <prefix>/etc otherwise.
#
# Set by the install(CODE) before this script: OIDC_SRC (the source
# directory), OIDC_STAGE (a directory of the build tree to write the unit
# in) and OIDC_BINDIR (CMAKE_INSTALL_BINDIR).

if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(oidc_etc /etc)
else()
  set(oidc_etc ${CMAKE_INSTALL_PREFIX}/etc)
endif()

file(READ ${OIDC_SRC}/deploy/oidc-discovery.service oidc_unit)
string(REPLACE "/usr/bin/oidc-discovery" "${CMAKE_INSTALL_PREFIX}/${OIDC_BINDIR}/oidc-discovery"
       oidc_unit "${oidc_unit}")
string(REPLACE "/etc/default/oidc-discovery" "${oidc_etc}/default/oidc-discovery" oidc_unit "${oidc_unit}")

# A directory of its own for each run: installs to other prefixes (and
# cpack) may run at the same time from one build tree.
string(RANDOM LENGTH 16 oidc_run)
set(oidc_dir ${OIDC_STAGE}/${oidc_run})
file(WRITE ${oidc_dir}/oidc-discovery.service "${oidc_unit}")
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system" TYPE FILE
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
     FILES ${oidc_dir}/oidc-discovery.service)
file(REMOVE_RECURSE ${oidc_dir})
file(INSTALL DESTINATION "${oidc_etc}/default" TYPE FILE
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
     FILES ${OIDC_SRC}/deploy/oidc-discovery.default RENAME oidc-discovery)
