/* SPDX-License-Identifier: MIT */
/*
 * docker_logs.c - the docker backend's log demultiplexer: the Engine API's log stream (8-byte
 * frame headers, then the payload) into capped stdout/stderr, with the bootstrap's
 * nonce-marked status and file lines taken out of stderr. The bytes come from a container the
 * guest controls: a forged or malformed marked line is output like any other.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/docker.h"
#include "base/buf.h"
#include "base/util.h"
#include "ws/workspace.h"

static int deliver(struct logs *l, int stream, const char *p, size_t n)
{
    if (n == 0)
        return 0;
    return eb_capbuf_take(&l->buf[stream], l->req->on_output, l->req->userdata,
                          stream ? EXECBOX_STREAM_STDERR : EXECBOX_STREAM_STDOUT, p, n);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* One marked line (after the marker, without its newline): "F size hexpath" or "S code sig
 * oom cpu_us maxrss_kb files_truncated". 1 taken, 0 malformed, -ENOMEM. */
static int take_line(struct logs *l, const char *p, size_t n)
{
    char line[DK_HOLD_MAX + 1];
    memcpy(line, p, n);
    line[n] = '\0';
    int end = 0;
    if (line[0] == 'S') {
        struct guest_status g = {0};
        int oom = 0, trunc = 0;
        if (sscanf(line, "S %d %d %d %" SCNd64 " %" SCNd64 " %d%n", &g.code, &g.sig, &oom,
                   &g.cpu_us, &g.maxrss_kb, &trunc, &end) != 6 ||
            (size_t)end != n)
            return 0;
        g.oom = oom == 1;
        g.have = true;
        l->status = g;
        l->files_truncated = trunc == 1;
        return 1;
    }
    uint64_t size = 0;
    if (line[0] != 'F' || sscanf(line, "F %" SCNu64 " %n", &size, &end) != 1 ||
        l->n_files >= EB_FILES_MAX)
        return 0;
    const char *hex = line + end;
    size_t hlen = n - (size_t)end;
    if (hlen == 0 || hlen % 2)
        return 0;
    char *path = malloc(hlen / 2 + 1);
    if (!path)
        return -ENOMEM;
    for (size_t i = 0; i < hlen / 2; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(path);
            return 0;
        }
        path[i] = (char)(hi << 4 | lo);
    }
    path[hlen / 2] = '\0';
    struct execbox_file *f = realloc(l->files, (l->n_files + 1) * sizeof(*f));
    if (!f) {
        free(path);
        return -ENOMEM;
    }
    l->files = f;
    f = &l->files[l->n_files];
    memset(f, 0, sizeof(*f));
    const char *base = strrchr(path, '/');
    f->mime = strdup(eb_mime_from_name(base ? base + 1 : path));
    if (!f->mime) {
        free(path);
        return -ENOMEM;
    }
    f->path = path;
    f->size = size;
    l->n_files++;
    return 1;
}

/* Held stderr bytes (a whole frame, or a frame's complete lines so far): the bootstrap's
 * marked lines are taken out, the rest is output. A marked line is whole within a frame, or it
 * is not ours. */
static int deliver_held(struct logs *l, const char *p, size_t len)
{
    const char *end = p + len;
    size_t mlen = strlen(l->marker);
    while (p < end) {
        const char *m = l->status.have ? NULL : memmem(p, (size_t)(end - p), l->marker, mlen);
        const char *nl = m ? memchr(m, '\n', (size_t)(end - m)) : NULL;
        if (!nl)
            return deliver(l, 1, p, (size_t)(end - p));
        int r = deliver(l, 1, p, (size_t)(m - p));
        if (r >= 0)
            r = take_line(l, m + mlen, (size_t)(nl - m) - mlen);
        if (r == 0)
            r = deliver(l, 1, m, (size_t)(nl + 1 - m)); /* malformed: pass it on */
        if (r < 0)
            return r;
        p = nl + 1;
    }
    return 0;
}

size_t dk_logs_write(char *p, size_t size, size_t n, void *ud)
{
    struct logs *l = ud;
    size_t len = size * n;
    for (size_t i = 0; i < len;) {
        if (l->left == 0) {
            l->hdr[l->hdr_len++] = (unsigned char)p[i++];
            if (l->hdr_len < 8)
                continue;
            l->hdr_len = 0;
            l->stream = l->hdr[0] == 2 ? 1 : 0; /* 1 stdout (0 stdin never comes) */
            l->left = (uint32_t)l->hdr[4] << 24 | (uint32_t)l->hdr[5] << 16 |
                      (uint32_t)l->hdr[6] << 8 | l->hdr[7];
            l->hold_len = 0;
            continue;
        }
        size_t take = len - i < l->left ? len - i : l->left;
        int r = 0;
        if (l->stream == 1) {
            /* stderr is held and read by lines for the marked ones: the engine may put the
             * program's last output and the bootstrap's report in one frame of any size. */
            if (take > DK_HOLD_MAX - l->hold_len)
                take = DK_HOLD_MAX - l->hold_len;
            memcpy(l->hold + l->hold_len, p + i, take);
            l->hold_len += take;
            if (take == l->left) {
                r = deliver_held(l, l->hold, l->hold_len);
                l->hold_len = 0;
            } else if (l->hold_len == DK_HOLD_MAX) {
                /* Full mid-frame: its complete lines go now, a partial last line stays (a
                 * held line no newline ends within DK_HOLD_MAX is output, not a marked one). */
                const char *nl = memrchr(l->hold, '\n', l->hold_len);
                size_t done = nl ? (size_t)(nl + 1 - l->hold) : l->hold_len;
                r = deliver_held(l, l->hold, done);
                memmove(l->hold, l->hold + done, l->hold_len - done);
                l->hold_len -= done;
            }
        } else {
            r = deliver(l, l->stream, p + i, take);
        }
        if (r < 0) {
            l->nomem = true;
            return 0;
        }
        l->left -= (uint32_t)take;
        i += take;
    }
    /* The engine stores every byte of the log on its disk: a flood is stopped, not drained. */
    if (l->buf[0].total + l->buf[1].total > l->kill_at) {
        l->flooded = true;
        return 0;
    }
    return len;
}
