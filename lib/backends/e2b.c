/* SPDX-License-Identifier: MIT */
/*
 * e2b.c - the `e2b` backend: one fresh E2B cloud sandbox (a Firecracker microVM run by E2B) per
 * run, through E2B's REST API and its code interpreter's `/execute` stream, with libcurl
 * (loaded lazily, backends/curl_load.c).
 *
 * A run: POST {api}/sandboxes (the template, the sandbox's own lifetime = the run's timeout
 * plus a margin, no internet for network "none", no auto-pause); envd's MakeDir of the run's
 * working directory and a code context working there (POST {sandbox}/contexts); POST
 * {sandbox}/execute (the code; NDJSON lines typed stdout, stderr, result, error,
 * number_of_executions, end_of_execution); once the code ended, envd's ListDir of that
 * directory and GET /files of its small images; and DELETE {api}/sandboxes/{id} on every path
 * out once the sandbox was created: success, guest error, timeout, cancel, flood, a broken
 * stream. Should this process
 * die before the DELETE, E2B ends the sandbox itself when its lifetime runs out.
 *
 * Configuration follows E2B's own SDKs: E2B_API_KEY (required), E2B_DOMAIN (default e2b.app),
 * E2B_API_URL (default https://api.<domain>), E2B_SANDBOX_URL (default
 * https://<port>-<id>.<domain>, port 49999 for the code interpreter and 49983 for envd; set, it
 * serves every sandbox and port, named by the E2b-Sandbox-Id and E2b-Sandbox-Port headers, as
 * E2B's SDKs do). Plain http is accepted only for loopback hosts:
 * the API key never travels in clear over a network.
 *
 * This file holds the backend's table: the configuration, the probe and the run's mapping. The
 * client of E2B's API and envd is e2b_api.c, the execute stream e2b_exec.c, both behind the
 * private e2b.h.
 *
 * Thread safety: the state is read-only after open(); each run has its own curl handles.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "backends/backend.h"
#include "backends/curl_load.h"
#include "backends/e2b.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "model/result.h"
#include "proc/proc.h"

/* ---- configuration ------------------------------------------------------------------------- */

static const char *env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && *v ? v : def;
}

/* True when url is https://..., or http:// to a loopback host (tests, a local proxy). */
static bool url_allowed(const char *url)
{
    if (strncmp(url, "https://", 8) == 0)
        return url[8] != '\0';
    if (strncmp(url, "http://", 7) != 0)
        return false;
    const char *h = url + 7;
    static const char *const loop[] = {"127.", "localhost:", "localhost/", "[::1]"};
    for (size_t i = 0; i < ARRAY_SIZE(loop); i++)
        if (strncmp(h, loop[i], strlen(loop[i])) == 0)
            return true;
    return strcmp(h, "localhost") == 0;
}

/* Reads the configuration; 0, or -errno with err naming what is wrong. */
static int parse_options(const struct execbox_executor_options *o, struct e2b_state *s,
                         struct execbox_error *err)
{
    memset(s, 0, sizeof(*s));
    const char *key = getenv("E2B_API_KEY");
    if (!key || !*key)
        return eb_error_set(err, -ENOKEY, "E2B_API_KEY is not set (the key from E2B's dashboard)");
    if (!e2b_valid_token(key, E2B_KEY_MAX))
        return eb_error_set(err, -EINVAL, "E2B_API_KEY is not a valid key");
    snprintf(s->key_header, sizeof(s->key_header), "X-API-Key: %s", key);
    const char *domain = env_or("E2B_DOMAIN", E2B_DEFAULT_DOMAIN);
    if (!e2b_valid_token(domain, sizeof(s->domain) - 1) || strchr(domain, '/'))
        return eb_error_set(err, -EINVAL, "E2B_DOMAIN '%s' is not a domain name", domain);
    snprintf(s->domain, sizeof(s->domain), "%s", domain);
    const char *api = getenv("E2B_API_URL");
    if (api && *api) {
        if (strlen(api) >= sizeof(s->api))
            return eb_error_set(err, -ENAMETOOLONG, "E2B_API_URL is too long");
        snprintf(s->api, sizeof(s->api), "%s", api);
    } else {
        snprintf(s->api, sizeof(s->api), "https://api.%s", s->domain);
    }
    const char *sb = getenv("E2B_SANDBOX_URL");
    if (sb && *sb) {
        if (strlen(sb) >= sizeof(s->sandbox))
            return eb_error_set(err, -ENAMETOOLONG, "E2B_SANDBOX_URL is too long");
        snprintf(s->sandbox, sizeof(s->sandbox), "%s", sb);
    }
    for (char *u = s->api; u; u = u == s->api ? s->sandbox : NULL) {
        size_t n = strlen(u);
        while (n && u[n - 1] == '/')
            u[--n] = '\0';
        if (u[0] && !url_allowed(u))
            return eb_error_set(err, -EINVAL,
                                "'%s' is neither https:// nor http:// to a loopback address "
                                "(the API key must not travel in clear)",
                                u);
    }
    const char *t =
        o && o->e2b_template && *o->e2b_template ? o->e2b_template : E2B_DEFAULT_TEMPLATE;
    if (!e2b_valid_token(t, sizeof(s->template_id) - 1))
        return eb_error_set(err, -EINVAL, "'%s' is not a valid E2B template name", t);
    snprintf(s->template_id, sizeof(s->template_id), "%s", t);
    return 0;
}

/* The policy fields E2B's API has no knob for: a template's VM size is fixed when the template
 * is built, and the sandbox's disk and process table are the VM's own. */
static const struct {
    const char *wall;
    const char *detail;
} not_enforced[] = {
    {"memory", "not enforced by this backend: the template's VM memory (set when it is built)"},
    {"cpus", "not enforced by this backend: the template's vCPU count"},
    {"pids", "not enforced by this backend: the VM's own process table"},
    {"tmpfs", "not enforced by this backend: /tmp is the VM's disk"},
    {"workspace_size", "not enforced by this backend: the VM's disk"},
    {"file_size", "not enforced by this backend: the VM's disk"},
};

static int probe(const struct execbox_executor_options *o, struct execbox_check *c)
{
    struct e2b_state s;
    struct execbox_error err = {0};
    snprintf(c->tier, sizeof(c->tier), "remote microVM: an E2B sandbox (Firecracker), per run");
    const char *why = NULL;
    bool curl_ok = eb_curl_load(&why) != NULL;
    eb_check_add(c, "libcurl", curl_ok, true, "%s", curl_ok ? "loaded" : why);
    int r = parse_options(o, &s, &err);
    eb_check_add(c, "configuration", r == 0, true, "%s", r == 0 ? "E2B_API_KEY set" : err.msg);
    if (r == 0) {
        eb_check_add(c, "endpoint", true, false, "API %s, template '%s', sandbox %s%s", s.api,
                     s.template_id, s.sandbox[0] ? s.sandbox : "https://49999-<id>.",
                     s.sandbox[0] ? "" : s.domain);
    }
    eb_check_add(c, "boundary", true, false,
                 "E2B's Firecracker microVM, one per run, deleted after it (not contacted by "
                 "check)");
    eb_check_add(c, "timeout", true, false,
                 "enforced here on the stream; the sandbox's own lifetime is the timeout + %d s",
                 E2B_LIFETIME_MARGIN);
    eb_check_add(c, "network none", true, false, "allow_internet_access: false");
    eb_check_add(c, "network allow", true, false,
                 "allow_hosts as E2B's network.allowOut, the rest denied; ports not enforced");
    eb_check_add(c, "output_limit", true, false, "enforced here on the stream");
    for (size_t i = 0; i < ARRAY_SIZE(not_enforced); i++)
        eb_check_add(c, not_enforced[i].wall, false, false, "%s", not_enforced[i].detail);
    eb_check_add(c, "workspace files", true, false,
                 "listed from %s (made per run, the code's cwd) through envd before the delete; "
                 "--workspace and --rootfs are refused",
                 E2B_WORKSPACE);
    eb_check_add(c, "stdin", false, false, "the code interpreter has none; refused when given");
    c->usable = curl_ok && r == 0;
    return c->usable ? 0 : -ENOTSUP;
}

static int open_backend(const struct execbox_executor_options *o,
                        const struct execbox_check *report, void **ret_state,
                        struct execbox_error *err)
{
    (void)report;
    const char *why = NULL;
    if (!eb_curl_load(&why))
        return eb_error_set(err, -ENOTSUP, "%s", why);
    struct e2b_state *s = calloc(1, sizeof(*s));
    if (!s)
        return eb_error_set(err, -ENOMEM, "out of memory");
    int r = parse_options(o, s, err);
    if (r < 0) {
        free(s);
        return r;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        free(s);
        return eb_error_set(err, -EIO, "libcurl's global initialisation failed");
    }
    *ret_state = s;
    return 0;
}

static void close_backend(void *state)
{
    if (!state)
        return;
    curl_global_cleanup();
    free(state);
}

/* ---- a run --------------------------------------------------------------------------------- */

/* The code interpreter's name of the run's language. */
static const char *interpreter_language(const struct eb_run *run)
{
    return strcmp(run->lang->name, "javascript") == 0 ? "js"
           : strcmp(run->lang->name, "bash") == 0     ? "bash"
                                                      : "python";
}

/* Strips ANSI colour sequences (IPython colours its tracebacks) in place. */
static void strip_ansi(char *s)
{
    char *w = s;
    for (const char *p = s; *p;) {
        if (p[0] == '\x1b' && p[1] == '[') {
            p += 2;
            while (*p && !(*p >= '@' && *p <= '~'))
                p++;
            if (*p)
                p++;
            continue;
        }
        *w++ = *p++;
    }
    *w = '\0';
}

/* The exception the interpreter reported: SystemExit is the program's exit status; anything
 * else is exit 1 with the traceback appended to stderr, as a local interpreter prints it, and
 * the exception as the run's error (w's error_*, for the executor). *ret_code: the exit code. */
static int apply_error(struct stream *st, int *ret_code, struct eb_wait *w)
{
    const char *name = json_string_value(json_object_get(st->error, "name"));
    const char *value = json_string_value(json_object_get(st->error, "value"));
    const char *tb = json_string_value(json_object_get(st->error, "traceback"));
    if (!name)
        name = "Error";
    if (!value)
        value = "";
    if (strcmp(name, "SystemExit") == 0) {
        char *end;
        long code = strtol(value, &end, 10);
        if (!*value || strcmp(value, "None") == 0)
            *ret_code = 0;
        else if (*end == '\0' && code >= 0 && code <= 255)
            *ret_code = (int)code;
        else {
            *ret_code = 1;
            if (e2b_stream_deliver(st, 1, value, strlen(value)) < 0 ||
                e2b_stream_deliver(st, 1, "\n", 1) < 0)
                return -ENOMEM;
        }
        return 0;
    }
    *ret_code = 1;
    _cleanup_free_ char *clean = strdup(tb ? tb : "");
    if (!clean)
        return -ENOMEM;
    strip_ansi(clean);
    size_t n = strlen(clean);
    if (n && (e2b_stream_deliver(st, 1, clean, n) < 0 ||
              (clean[n - 1] != '\n' && e2b_stream_deliver(st, 1, "\n", 1) < 0)))
        return -ENOMEM;
    w->error_name = strdup(name);
    w->error_value = strdup(value);
    w->error_traceback = TAKE_PTR(clean);
    return w->error_name && w->error_value ? 0 : -ENOMEM;
}

static int refuse(const struct eb_run *run, struct execbox_error *err)
{
    if (run->req->stdin_data)
        return eb_error_set(err, -ENOTSUP,
                            "the e2b backend cannot pass stdin (E2B's code interpreter has none)");
    if (run->policy->workspace[0])
        return eb_error_set(err, -ENOTSUP,
                            "the e2b backend cannot mount a host --workspace (the sandbox is "
                            "remote)");
    if (run->policy->rootfs[0])
        return eb_error_set(err, -ENOTSUP,
                            "the e2b backend has no --rootfs: the E2B template is the root "
                            "(--e2b-template)");
    return 0;
}

static int record_degraded(const struct execbox_policy *p, struct execbox_result *res)
{
    for (size_t i = 0; i < ARRAY_SIZE(not_enforced); i++)
        if (eb_result_add_degraded(res, not_enforced[i].wall) < 0)
            return -ENOMEM;
    /* E2B's egress rules know hosts, not ports; and it reports no egress record. */
    if (p->network == EXECBOX_NETWORK_ALLOW && eb_result_add_degraded(res, "allow_ports") < 0)
        return -ENOMEM;
    return 0;
}

/* A run's E2B sandbox (the backend's eb_box): created and prepared (its working directory, a
 * code context there) by start(); the code goes with the execute in wait(), which deletes the
 * sandbox once the code ended and its files were listed (so that a failed delete is the run's
 * error), else destroy() does. */
struct eb_box {
    struct sandbox sb;
    char ctx[128];
    uint64_t t0; /* deliver(): the deadline counts from here */
    bool deleted;
};

static void e2b_destroy(void *state, struct eb_box *w)
{
    if (!w)
        return;
    if (!w->deleted)
        e2b_delete_sandbox(state, &w->sb, NULL);
    free(w);
}

/* Cold only: the refusals first (nothing is created for a refused run), then the sandbox, its
 * working directory and a code context working there. */
static int e2b_start(void *state, const struct eb_start *s, struct eb_box **ret,
                     struct execbox_error *err)
{
    const struct e2b_state *e = state;
    int r = refuse(s->run, err);
    if (r < 0)
        return r;
    struct eb_box *w = calloc(1, sizeof(*w));
    if (!w)
        return eb_error_set(err, -ENOMEM, "out of memory");
    r = e2b_create_sandbox(e, s->policy, &w->sb, err);
    if (r < 0) {
        free(w);
        return r;
    }
    r = e2b_prepare(e, &w->sb, interpreter_language(s->run), w->ctx, sizeof(w->ctx), err);
    if (r < 0) {
        e2b_destroy(state, w);
        return r;
    }
    *ret = w;
    return 0;
}

/* The code travels with the execute call, which wait() makes and follows. */
static int e2b_deliver(void *state, struct eb_box *w, const struct eb_run *run,
                       struct execbox_error *err)
{
    (void)state, (void)run, (void)err;
    w->t0 = eb_now_ns();
    return 0;
}

/* Streams the execution to its end, the deadline, a cancel or a flood; lists the files once the
 * code ran to its end; deletes the sandbox; reports how it ended. */
static int e2b_wait(void *state, struct eb_box *w, const struct eb_run *run,
                    struct execbox_result *res, struct eb_wait *ret, struct execbox_error *err)
{
    const struct e2b_state *s = state;
    const struct execbox_policy *p = run->policy;
    if (record_degraded(p, res) < 0)
        return -ENOMEM;
    struct stream st = {.req = run->req, .body.max = E2B_BODY_MAX};
    uint64_t lim = p->output_limit * E2B_FLOOD_FACTOR;
    st.flood_at = lim > E2B_FLOOD_MIN ? lim : E2B_FLOOD_MIN;
    eb_capbuf_init(&st.buf[0], p->output_limit);
    eb_capbuf_init(&st.buf[1], p->output_limit);
    struct exec_outcome o = {0};
    int r = e2b_execute(s, &w->sb, w->ctx, run, w->t0 + (uint64_t)(p->timeout * 1e9), &st, &o, err);
    res->execution_time = (double)(eb_now_ns() - w->t0) / 1e9;
    /* The files, only once the code ran to its end: after a timeout or a cancel the code may
     * still be writing. */
    struct execbox_error lerr = {0, ""};
    int lr = 0;
    if (r == 0 && !o.timed_out && !o.cancelled && !st.flooded && !st.nomem && st.status == 200 &&
        !st.bad_line && !st.unexpected && o.cr == CURLE_OK && st.ended) {
        lr = e2b_list_files(s, &w->sb, run->req->inline_files_max, res, &lerr);
        if (lr < 0)
            lr = eb_error_prefix(&lerr, lr, "E2B sandbox '%s': the files in %s", w->sb.id,
                                 E2B_WORKSPACE);
        ret->files_listed = true;
    }
    /* The sandbox goes on every path out, before anything else can fail. */
    struct execbox_error derr = {0, ""};
    int dr = e2b_delete_sandbox(s, &w->sb, &derr);
    w->deleted = true;

    /* E2B reports no CPU or memory figure. */
    ret->cpu_ns = -2;
    ret->peak_memory = -2;
    struct eb_outcome *oc = &ret->oc;
    int code = 0;
    if (r < 0) {
        /* nothing ran */
    } else if (o.timed_out || o.cancelled) {
        oc->timed_out = o.timed_out;
        oc->cancelled = o.cancelled;
    } else if (st.flooded) {
        /* The stream was cut and the sandbox deleted with the code in it. */
        oc->flooded = true;
        oc->flood_at = st.flood_at;
        oc->flood_stopped = true;
    } else if (st.nomem) {
        r = eb_error_set(err, -ENOMEM, "out of memory");
    } else if (st.status != 200) {
        char msg[200];
        eb_http_message(&st.body, msg, sizeof(msg));
        r = eb_error_set(err, st.status == 502 ? -ENOENT : -EIO,
                         "E2B sandbox '%s': /execute answered HTTP %ld: %s%s", w->sb.id, st.status,
                         msg[0] ? msg : "no message",
                         st.status == 502 ? " (the sandbox is gone: not found or timed out)" : "");
    } else if (st.bad_line) {
        r = eb_error_set(err, -EPROTO,
                         "E2B sandbox '%s': the execute stream sent a line that is not a typed "
                         "JSON object (or longer than %u bytes)",
                         w->sb.id, E2B_LINE_MAX);
    } else if (st.unexpected) {
        r = eb_error_set(err, -EIO,
                         "E2B sandbox '%s': the code interpreter's kernel ended unexpectedly "
                         "(out of memory in the VM?)",
                         w->sb.id);
    } else if (o.cr != CURLE_OK || !st.ended) {
        r = eb_error_set(err, -EIO, "E2B sandbox '%s': the execute stream broke off: %s", w->sb.id,
                         o.cr != CURLE_OK ? curl_easy_strerror(o.cr)
                                          : "it ended without end_of_execution");
    } else if (!st.error || (r = apply_error(&st, &code, ret)) == 0) {
        /* The code ran to its end: its exit status (SystemExit's), 0 without an error. */
        oc->got_exit = true;
        oc->status = W_EXITCODE(code, 0);
    }
    if (r >= 0 && lr < 0) {
        r = lr;
        if (err)
            *err = lerr;
    }
    if (r >= 0 && dr < 0) {
        r = dr;
        if (err)
            *err = derr;
    }
    eb_capbuf_take_end(&st.buf[0], run->req->on_output, run->req->userdata, EXECBOX_STREAM_STDOUT);
    eb_capbuf_take_end(&st.buf[1], run->req->on_output, run->req->userdata, EXECBOX_STREAM_STDERR);
    res->stdout_truncated = eb_capbuf_truncated(&st.buf[0]);
    res->stderr_truncated = eb_capbuf_truncated(&st.buf[1]);
    res->stdout_bytes = st.buf[0].total;
    res->stderr_bytes = st.buf[1].total;
    if ((eb_capbuf_finish(&st.buf[0], &res->stdout_data, &res->stdout_len) < 0 ||
         eb_capbuf_finish(&st.buf[1], &res->stderr_data, &res->stderr_len) < 0) &&
        r >= 0)
        r = eb_error_set(err, -ENOMEM, "out of memory");
    eb_capbuf_free(&st.buf[0]);
    eb_capbuf_free(&st.buf[1]);
    free(st.line);
    free(st.body.data);
    json_decref(st.error);
    return r < 0 ? r : 0;
}

const struct eb_backend_ops eb_backend_e2b = {
    .name = "e2b",
    .probe = probe,
    .open = open_backend,
    .close = close_backend,
    .start = e2b_start,
    .deliver = e2b_deliver,
    .wait = e2b_wait,
    .destroy = e2b_destroy,
    /* E2B enforces the hosts of an allow-list itself (network.allowOut, the rest denied). */
    .network_allow = true,
};
