/* SPDX-License-Identifier: MIT */
/* fuzz_mcp_frame.c - libFuzzer target for the MCP server's frame parser (src/common/jsonrpc.c):
 * the input is a byte stream as it would arrive on stdin, fed in uneven pieces to the bounded
 * line splitter; every frame is parsed, every message (and batch element) classified, and an
 * answer built and serialised as the server would. Asserts the invariants a client relies on:
 * a frame never exceeds the limit, an answer is one line, an error carries a JSON-RPC code. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonrpc.h"

#define FUZZ_FRAME_LIMIT 4096

static void answer(json_t *m)
{
    struct jrpc_msg msg;
    json_t *a = NULL;
    switch (jrpc_classify(m, &msg)) {
    case JRPC_KIND_INVALID:
        assert(msg.error_code == JRPC_INVALID_REQUEST);
        a = jrpc_error_new(msg.id, msg.error_code, msg.error_msg, NULL);
        break;
    case JRPC_KIND_REQUEST:
        assert(msg.method && msg.id);
        assert(json_is_string(msg.id) || json_is_integer(msg.id));
        a = jrpc_result_new(msg.id, json_pack("{s:s}", "echo", msg.method));
        break;
    case JRPC_KIND_NOTIFICATION: assert(msg.method && !msg.id); return;
    case JRPC_KIND_RESPONSE: assert(msg.id); return;
    }
    if (!a)
        return; /* a method name that is not valid UTF-8 cannot be echoed */
    size_t len = 0;
    char *line = jrpc_frame_dump(a, &len);
    assert(line && len > 0 && line[len - 1] == '\n');
    assert(memchr(line, '\n', len - 1) == NULL);
    json_t *back = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
    assert(back && json_equal(back, a));
    json_decref(back);
    free(line);
    json_decref(a);
}

static int on_frame(void *ud, const char *line, size_t len, size_t dropped)
{
    (void)ud;
    if (!line) {
        assert(dropped > FUZZ_FRAME_LIMIT);
        return 0;
    }
    assert(len > 0 && len <= FUZZ_FRAME_LIMIT && !memchr(line, '\n', len));
    json_t *root = NULL;
    char msg[256];
    if (jrpc_parse(line, len, &root, msg, sizeof(msg)) < 0) {
        json_decref(jrpc_error_new(NULL, JRPC_PARSE_ERROR, msg, NULL));
        return 0;
    }
    if (json_is_array(root)) {
        size_t i;
        json_t *m;
        json_array_foreach (root, i, m)
            answer(m);
    } else {
        answer(root);
    }
    json_decref(root);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jrpc_reader r;
    jrpc_reader_init(&r, FUZZ_FRAME_LIMIT);
    /* Uneven pieces, steered by the first byte, exercise lines split across reads. */
    size_t step = size ? (size_t)data[0] % 97 + 1 : 1;
    for (size_t off = 0; off < size; off += step) {
        size_t n = size - off < step ? size - off : step;
        if (jrpc_reader_feed(&r, (const char *)data + off, n, on_frame, NULL) < 0)
            break;
    }
    jrpc_reader_finish(&r, on_frame, NULL);
    jrpc_reader_release(&r);
    return 0;
}
