/* SPDX-License-Identifier: MIT */
/* fuzz_traceback.c - libFuzzer target for the Python and node exception parsers
 * (lib/model/traceback.c): any stderr a guest writes is parsed for its last exception. Whatever the
 * bytes, the parsers must not read out of bounds, and a name they report must lie within the
 * input (or be node's "Uncaught"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "execbox/execbox.h"
#include "model/result.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct execbox_result *r = calloc(1, sizeof(*r));
    if (!r)
        return 0;
    /* An exact-size copy: ASan catches any read past the guest's bytes. */
    r->stderr_data = malloc(size ? size : 1);
    if (!r->stderr_data) {
        free(r);
        return 0;
    }
    memcpy(r->stderr_data, data, size);
    r->stderr_len = size;
    r->exit_code = 1;
    (void)eb_parse_python_error(r);
    if (r->error_name && strlen(r->error_name) > size)
        abort();
    free(r->error_name);
    r->error_name = NULL;
    (void)eb_parse_node_error(r);
    if (r->error_name && strcmp(r->error_name, "Uncaught") != 0 && strlen(r->error_name) > size)
        abort();
    execbox_result_free(r);
    return 0;
}
