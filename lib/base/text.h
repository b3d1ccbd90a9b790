/* SPDX-License-Identifier: MIT */
/* text.h - internal text encodings beside the public ones of text.c. */
#ifndef EB_TEXT_H
#define EB_TEXT_H

#include <stddef.h>

/* Decodes standard padded base64 (RFC 4648) of s[0..len) into *ret (malloc'd, len in
 * *ret_len, NUL-terminated for convenience). -EBADMSG on any byte outside the alphabet or
 * misplaced padding, -ENOMEM. */
int eb_base64_decode(const char *s, size_t len, unsigned char **ret, size_t *ret_len);

#endif
