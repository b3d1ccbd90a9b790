/* SPDX-License-Identifier: MIT */
/* log.c - the service's log on stderr: one JSON object per line (srv_log), libmicrohttpd's
 * warnings with the token redacted, and one access line per request. */
#include "internal.h"

#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"

/* One JSON object as one line, in one write(2) so that lines from threads never interleave. */
void srv_log_object(json_t *o)
{
    char t[48];
    cli_iso_time(NULL, 3, t, sizeof(t));
    json_object_set_new(o, "time", json_string(t));
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS));
    json_decref(o);
    if (!s)
        return;
    size_t n = strlen(s);
    char *line = realloc(s, n + 2);
    if (!line) {
        free(s);
        return;
    }
    line[n] = '\n';
    (void)!write(STDERR_FILENO, line, n + 1);
    free(line);
}

void srv_log(const char *level, const char *event, const char *message)
{
    json_t *o = json_object();
    if (!o)
        return;
    json_object_set_new(o, "level", json_string(level));
    json_object_set_new(o, "event", json_string(event));
    /* json_string refuses invalid UTF-8; a message is ours, but be safe. */
    json_t *m = json_string(message);
    json_object_set_new(o, "message", m ? m : json_string("(unprintable)"));
    srv_log_object(o);
}

/* Replaces every copy of the token in msg with "***" (libmicrohttpd's messages quote the url,
 * and an E2B url carries the token). */
static void redact_token(char *msg, const char *token)
{
    size_t tl = token ? strlen(token) : 0;
    char *p;
    while (tl >= 3 && (p = strstr(msg, token))) {
        memcpy(p, "***", 3);
        memmove(p + 3, p + tl, strlen(p + tl) + 1);
    }
}

void srv_mask_e2b_paths(const char *in, char *out, size_t size)
{
    size_t o = 0;
    while (*in && o + 1 < size) {
        if (strncmp(in, "/e2b/", 5) == 0) {
            size_t seg = strcspn(in + 5, "/ ?\"'");
            int k = snprintf(out + o, size - o, "/e2b/%s", seg ? "***" : "");
            o += k > 0 ? (size_t)k : 0;
            in += 5 + seg;
            continue;
        }
        out[o++] = *in++;
    }
    out[o < size ? o : size - 1] = '\0';
}

__attribute__((format(printf, 2, 0))) void srv_mhd_logger(void *cls, const char *fmt, va_list ap)
{
    struct srv *s = cls;
    /* The front door's socket pairs are not TCP: setting TCP_NODELAY or TCP_CORK on them fails
     * (EOPNOTSUPP), and 0.9.75 cannot be told so for a connection given with
     * MHD_add_connection(); it warns then, at every response. */
    if (strncmp(fmt, "Setting %s option to %s state failed", 36) == 0 ||
        strncmp(fmt, "Failed to push the data from buffers", 36) == 0)
        return;
    /* Whole, so that the token is found before the message is cut to a log line's size. */
    char *full = NULL;
    if (vasprintf(&full, fmt, ap) < 0)
        return;
    redact_token(full, s->cfg.token);
    char msg[512];
    if (s->cfg.tenants)
        srv_mask_e2b_paths(full, msg, sizeof(msg));
    else
        snprintf(msg, sizeof(msg), "%s", full);
    free(full);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = '\0';
    srv_log("warning", "httpd", msg);
}

json_t *srv_access_object(const char *id, const char *remote, const char *method, const char *path,
                          int status, double ms)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "level", json_string("info"));
    json_object_set_new(o, "event", json_string("access"));
    json_object_set_new(o, "request_id", json_string(id));
    json_object_set_new(o, "remote", json_string(remote));
    json_t *m = json_string(method);
    json_object_set_new(o, "method", m ? m : json_string("(not UTF-8)"));
    json_t *p = json_string(path);
    json_object_set_new(o, "path", p ? p : json_string("(not UTF-8)"));
    json_object_set_new(o, "status", json_integer(status));
    json_object_set_new(o, "duration_ms", json_real(ms));
    return o;
}

void srv_access_log(struct job *j, int status)
{
    json_t *o = srv_access_object(j->req.id, j->req.remote, j->req.method, j->req.path, status,
                                  (double)(srv_now_ns() - j->req.t0_ns) / 1e6);
    if (!o)
        return;
    if (j->has_tenant)
        json_object_set_new(o, "tenant", json_string(j->tenant.name));
    if (j->req.route == R_EXECUTE || j->req.route == R_SESSION_EXECUTE || j->req.route == R_E2B) {
        json_object_set_new(o, "stream", json_boolean(j->req.sse));
        if (j->answer.outcome) {
            json_object_set_new(o, "outcome", json_string(j->answer.outcome));
            json_object_set_new(o, "exit_code", json_integer(j->answer.exit_code));
            json_object_set_new(o, "run_ms", json_real(j->answer.run_s * 1e3));
        }
        if (j->client_gone)
            json_object_set_new(o, "client_gone", json_true());
    }
    srv_log_object(o);
}
