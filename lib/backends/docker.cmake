# SPDX-License-Identifier: MIT
# The docker backend: Docker Engine API (or podman's compatible service) over libcurl, which
# is loaded with dlopen when the backend is first used (backends/curl_load.c): only its
# headers are needed to build, and libexecbox does not link it.
pkg_check_modules(CURL REQUIRED libcurl)
list(APPEND EB_LIB_SOURCES backends/docker.c backends/curl_load.c)
list(APPEND EB_LIB_DEFINES HAVE_DOCKER)
include_directories(${CURL_INCLUDE_DIRS})
list(APPEND EB_LIB_LIBS ${CMAKE_DL_LIBS})
