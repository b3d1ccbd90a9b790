/* SPDX-License-Identifier: MIT */
/* tpl_blobs.c - the template's helper module and its runs' init program, built with the library
 * and carried inside it, so that a template needs no file installed anywhere: the library hands
 * each to the template as a sealed memfd. */
#include "jail/tpl_blobs.h"

#include "base/embed.h"

EB_EMBED_FILE(eb_tpl_helper_blob, EB_TPL_HELPER_PATH);
EB_EMBED_FILE(eb_tpl_init_blob, EB_TPL_INIT_PATH);
