/* SPDX-License-Identifier: MIT */
/* tpl_blobs.h - the bytes of the template helper module (tpl_helper.c) and of the runs' init
 * program (tpl_init.c), embedded in the library at build time. */
#ifndef EB_JAIL_TPL_BLOBS_H
#define EB_JAIL_TPL_BLOBS_H

extern const unsigned char eb_tpl_helper_blob[], eb_tpl_helper_blob_end[];
extern const unsigned char eb_tpl_init_blob[], eb_tpl_init_blob_end[];

#endif
