/* SPDX-License-Identifier: MIT */
/* fuzz_front_head.c - libFuzzer target for serve's front door (src/httpd/front.c): the check of
 * one request head's framing, which decides how many bytes of a connection are a body and which
 * are the next request. Invariants are checked, not just crashes: a refusal is 400 or 413 with a
 * message; an accepted head has one framing, and a Content-Length only when it says one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpd/front.h"

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "invariant broken: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct front_head h;
    char msg[256];
    memset(&h, 0xa5, sizeof(h));
    msg[0] = '\0';
    int st = front_check_head((const char *)data, size, &h, msg, sizeof(msg));
    check(strlen(h.method) < sizeof(h.method) && strlen(h.path) < sizeof(h.path),
          "method and path are C strings");
    if (st == 0) {
        check(h.framing == FRONT_NO_BODY || h.framing == FRONT_LENGTH || h.framing == FRONT_CHUNKED,
              "one framing");
        check(h.framing != FRONT_NO_BODY || h.length == 0 ||
                  h.length == (uint64_t)0xa5a5a5a5a5a5a5a5ULL,
              "no length without a body");
    } else {
        check(st == 400 || st == 413, "refused with 400 or 413");
        check(msg[0] != '\0' && strlen(msg) < sizeof(msg), "a message");
    }
    /* The same bytes checked twice give the same answer (no hidden state). */
    struct front_head h2;
    char msg2[256];
    memset(&h2, 0, sizeof(h2));
    check(front_check_head((const char *)data, size, &h2, msg2, sizeof(msg2)) == st, "stateless");
    if (st == 0)
        check(h2.framing == h.framing && (h.framing != FRONT_LENGTH || h2.length == h.length),
              "same framing");
    return 0;
}
