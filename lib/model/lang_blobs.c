/* SPDX-License-Identifier: MIT */
/* lang_blobs.c - the interpreter bootstraps, real source files under lib/lang/ (read, linted and
 * tested as code), embedded at build time as NUL-terminated strings. */
#include "model/lang.h"

#include "base/embed.h"

EB_EMBED_TEXT3(eb_python_warm_bootstrap, EB_LANG_DIR "/python_run.py",
               EB_LANG_DIR "/python_session.py", EB_LANG_DIR "/python_warm.py");
EB_EMBED_TEXT3(eb_python_template_bootstrap, EB_LANG_DIR "/python_run.py",
               EB_LANG_DIR "/python_session.py", EB_LANG_DIR "/python_template.py");
