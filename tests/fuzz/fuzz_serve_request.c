/* SPDX-License-Identifier: MIT */
/* fuzz_serve_request.c - libFuzzer target for the request side of `execbox serve`: the body
 * parser (src/httpd/request.c) for each kind of body against a fixed server policy, the
 * decoding and checking of a workspace path from a URL, and the UTF-8 cleaner and the error
 * body that carry untrusted bytes back out. Invariants are checked, not just crashes. */
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

    /* A new session's body and a cell's: never code for a session, never more than the base. */
    for (int k = SRV_BODY_SESSION; k <= SRV_BODY_CELL; k++) {
        memset(&err, 0, sizeof(err));
        r = srv_parse_body((enum srv_body_kind)k, (const char *)data, size, &server, &spec, field,
                           sizeof(field), &err);
        if (r == 0) {
            check(k == SRV_BODY_CELL || spec.code == NULL, "a session takes no code");
            check(execbox_policy_check_within(&spec.policy, &server, NULL) == 0, "within base");
            for (size_t i = 0; i < spec.n_files; i++)
                check(srv_workspace_path_ok(spec.files[i].path, strlen(spec.files[i].path)),
                      "input file paths are checked");
            srv_run_spec_clear(&spec);
        } else {
            check(err.msg[0] != '\0', "a message");
        }
    }

    /* The URL path of a file, decoded once: whatever passes has no '..', no NUL, no '/' first. */
    char path[512];
    size_t plen = 0;
    if (srv_url_decode((const char *)data, size, path, sizeof(path), &plen) == 0 &&
        srv_workspace_path_ok(path, plen)) {
        check(plen == strlen(path) && path[0] != '/', "no NUL, relative");
        check(strcmp(path, "..") != 0 && strncmp(path, "../", 3) != 0 && !strstr(path, "/../") &&
                  (plen < 3 || strcmp(path + plen - 3, "/..") != 0),
              "no '..' part");
    }

    /* A Host header (libmicrohttpd hands it over NUL-terminated): whatever is allowed against
     * a list of one name is an IP literal, localhost or that name, and no '@', '/' or space. */
    char host[300];
    size_t hlen = size < sizeof(host) - 1 ? size : sizeof(host) - 1;
    memcpy(host, data, hlen);
    host[hlen] = '\0';
    static const char *const names[] = {"execbox.internal"};
    if (srv_host_allowed(host, names, 1))
        check(!strpbrk(host, "@/ \t\r\n?#"), "an allowed Host is a name, an address, a port");

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
