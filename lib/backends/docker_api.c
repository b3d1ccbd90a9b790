/* SPDX-License-Identifier: MIT */
/*
 * docker_api.c - the docker backend's Engine API client: HTTP with libcurl over the engine's
 * unix socket (or tcp://), version negotiation, the image calls, and the calls on one
 * container: inspect, runtime check, removal, and the watch that waits for it to stop while
 * counting its followed log stream.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backends/curl_load.h"
#include "backends/docker.h"
#include "base/error.h"
#include "base/util.h"

/* ---- HTTP over the engine socket ----------------------------------------------------------- */

size_t dk_discard_write(char *p, size_t size, size_t n, void *ud)
{
    /* Keeps the last bytes (a pull's progress stream ends with its error, if any). */
    struct eb_http_body *b = ud;
    size_t len = size * n;
    if (!b->data) {
        b->data = malloc(b->max + 1);
        if (!b->data)
            return 0;
    }
    if (len >= b->max) {
        memcpy(b->data, p + len - b->max, b->max);
        b->len = b->max;
    } else {
        if (b->len + len > b->max) {
            size_t drop = b->len + len - b->max;
            memmove(b->data, b->data + drop, b->len - drop);
            b->len -= drop;
        }
        memcpy(b->data + b->len, p, len);
        b->len += len;
    }
    b->data[b->len] = '\0';
    return len;
}

/* The headers of /_ping that identify the engine (Docker clients negotiate from these). */

static void header_value(const char *line, size_t n, const char *name, char *out, size_t size)
{
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(line, name, nl) != 0)
        return;
    const char *v = line + nl;
    size_t vn = n - nl;
    while (vn && (*v == ' ' || *v == '\t'))
        v++, vn--;
    while (vn && (v[vn - 1] == '\r' || v[vn - 1] == '\n' || v[vn - 1] == ' '))
        vn--;
    snprintf(out, size, "%.*s", (int)(vn < size ? vn : size - 1), v);
}

size_t dk_ping_header(char *p, size_t size, size_t n, void *ud)
{
    struct ping_headers *h = ud;
    header_value(p, size * n, "Api-Version:", h->api, sizeof(h->api));
    header_value(p, size * n, "Server:", h->server, sizeof(h->server));
    return size * n;
}

/* Sets up h for one call (for curl_easy_perform or a multi handle). *ret_hdrs, freed by the
 * caller after the transfer, holds the request headers. 0 or -errno. */
int dk_prepare(CURL *h, const struct docker_state *s, const struct call *c,
               struct eb_http_body *reply, struct curl_slist **ret_hdrs, struct execbox_error *err)
{
    char url[1024];
    if (snprintf(url, sizeof(url), "%s%s", c->versioned ? s->base : s->root, c->path) >=
        (int)sizeof(url))
        return eb_error_set(err, -ENAMETOOLONG, "request URL too long");
    curl_easy_reset(h);
    struct curl_slist *hdrs = NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (s->socket[0])
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, s->socket);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* thread-safe timeouts: no SIGALRM */
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, DK_CONNECT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms > 0 ? c->timeout_ms : 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
    if (strcmp(c->method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->json ? c->json : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(c->json ? strlen(c->json) : 0));
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        if (!hdrs)
            return eb_error_set(err, -ENOMEM, "out of memory");
        hdrs = curl_slist_append(hdrs, "Expect:"); /* no 100-continue round trip */
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    } else if (strcmp(c->method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, c->writer ? c->writer : eb_http_body_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c->writer ? c->writer_data : (void *)reply);
    if (c->headers) {
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, dk_ping_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, c->headers);
    }
    if (c->progress) {
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, c->progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, c->progress_data);
    }
    *ret_hdrs = hdrs;
    return 0;
}

/* The outcome of a finished transfer: 0 with *status (any HTTP status), or -errno with a
 * message a user understands. */
int dk_finish(CURL *h, CURLcode cr, const struct docker_state *s, const struct call *c,
              const struct eb_http_body *reply, long *status, struct execbox_error *err)
{
    if (cr != CURLE_OK) {
        long oserr = 0;
        curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &oserr);
        int code = cr == CURLE_OPERATION_TIMEDOUT    ? -ETIMEDOUT
                   : cr == CURLE_ABORTED_BY_CALLBACK ? -ECANCELED
                   : cr == CURLE_WRITE_ERROR         ? -EMSGSIZE
                   : oserr                           ? -(int)oserr
                                                     : -EIO;
        if (cr == CURLE_COULDNT_CONNECT && s->socket[0]) {
            if (oserr == ENOENT)
                return eb_error_set(err, -ENOENT,
                                    "no Docker engine socket at '%s' (is the engine running? "
                                    "set DOCKER_HOST or --docker-host)",
                                    s->socket);
            if (oserr == EACCES || oserr == EPERM)
                return eb_error_set(err, -EACCES,
                                    "permission denied on the Docker socket '%s' (run as a "
                                    "member of its group, or as root)",
                                    s->socket);
            if (oserr == ECONNREFUSED)
                return eb_error_set(err, -ECONNREFUSED,
                                    "nothing listens on the Docker socket '%s' (the engine is "
                                    "not running)",
                                    s->socket);
        }
        if (cr == CURLE_WRITE_ERROR && !c->writer && reply && reply->overflow)
            return eb_error_set(err, -EMSGSIZE, "%s %s: the engine's reply exceeds %u bytes",
                                c->method, c->path, DK_BODY_MAX);
        return eb_error_set(err, code, "%s %s at '%s': %s", c->method, c->path, s->host,
                            curl_easy_strerror(cr));
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    return 0;
}

/* Performs one call; 0 with *status set (any HTTP status), or -errno with a message. */
int dk_http(CURL *h, const struct docker_state *s, const struct call *c, struct eb_http_body *reply,
            long *status, struct execbox_error *err)
{
    struct curl_slist *hdrs = NULL;
    int r = dk_prepare(h, s, c, reply, &hdrs, err);
    if (r < 0)
        return r;
    CURLcode cr = curl_easy_perform(h);
    curl_slist_free_all(hdrs);
    return dk_finish(h, cr, s, c, reply, status, err);
}

/* A call whose reply is a bounded JSON body; 0 with *status, and *ret (may be NULL if the
 * body is not JSON). */
int dk_http_json(CURL *h, const struct docker_state *s, const struct call *c, long *status,
                 json_t **ret, char *msg, size_t msg_size, struct execbox_error *err)
{
    struct eb_http_body b = {.max = DK_BODY_MAX};
    int r = dk_http(h, s, c, &b, status, err);
    if (r < 0) {
        free(b.data);
        return r;
    }
    if (msg)
        eb_http_message(&b, msg, msg_size);
    *ret = b.data ? json_loadb(b.data, b.len, 0, NULL) : NULL;
    free(b.data);
    return 0;
}

/* ---- negotiation, images ------------------------------------------------------------------ */

/* Version negotiation as Docker's clients do it: the API version from /_ping's Api-Version
 * header (one cheap call), or from /version when an engine does not send it. Fills s->base
 * with the version both sides speak and s->engine. */
int dk_negotiate(CURL *h, struct docker_state *s, struct execbox_error *err)
{
    long st = 0;
    struct eb_http_body b = {.max = 4096};
    struct ping_headers ph = {"", ""};
    struct call c = {.method = "GET", .path = "/_ping", .timeout_ms = DK_PING_MS, .headers = &ph};
    int r = dk_http(h, s, &c, &b, &st, err);
    free(b.data);
    if (r < 0)
        return r;
    if (st != 200)
        return eb_error_set(err, -EPROTO,
                            "'%s' does not answer /_ping like a Docker engine (HTTP %ld)", s->host,
                            st);
    char api[16], ver[64] = "?";
    snprintf(api, sizeof(api), "%s", ph.api);
    bool podman = strncmp(ph.server, "Libpod/", 7) == 0;
    const char *slash = strchr(ph.server, '/');
    if (slash)
        snprintf(ver, sizeof(ver), "%.*s", (int)strcspn(slash + 1, " "), slash + 1);
    if (!api[0]) {
        json_t *v = NULL;
        c = (struct call){.method = "GET", .path = "/version", .timeout_ms = DK_PING_MS};
        r = dk_http_json(h, s, &c, &st, &v, NULL, 0, err);
        if (r < 0)
            return r;
        const char *a = json_string_value(json_object_get(v, "ApiVersion"));
        const char *vv = json_string_value(json_object_get(v, "Version"));
        snprintf(api, sizeof(api), "%s", a ? a : "");
        if (vv)
            snprintf(ver, sizeof(ver), "%s", vv);
        json_decref(v);
    }
    int major = 0, minor = 0;
    if (sscanf(api, "%d.%d", &major, &minor) != 2)
        return eb_error_set(err, -EPROTO, "'%s' tells no API version (/_ping, /version)", s->host);
    snprintf(s->engine, sizeof(s->engine), "%s %s (API %s)", podman ? "podman" : "docker", ver,
             api);
    if (major < DK_API_MIN_MAJOR || (major == DK_API_MIN_MAJOR && minor < DK_API_MIN_MINOR))
        return eb_error_set(err, -EPROTONOSUPPORT,
                            "the engine at '%s' is too old: API %d.%d, execbox needs %d.%d or "
                            "newer",
                            s->host, major, minor, DK_API_MIN_MAJOR, DK_API_MIN_MINOR);
    /* Speak the engine's version when older than ours, else ours. */
    snprintf(s->base, sizeof(s->base), "%s/v%s", s->root,
             (major == 1 && minor < 41) ? api : DK_API_MAX);
    return 0;
}

/* 1 present, 0 missing, -errno. */
int dk_image_present(CURL *h, const struct docker_state *s, struct execbox_error *err)
{
    char path[400];
    snprintf(path, sizeof(path), "/images/%s/json", s->image);
    struct call c = {.method = "GET", .path = path, .versioned = true, .timeout_ms = DK_CALL_MS};
    long st = 0;
    json_t *j = NULL;
    char msg[200];
    int r = dk_http_json(h, s, &c, &st, &j, msg, sizeof(msg), err);
    json_decref(j);
    if (r < 0)
        return r;
    if (st == 200)
        return 1;
    if (st == 404)
        return 0;
    return eb_error_set(err, -EIO, "inspecting image '%s': HTTP %ld: %s", s->image, st, msg);
}

int dk_pull_image(CURL *h, const struct docker_state *s, struct execbox_error *err)
{
    char *q = curl_easy_escape(h, s->image, 0);
    if (!q)
        return eb_error_set(err, -ENOMEM, "out of memory");
    char path[800];
    snprintf(path, sizeof(path), "/images/create?fromImage=%s", q);
    curl_free(q);
    struct eb_http_body tail = {.max = 2048};
    struct call c = {.method = "POST",
                     .path = path,
                     .versioned = true,
                     .timeout_ms = DK_PULL_MS,
                     .writer = dk_discard_write,
                     .writer_data = &tail};
    long st = 0;
    int r = dk_http(h, s, &c, &tail, &st, err);
    char msg[200] = "";
    eb_http_message(&tail, msg, sizeof(msg));
    bool failed = tail.data && strstr(tail.data, "\"error");
    free(tail.data);
    if (r < 0)
        return eb_error_prefix(err, r, "pulling image '%s'", s->image);
    if (st != 200 || failed)
        return eb_error_set(err, -ENOENT, "pulling image '%s' failed (HTTP %ld): %s", s->image, st,
                            msg);
    return 0;
}

/* ---- one container ------------------------------------------------------------------------- */

/* A call on /containers/ID + suffix with a bounded JSON reply. */
int dk_api(struct container *k, const char *method, const char *suffix, long timeout_ms,
           long *status, char *msg, size_t msg_size, json_t **ret, struct execbox_error *err)
{
    char path[256];
    snprintf(path, sizeof(path), "/containers/%s%s", k->id, suffix);
    struct call c = {.method = method, .path = path, .versioned = true, .timeout_ms = timeout_ms};
    json_t *j = NULL;
    int r = dk_http_json(k->h, k->s, &c, status, &j, msg, msg_size, err);
    if (ret)
        *ret = j;
    else
        json_decref(j);
    return r;
}

/* The runtime the engine really gave the container. Docker reports HostConfig.Runtime; podman
 * reports OCIRuntime in its own API (its compat inspect says "oci"), and podman's Docker API
 * (4.x) ignores HostConfig.Runtime and uses its default runtime: a container asked to run
 * under gVisor must never silently run under runc. */
int dk_check_runtime(struct container *k, struct execbox_error *err)
{
    long st = 0;
    char msg[200];
    json_t *j = NULL;
    int r;
    if (strstr(k->s->engine, "podman")) {
        /* podman's compat inspect says "oci" whatever ran; its own API says which runtime. */
        char path[160];
        snprintf(path, sizeof(path), "/v4.0.0/libpod/containers/%s/json", k->id);
        struct call c = {.method = "GET", .path = path, .timeout_ms = DK_CALL_MS};
        r = dk_http_json(k->h, k->s, &c, &st, &j, msg, sizeof(msg), err);
    } else {
        r = dk_api(k, "GET", "/json", DK_CALL_MS, &st, msg, sizeof(msg), &j, err);
    }
    if (r < 0)
        return r;
    const char *oci = json_string_value(json_object_get(j, "OCIRuntime"));
    const char *hc =
        json_string_value(json_object_get(json_object_get(j, "HostConfig"), "Runtime"));
    const char *got = oci && *oci ? oci : hc;
    const char *want = k->s->runtime;
    /* podman names the runtime by its configured name or by the binary's path. */
    const char *base = got ? strrchr(got, '/') : NULL;
    bool ok = got && (strcmp(got, want) == 0 || (base && strcmp(base + 1, want) == 0));
    if (st != 200 || !ok)
        r = eb_error_set(err, -ENOTSUP,
                         "the engine created the container with runtime '%s', not '%s' (podman's "
                         "Docker API ignores the requested runtime: make '%s' the engine's "
                         "default runtime, see docs/backends.md)",
                         got ? got : "unknown", want, want);
    json_decref(j);
    return r;
}

/* Kills and removes the container (force also kills a running one). Tries twice. */
int dk_remove_container(struct container *k, struct execbox_error *err)
{
    long st = 0;
    char msg[200] = "";
    struct execbox_error e = {0, ""};
    for (int i = 0; i < 2; i++) {
        int r = dk_api(k, "DELETE", "?force=1&v=1", DK_CALL_MS, &st, msg, sizeof(msg), NULL, &e);
        if (r == 0 && (st == 204 || st == 200 || st == 404))
            return 0;
    }
    return eb_error_set(err, -EIO, "container %.12s could not be removed: %s", k->id,
                        e.msg[0] ? e.msg : msg);
}

/* The flood guard's writer: counts, and aborts the transfer past kill_at. */
static size_t guard_write(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    struct flood_guard *g = ud;
    g->bytes += size * n;
    if (g->bytes > g->kill_at) {
        g->flooded = true;
        return 0;
    }
    return size * n;
}

/* Waits until the container stops (*ret_done), the deadline passes (*ret_timed_out), the
 * cancel fd fires (*ret_cancelled) or the guard sees a flood. 0, or -errno when the engine
 * failed. */
int dk_watch(struct container *k, uint64_t deadline, int cancel_fd, struct flood_guard *guard,
             bool *ret_timed_out, bool *ret_cancelled, bool *ret_done, struct execbox_error *err)
{
    const struct docker_state *s = k->s;
    char wpath[160], lpath[160];
    snprintf(wpath, sizeof(wpath), "/containers/%s/wait?condition=not-running", k->id);
    snprintf(lpath, sizeof(lpath), "/containers/%s/logs?follow=1&stdout=1&stderr=1", k->id);
    uint64_t now = eb_now_ns();
    long left_ms = deadline > now ? (long)((deadline - now) / 1000000) + 1 : 1;
    struct call wc = {.method = "POST", .path = wpath, .versioned = true, .timeout_ms = left_ms};
    struct call lc = {.method = "GET",
                      .path = lpath,
                      .versioned = true,
                      .timeout_ms = left_ms,
                      .writer = guard_write,
                      .writer_data = guard};
    struct eb_http_body wb = {.max = DK_BODY_MAX};
    struct curl_slist *whdrs = NULL, *lhdrs = NULL;
    CURL *hl = curl_easy_init();
    CURLM *m = curl_multi_init();
    int r = 0;
    bool added_w = false, added_l = false;
    if (!hl || !m) {
        r = eb_error_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    r = dk_prepare(k->h, s, &wc, &wb, &whdrs, err);
    if (r >= 0)
        r = dk_prepare(hl, s, &lc, NULL, &lhdrs, err);
    if (r < 0)
        goto out;
    added_w = curl_multi_add_handle(m, k->h) == CURLM_OK;
    added_l = curl_multi_add_handle(m, hl) == CURLM_OK;
    if (!added_w) {
        r = eb_error_set(err, -ENOMEM, "libcurl: cannot add a transfer");
        goto out;
    }
    for (;;) {
        int running = 0;
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            r = eb_error_set(err, -EIO, "libcurl: transfer loop failed");
            goto out;
        }
        CURLMsg *msg;
        int queued;
        while ((msg = curl_multi_info_read(m, &queued)))
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == k->h) {
                long st = 0;
                r = dk_finish(k->h, msg->data.result, s, &wc, &wb, &st, err);
                if (r == -ETIMEDOUT) {
                    *ret_timed_out = true;
                    r = 0;
                } else if (r == 0 && st == 200) {
                    *ret_done = true;
                } else if (r == 0) {
                    char m2[200];
                    eb_http_message(&wb, m2, sizeof(m2));
                    r = eb_error_set(err, -EIO, "waiting for the container: HTTP %ld: %s", st, m2);
                }
                goto out;
            }
        if (guard->flooded)
            goto out;
        now = eb_now_ns();
        if (now >= deadline) {
            *ret_timed_out = true;
            goto out;
        }
        struct curl_waitfd extra = {.fd = cancel_fd, .events = CURL_WAIT_POLLIN};
        long ms = (long)((deadline - now) / 1000000) + 1;
        if (curl_multi_poll(m, cancel_fd >= 0 ? &extra : NULL, cancel_fd >= 0 ? 1 : 0,
                            ms > 1000 ? 1000 : (int)ms, NULL) != CURLM_OK) {
            r = eb_error_set(err, -EIO, "libcurl: poll failed");
            goto out;
        }
        if (cancel_fd >= 0 && extra.revents) {
            *ret_cancelled = true;
            goto out;
        }
    }
out:
    if (added_w)
        curl_multi_remove_handle(m, k->h);
    if (added_l)
        curl_multi_remove_handle(m, hl);
    curl_slist_free_all(whdrs);
    curl_slist_free_all(lhdrs);
    free(wb.data);
    if (hl)
        curl_easy_cleanup(hl);
    if (m)
        curl_multi_cleanup(m);
    return r;
}
