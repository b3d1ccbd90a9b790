/* SPDX-License-Identifier: MIT */
/* jsonrpc.h - JSON-RPC 2.0 over newline-delimited frames (the MCP stdio transport; the HTTP
 * service may reuse the message half): a bounded line splitter that survives oversized
 * frames, a message classifier that names what is wrong with an invalid message, and builders
 * for responses and errors. Pure functions over jansson; no I/O, no threads, no globals. */
#ifndef EBCLI_JSONRPC_H
#define EBCLI_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The error codes JSON-RPC 2.0 defines. */
#define JRPC_PARSE_ERROR -32700
#define JRPC_INVALID_REQUEST -32600
#define JRPC_METHOD_NOT_FOUND -32601
#define JRPC_INVALID_PARAMS -32602
#define JRPC_INTERNAL_ERROR -32603
#define JRPC_SERVER_BUSY -32000 /* implementation-defined: too many calls in flight */

/* ---- framing ------------------------------------------------------------------------------ */

/* Called once per frame: a complete line without its '\n' (and without a trailing '\r'), or,
 * when a line grew past the limit, line == NULL and dropped = the bytes discarded (the whole
 * line, newline excluded). Empty lines are skipped. A negative return stops the feed and is
 * passed back by jrpc_reader_feed. */
typedef int (*jrpc_frame_fn)(void *userdata, const char *line, size_t len, size_t dropped);

/* Splits a byte stream into lines of at most max bytes. Memory use is bounded by max: bytes of
 * an oversized line are counted and dropped until its newline, and the stream stays usable. */
struct jrpc_reader {
    char *buf;       /* the current, incomplete line */
    size_t len;      /* bytes in buf */
    size_t cap;      /* allocated size of buf */
    size_t max;      /* hard limit of one line */
    size_t dropping; /* > 0: inside an oversized line, bytes dropped so far */
};

/* Sets up *r for lines of at most max bytes (max >= 1). Allocates nothing yet. */
void jrpc_reader_init(struct jrpc_reader *r, size_t max);

/* Frees the buffer. *r may be reused after jrpc_reader_init(). */
void jrpc_reader_release(struct jrpc_reader *r);

/* Feeds n bytes, calling fn for each frame they complete. 0, -ENOMEM, or fn's negative code. */
int jrpc_reader_feed(struct jrpc_reader *r, const char *data, size_t n, jrpc_frame_fn fn,
                     void *userdata);

/* At end of input: a last line without a newline is still a frame. 0 or fn's negative code. */
int jrpc_reader_finish(struct jrpc_reader *r, jrpc_frame_fn fn, void *userdata);

/* ---- messages ----------------------------------------------------------------------------- */

enum jrpc_kind {
    JRPC_KIND_INVALID = 0,  /* answer with error_code / error_msg (and the id, if it was valid) */
    JRPC_KIND_REQUEST,      /* method + id: must be answered */
    JRPC_KIND_NOTIFICATION, /* method, no id: never answered */
    JRPC_KIND_RESPONSE,     /* result or error + id: a reply to a request we sent */
};

/* A classified message. Pointers are borrowed from the root object given to jrpc_classify. */
struct jrpc_msg {
    enum jrpc_kind kind;
    json_t *id;         /* the id (string or integer), or NULL when absent or unusable */
    const char *method; /* requests and notifications */
    json_t *params;     /* object, array or NULL when absent */
    int error_code;     /* JRPC_KIND_INVALID: the code to answer with */
    char error_msg[160];
};

/* Parses one frame. On success *ret_root is the message (an object, or an array for a batch;
 * any other JSON value too, for jrpc_classify to refuse); the caller owns it. On failure
 * returns JRPC_PARSE_ERROR with the position in msg. Duplicate keys are a parse error (two
 * readers could disagree on which one counts); NUL characters inside strings are allowed. */
int jrpc_parse(const char *line, size_t len, json_t **ret_root, char *msg, size_t msg_size);

/* Describes why jansson refused a text, in our words ("a string holds a NUL character at line
 * 1, column 9"): what clients are shown, never the JSON library's own wording (which names its
 * option flags and quotes the input). Writes at most n bytes to buf; returns buf. */
char *jrpc_json_error_text(const json_error_t *e, char *buf, size_t n);

/* Classifies one message (one element of a batch, or a whole non-batch frame). MCP's rules
 * apply on top of JSON-RPC 2.0's: an id is a string or an integer, never null. Returns
 * ret->kind. */
enum jrpc_kind jrpc_classify(json_t *m, struct jrpc_msg *ret);

/* {"jsonrpc":"2.0","id":id,"result":result}; steals result; id borrowed (NULL: null). */
json_t *jrpc_result_new(json_t *id, json_t *result);

/* {"jsonrpc":"2.0","id":id,"error":{"code","message"[,"data"]}}; steals data (may be NULL). */
json_t *jrpc_error_new(json_t *id, int code, const char *message, json_t *data);

/* The message as one compact line ending in '\n' (JSON escapes every newline inside), ready to
 * write, NUL-terminated after the newline (*ret_len excludes the NUL). NULL when out of memory.
 * Free with free(). */
char *jrpc_frame_dump(const json_t *m, size_t *ret_len);

#endif
