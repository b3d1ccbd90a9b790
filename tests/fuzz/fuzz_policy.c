/* SPDX-License-Identifier: MIT */
/* fuzz_policy.c - libFuzzer target for the policy's JSON (lib/model/policy.c): a --policy file or a
 * request's limits. Whatever the bytes: no crash, an error or a policy that survives a round
 * trip through its own JSON and the check against the defaults' maximum. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "execbox/execbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct execbox_policy p, q;
    struct execbox_error err = {0};
    execbox_policy_init(&p);
    /* NUL-terminated, as the API asks when len is 0 (an empty input passes 0). */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    int r = execbox_policy_merge_json(&p, text, size, &err);
    free(text);
    if (r < 0) {
        if (!err.msg[0])
            abort(); /* an error always says what */
        return 0;
    }
    char *json = NULL;
    if (execbox_policy_to_json(&p, &json, &err) == 0 && json) {
        execbox_policy_init(&q);
        if (execbox_policy_merge_json(&q, json, strlen(json), &err) < 0)
            abort(); /* our own output must parse back */
        execbox_free(json);
    }
    struct execbox_policy max;
    execbox_policy_init(&max);
    (void)execbox_policy_check_within(&p, &max, &err);
    return 0;
}
