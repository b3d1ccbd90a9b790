/* SPDX-License-Identifier: MIT */
/* mcp.h - internals of `execbox mcp` shared by its files: how a run's result becomes an MCP
 * CallToolResult (render.c). The server's own are in internal.h. */
#ifndef EBCLI_MCP_H
#define EBCLI_MCP_H

#include <jansson.h>
#include <stdint.h>

#include "common/errmap.h"
#include "execbox/execbox.h"

/* The CallToolResult for one finished run: a compact text rendering (exit code, stdout and
 * stderr (head and tail past 64 KiB each), the error, truncation and kill notes, the files),
 * PNG/JPEG/GIF/SVG files that came back inline as `image` content while their bytes fit in
 * images_budget (other files are listed by name and size), structuredContent = the result
 * record (without inline file data: the images are already in content), and isError when
 * exit_code != 0. timeout is the run's wall-clock limit, quoted when it expired. NULL when out
 * of memory. */
json_t *mcp_render_result(const struct execbox_result *res, double timeout, size_t images_budget);

/* The images that a session's replies have attached so far, one per /workspace file: its path
 * with the length and a 64-bit FNV-1a hash of its bytes. The workspace persists between cells,
 * so every result lists the earlier files again; a file with the bytes already sent is listed
 * but not attached again. Owned by the server, one per session, bounded by the files that the
 * last result listed. */
struct mcp_sent_image {
    char *path;
    size_t len;
    uint64_t hash;
};
struct mcp_sent {
    struct mcp_sent_image *v;
    size_t n;
};

/* Forgets every image (the session and its workspace are gone). */
void mcp_sent_clear(struct mcp_sent *sent);

/* How a session cell is rendered. */
struct mcp_render {
    double timeout;        /* the cell's wall-clock limit, quoted when it expired */
    size_t images_budget;  /* image bytes the reply may carry (rich outputs first, then files) */
    bool cell;             /* set by mcp_render_cell */
    const char *lost;      /* why the session's earlier state was lost before this cell, or NULL */
    bool ended;            /* the session ended with this cell */
    struct mcp_sent *sent; /* images already attached in this session, updated by the render;
                              NULL: attach every image file */
};

/* The CallToolResult for one session cell (`execbox mcp --stateful`): mcp_render_result's,
 * plus an execution_count line and notes on a rollback, a lost state (also "state_lost": true
 * in structuredContent) and a session that ended; the cell's rich outputs as content in order:
 * their text/plain as sections of the text ("result" for the main result, "output N" for the
 * others), PNG and JPEG as `image` content within the image budget, HTML, SVG, Markdown,
 * LaTeX and JSON as text content headed "--- label as mime ---". structuredContent has the
 * record's results without their image bytes. With o->sent, an image file whose bytes an
 * earlier reply of the session attached is listed as unchanged and not attached again; the
 * rich outputs are the cell's own and always new. NULL when out of memory (o->sent as before). */
json_t *mcp_render_cell(const struct execbox_result *res, const struct mcp_render *o);

/* A tool execution error: {content: [{type: text, text: message}], isError: true}. The model
 * reads it and can correct its call. NULL when out of memory. */
json_t *mcp_tool_error(const char *message);

/* The tool result for a library error of a call (scope and code as errmap_answer takes them):
 * what the one table says MCP does with it, a tool execution error "execbox could not <what>:
 * <message>" for every library error of a run or a session. NULL when out of memory. */
json_t *mcp_api_error(enum errmap_scope scope, int code, const struct execbox_error *err,
                      const char *what);

#endif
