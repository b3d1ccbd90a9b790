/* SPDX-License-Identifier: MIT */
/* fuzz_tls_sni.c - libFuzzer target for the ClientHello server-name parser (lib/jail/tlshello.c):
 * the first bytes a sandbox sends through a CONNECT tunnel. Whatever the bytes, the parser must
 * not read past them, and a name it reports is NUL-terminated, non-empty and under 256 bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jail/tlshello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy: ASan catches any read past the client's bytes. */
    unsigned char *b = malloc(size ? size : 1);
    if (!b)
        return 0;
    memcpy(b, data, size);
    char name[256];
    if (eb_tls_sni(b, size, name, sizeof(name)) == EB_SNI_FOUND) {
        size_t n = strnlen(name, sizeof(name));
        if (n == 0 || n >= sizeof(name))
            abort();
    }
    free(b);
    return 0;
}
