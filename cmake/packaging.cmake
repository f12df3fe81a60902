# SPDX-License-Identifier: Apache-2.0
# The Debian package: `cpack -G DEB` in the build directory writes
# oidc-discovery_<VERSION>_<arch>.deb with what `cmake --install` installs,
# under /usr (the systemd unit and /etc/default/oidc-discovery with the
# package's paths, cmake/install_host_files.cmake), the system user made
# by the maintainer scripts in deploy/debian/, and the library packages
# computed by dpkg-shlibdeps (dpkg-dev). tests/e2e/test_deb.py installs,
# runs and purges it.

# cpack (and `make install`, `make package`) package what is built: they do
# not build first. A build started by the test suite's cpack
# (tests/e2e/test_deb.py) would relink the binary other tests are running
# whenever build_info.h changed (a commit, the date). Build, then package.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME oidc-discovery)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "oidc-discovery")
set(CPACK_PACKAGE_CONTACT "oidc-discovery maintainers <oidc-discovery@example.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "OIDC discovery and JWKS for Kubernetes service-account tokens")
set(CPACK_PACKAGE_DESCRIPTION [[
Publishes a Kubernetes cluster's service-account signing keys as an OIDC
discovery document and JWKS, so that relying parties (AWS STS, GCP workload
identity federation, Azure Entra, Vault) can verify service-account tokens
without reaching the cluster. It also verifies tokens (a TokenReview API)
and signs them for kube-apiserver (its external signer).
.
The package installs a hardened systemd unit, oidc-discovery.service, run
as the system user oidc-discovery and configured in
/etc/default/oidc-discovery; set OIDC_ISSUER there before enabling it.]])
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# adduser: postinst makes the service's user with it, postrm removes it.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/conffiles
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postinst
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/prerm
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
