/* SPDX-License-Identifier: MIT */
/* fuzz_serve_request.c - libFuzzer target for the request side of `execbox serve`: the body
 * parser (src/httpd/request.c) against a fixed server policy, and the UTF-8 cleaner and the
 * error body that carry untrusted bytes back out. Invariants are checked, not just crashes. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "execbox/execbox.h"
#include "httpd/request.h"

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "invariant broken: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct execbox_policy server;
    execbox_policy_init(&server);
    server.timeout = 5;
    server.memory = 128ULL << 20;

    struct srv_run_spec spec;
    char field[64];
    struct execbox_error err = {0};
    int r = srv_parse_run((const char *)data, size, &server, &spec, field, sizeof(field), &err);
    if (r == 0) {
        check(spec.code != NULL && strlen(spec.code) == spec.code_len, "code is a C string");
        check(execbox_policy_check_within(&spec.policy, &server, NULL) == 0, "within maximum");
        check(spec.policy.workspace[0] == '\0' && spec.policy.rootfs[0] == '\0', "no paths");
        srv_run_spec_clear(&spec);
    } else {
        check(err.msg[0] != '\0', "a message");
        check(strlen(field) < sizeof(field), "field fits");
        /* The error body must be valid JSON whatever the message quoted from the input. */
        char *body = srv_error_json("bad_request", err.msg, field);
        check(body != NULL, "an error body");
        json_t *o = json_loads(body, 0, NULL);
        check(o != NULL, "error body parses");
        json_decref(o);
        free(body);
    }

    size_t keep = 0, clen = 0;
    char *clean = execbox_utf8_sanitize((const char *)data, size, &clen, &keep);
    if (clean) {
        check(keep <= 3 && keep <= size, "carry is at most one partial sequence");
        json_t *s = json_stringn(clean, clen);
        check(s != NULL, "cleaned output is valid UTF-8");
        json_decref(s);
        free(clean);
    }
    return 0;
}
