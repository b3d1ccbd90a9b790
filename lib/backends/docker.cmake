# SPDX-License-Identifier: MIT
# The docker backend: Docker Engine API (or podman's compatible service) over libcurl.
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
list(APPEND EB_LIB_SOURCES backends/docker.c)
list(APPEND EB_LIB_DEFINES HAVE_DOCKER)
list(APPEND EB_LIB_LIBS PkgConfig::CURL)
