/* SPDX-License-Identifier: MIT */
/* docker_boot.c - the docker backend's bootstrap, a real source file (lib/lang/python_docker.py:
 * read, linted and tested as code), embedded at build time as a NUL-terminated string. Apart
 * from docker.c so that the tests which include docker.c get it from the library. */
#include "base/embed.h"

EB_EMBED_TEXT1(eb_docker_bootstrap, EB_LANG_DIR "/python_docker.py");
