/* SPDX-License-Identifier: MIT */
/*
 * docker.c - the `docker` backend: one fresh container per run through the Docker Engine API
 * (HTTP over the engine's unix socket, or tcp://) with libcurl. Podman's compatible service
 * works as well. No Docker CLI, no shell, no host bind mount: the engine may be remote.
 *
 * A run, through the executor's lifecycle (lib/backends/backend.h): start() creates the container
 * (the policy as HostConfig; the program travels base64-encoded in the create's Env and a fixed
 * Python bootstrap, lib/lang/python_docker.py, in Cmd writes it to /tmp and execs the
 * interpreter on it); deliver() starts it, and the deadline counts from there; wait() follows
 * the logs until the container stops or the deadline passes, kills at the deadline, a cancel or
 * a flood, waits, reads the logs (demultiplexing the 8-byte frame headers into capped
 * stdout/stderr), inspects, removes the container and reports how the run ended: the
 * bootstrap's status line (exit, signal, CPU, max RSS, OOM, the files it listed), else the
 * engine's exit code; the executor makes the result of it. Once it was created, the container
 * is removed on every path: by wait(), else by destroy().
 *
 * Thread safety: the state is read-only after open(); each run uses its own CURL easy handle.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/curl_load.h"
#include "base/buf.h"
#include "base/cancel.h"
#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "model/lang.h"
#include "model/result.h"
#include "ws/workspace.h"

/* Limits of this backend (kept here rather than in limits.h: they only make sense for it). */
#define DK_DEFAULT_SOCKET "/var/run/docker.sock"
#define DK_DEFAULT_IMAGE "execbox-python:bookworm"
#define DK_API_MIN_MAJOR 1 /* oldest Engine API we speak: 1.30 (wait conditions, NanoCpus) */
#define DK_API_MIN_MINOR 30
#define DK_API_MAX "1.41"             /* the newest we need; we ask for no more */
#define DK_CONNECT_MS 3000L           /* connecting to the engine */
#define DK_CALL_MS 30000L             /* any single API call but pull and the run's logs */
#define DK_PING_MS 5000L              /* probe: /_ping, /version, /info */
#define DK_PULL_MS 600000L            /* pulling a missing image */
#define DK_KILL_WAIT_MS 10000L        /* after a kill, waiting for the container to stop */
#define DK_BODY_MAX (4U << 20)        /* largest JSON reply we accept */
#define DK_PAYLOAD_MAX (1U << 20)     /* program + stdin bytes: they travel in the Env */
#define DK_CHUNK_RAW (72U << 10)      /* raw bytes per Env variable (96 KiB in base64) */
#define DK_LOG_KILL_FACTOR 16         /* output past 16 x output_limit (per stream) ... */
#define DK_LOG_KILL_MIN (64ULL << 20) /* ... and past 64 MiB in all kills the container */
#define DK_GUEST_USER "65534:65534"   /* nobody:nogroup, no home, no privileges */
#define DK_STACK (8ULL << 20)         /* RLIMIT_STACK: the usual 8 MiB */
/* RLIMIT_NPROC counts every process of the uid on the host, across containers, so it cannot
 * be the pids wall (PidsLimit is); it is set explicitly only because an engine's default
 * (podman asks for 4194304) may be above what the host lets it set. */
#define DK_NPROC 16384
#define DK_RO_TMPFS "ro,nosuid,nodev,noexec,size=4k,mode=755"
#define DK_LABEL "org.execbox.run" /* every container we create carries this label */

/* The bootstrap, the container's pid 1 (python3 -I -S -c BOOT INTERPRETER ARGS...): a real
 * program, lib/lang/python_docker.py, embedded at build time (docker_boot.c). It writes the
 * program from the Env to /tmp, runs the guest, kills and reaps the rest, proves an OOM kill
 * from the memory cgroup's counter, lists /workspace and reports it all on stderr in lines
 * marked with the nonce (see the file). No shell anywhere. */
extern const char eb_docker_bootstrap[];

struct docker_state {
    char host[EXECBOX_PATH_MAX];   /* as given, for messages */
    char socket[EXECBOX_PATH_MAX]; /* unix socket path, "" for tcp */
    char root[512];                /* "http://localhost" (unix) or "http://host:port" */
    char base[512];                /* root + "/v1.41", once negotiated */
    char image[256];
    char runtime[64]; /* "" = the engine's default */
    int pull;
    char engine[128]; /* "podman 4.3.1 (API 1.41)" */
};

/* ---- HTTP over the engine socket ----------------------------------------------------------- */

static size_t discard_write(char *p, size_t size, size_t n, void *ud)
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
struct ping_headers {
    char api[16];    /* "1.41" */
    char server[64]; /* "Libpod/4.3.1 (linux)", "Docker/24.0.7 (linux)" */
};

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

static size_t ping_header(char *p, size_t size, size_t n, void *ud)
{
    struct ping_headers *h = ud;
    header_value(p, size * n, "Api-Version:", h->api, sizeof(h->api));
    header_value(p, size * n, "Server:", h->server, sizeof(h->server));
    return size * n;
}

struct call {
    const char *method; /* GET, POST, DELETE */
    const char *path;   /* below the API base, e.g. "/containers/create" */
    bool versioned;     /* prefix the negotiated /vX.Y */
    const char *json;   /* request body, or NULL */
    long timeout_ms;
    curl_write_callback writer; /* NULL: eb_http_body_write into *reply */
    void *writer_data;
    curl_xferinfo_callback progress; /* optional: non-zero return aborts */
    void *progress_data;
    struct ping_headers *headers; /* optional: Api-Version and Server are kept here */
};

/* Sets up h for one call (for curl_easy_perform or a multi handle). *ret_hdrs, freed by the
 * caller after the transfer, holds the request headers. 0 or -errno. */
static int prepare(CURL *h, const struct docker_state *s, const struct call *c,
                   struct eb_http_body *reply, struct curl_slist **ret_hdrs,
                   struct execbox_error *err)
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
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, ping_header);
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
static int finish(CURL *h, CURLcode cr, const struct docker_state *s, const struct call *c,
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
static int http(CURL *h, const struct docker_state *s, const struct call *c,
                struct eb_http_body *reply, long *status, struct execbox_error *err)
{
    struct curl_slist *hdrs = NULL;
    int r = prepare(h, s, c, reply, &hdrs, err);
    if (r < 0)
        return r;
    CURLcode cr = curl_easy_perform(h);
    curl_slist_free_all(hdrs);
    return finish(h, cr, s, c, reply, status, err);
}

/* A call whose reply is a bounded JSON body; 0 with *status, and *ret (may be NULL if the
 * body is not JSON). */
static int http_json(CURL *h, const struct docker_state *s, const struct call *c, long *status,
                     json_t **ret, char *msg, size_t msg_size, struct execbox_error *err)
{
    struct eb_http_body b = {.max = DK_BODY_MAX};
    int r = http(h, s, c, &b, status, err);
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

/* ---- options, negotiation, probe ----------------------------------------------------------- */

static bool valid_name(const char *s, const char *extra)
{
    if (!*s)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr(extra, *p)))
            return false;
    return true;
}

static int parse_options(const struct execbox_executor_options *o, struct docker_state *s,
                         struct execbox_error *err)
{
    memset(s, 0, sizeof(*s));
    const char *host = o->docker_host && *o->docker_host ? o->docker_host : NULL;
    if (!host)
        host = secure_getenv("DOCKER_HOST");
    if (!host || !*host)
        host = "unix://" DK_DEFAULT_SOCKET;
    snprintf(s->host, sizeof(s->host), "%s", host);
    if (strncmp(host, "unix://", 7) == 0) {
        if (host[7] != '/' || strlen(host + 7) >= sizeof(s->socket))
            return eb_error_set(err, -EINVAL, "docker host '%s': need unix:///absolute/path", host);
        snprintf(s->socket, sizeof(s->socket), "%s", host + 7);
        snprintf(s->root, sizeof(s->root), "http://localhost");
    } else if (strncmp(host, "tcp://", 6) == 0 || strncmp(host, "http://", 7) == 0) {
        /* A remote engine over plain HTTP (no TLS here): only on a network you trust. */
        const char *hp = host + (host[0] == 't' ? 6 : 7);
        if (!valid_name(hp, ".-:[]") || strlen(hp) > 256)
            return eb_error_set(err, -EINVAL, "docker host '%s': need tcp://HOST:PORT", host);
        snprintf(s->root, sizeof(s->root), "http://%s", hp);
    } else {
        return eb_error_set(err, -EINVAL,
                            "docker host '%s' is not supported (use unix:///path/to/socket or "
                            "tcp://host:port)",
                            host);
    }
    const char *image = o->docker_image && *o->docker_image ? o->docker_image : DK_DEFAULT_IMAGE;
    if (strlen(image) >= sizeof(s->image) || !valid_name(image, "._-/:@"))
        return eb_error_set(err, -EINVAL, "bad image name '%s'", image);
    snprintf(s->image, sizeof(s->image), "%s", image);
    if (o->docker_runtime && *o->docker_runtime) {
        if (strlen(o->docker_runtime) >= sizeof(s->runtime) ||
            !valid_name(o->docker_runtime, "._-"))
            return eb_error_set(err, -EINVAL, "bad runtime name '%s'", o->docker_runtime);
        snprintf(s->runtime, sizeof(s->runtime), "%s", o->docker_runtime);
    }
    s->pull = o->docker_pull;
    return 0;
}

/* Version negotiation as Docker's clients do it: the API version from /_ping's Api-Version
 * header (one cheap call), or from /version when an engine does not send it. Fills s->base
 * with the version both sides speak and s->engine. */
static int negotiate(CURL *h, struct docker_state *s, struct execbox_error *err)
{
    long st = 0;
    struct eb_http_body b = {.max = 4096};
    struct ping_headers ph = {"", ""};
    struct call c = {.method = "GET", .path = "/_ping", .timeout_ms = DK_PING_MS, .headers = &ph};
    int r = http(h, s, &c, &b, &st, err);
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
        r = http_json(h, s, &c, &st, &v, NULL, 0, err);
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
static int image_present(CURL *h, const struct docker_state *s, struct execbox_error *err)
{
    char path[400];
    snprintf(path, sizeof(path), "/images/%s/json", s->image);
    struct call c = {.method = "GET", .path = path, .versioned = true, .timeout_ms = DK_CALL_MS};
    long st = 0;
    json_t *j = NULL;
    char msg[200];
    int r = http_json(h, s, &c, &st, &j, msg, sizeof(msg), err);
    json_decref(j);
    if (r < 0)
        return r;
    if (st == 200)
        return 1;
    if (st == 404)
        return 0;
    return eb_error_set(err, -EIO, "inspecting image '%s': HTTP %ld: %s", s->image, st, msg);
}

static int pull_image(CURL *h, const struct docker_state *s, struct execbox_error *err)
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
                     .writer = discard_write,
                     .writer_data = &tail};
    long st = 0;
    int r = http(h, s, &c, &tail, &st, err);
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

static const char *tier_for(const char *runtime)
{
    if (strstr(runtime, "runsc") || strstr(runtime, "gvisor"))
        return "container under gVisor (user-space kernel), engine-managed";
    if (strstr(runtime, "kata"))
        return "container in a lightweight VM (Kata), engine-managed";
    return "container: namespaces + cgroups set up by the engine; shares the host kernel";
}

static int probe(const struct execbox_executor_options *o, struct execbox_check *c)
{
    struct docker_state s;
    struct execbox_error e = {0, ""};
    c->usable = false;
    if (parse_options(o, &s, &e) < 0) {
        eb_check_add(c, "engine", false, true, "%s", e.msg);
        return -ENOTSUP;
    }
    const char *why = NULL;
    if (!eb_curl_load(&why)) {
        eb_check_add(c, "engine", false, true, "%s", why);
        return -ENOTSUP;
    }
    if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK) {
        eb_check_add(c, "engine", false, true, "libcurl could not initialise");
        return -ENOTSUP;
    }
    CURL *h = curl_easy_init();
    int rc = -ENOTSUP;
    if (!h) {
        eb_check_add(c, "engine", false, true, "out of memory");
        goto out;
    }
    if (negotiate(h, &s, &e) < 0) {
        eb_check_add(c, "engine", false, true, "%s", e.msg);
        goto out;
    }
    eb_check_add(c, "engine", true, true, "%s at %s", s.engine, s.host);
    int img = image_present(h, &s, &e);
    if (img < 0)
        eb_check_add(c, "image", false, true, "%s", e.msg);
    else if (img)
        eb_check_add(c, "image", true, true, "'%s' present", s.image);
    else if (s.pull)
        eb_check_add(c, "image", true, true, "'%s' missing; pulled on first use (--pull missing)",
                     s.image);
    else
        eb_check_add(c, "image", false, true,
                     "image '%s' is missing (build or pull it, or use --pull missing)", s.image);

    /* What the engine says it can enforce (absent fields: it does not say; we still ask). */
    json_t *info = NULL;
    long st = 0;
    struct call ci = {
        .method = "GET", .path = "/info", .versioned = true, .timeout_ms = DK_PING_MS};
    if (http_json(h, &s, &ci, &st, &info, NULL, 0, &e) < 0 || st != 200) {
        json_decref(info);
        info = NULL;
    }
    const struct {
        const char *wall, *field, *how;
        bool required;
    } caps[] = {
        {"memory cap", "MemoryLimit", "HostConfig.Memory = policy memory (cgroup)", true},
        {"swap", "SwapLimit", "MemorySwap = Memory: no swap", false},
        {"pids cap", "PidsLimit", "HostConfig.PidsLimit = policy pids (cgroup)", true},
        {"cpu share", "CpuCfsQuota", "HostConfig.NanoCpus = policy cpus (CFS quota)", false},
    };
    for (size_t i = 0; i < ARRAY_SIZE(caps); i++) {
        json_t *f = json_object_get(info, caps[i].field);
        bool ok = !json_is_false(f);
        eb_check_add(c, caps[i].wall, ok, caps[i].required, "%s%s", caps[i].how,
                     !ok ? ": the engine reports it cannot"
                     : f ? ""
                         : " (engine does not say)");
    }
    if (s.runtime[0]) {
        json_t *rts = json_object_get(info, "Runtimes");
        bool listed = !rts || json_object_get(rts, s.runtime);
        eb_check_add(c, "runtime", listed, true, "%s%s", s.runtime,
                     !rts     ? " (the engine does not list its runtimes)"
                     : listed ? ": offered by the engine"
                              : ": not offered by the engine");
    } else {
        eb_check_add(c, "runtime", true, false, "the engine's default OCI runtime");
    }
    json_decref(info);
    eb_check_add(c, "network", true, true, "NetworkMode none: loopback only");
    eb_check_add(c, "read-only root", true, true, "ReadonlyRootfs; sized tmpfs /tmp, /workspace");
    eb_check_add(c, "capabilities", true, true, "CapDrop ALL; no-new-privileges");
    eb_check_add(c, "user", true, true, "runs as %s, not root", DK_GUEST_USER);
    eb_check_add(c, "ulimits", true, true, "nofile, fsize, stack, nproc and core 0 set explicitly");
    eb_check_add(c, "kernel", false, false, "%s",
                 s.runtime[0] && strcmp(tier_for(s.runtime), tier_for("")) != 0
                     ? "the runtime interposes its own kernel"
                     : "shared with the host (a container, not a VM)");
    snprintf(c->tier, sizeof(c->tier), "%s", tier_for(s.runtime));
    c->usable = true;
    for (size_t i = 0; i < c->n_walls; i++)
        if (!c->walls[i].ok && c->walls[i].required && strcmp(c->walls[i].name, "image") == 0)
            c->usable = false; /* nothing can run without the image */
    rc = c->usable ? 0 : -ENOTSUP;
out:
    curl_easy_cleanup(h);
    curl_global_cleanup();
    return rc;
}

static int open_backend(const struct execbox_executor_options *o,
                        const struct execbox_check *report, void **ret_state,
                        struct execbox_error *err)
{
    (void)report;
    /* libcurl's global init is reference-counted and thread-safe in the libcurl we build
     * against (CURL_VERSION_THREADSAFE, 7.84+); each executor takes one reference. */
    const char *why = NULL;
    if (!eb_curl_load(&why))
        return eb_error_set(err, -ENOTSUP, "%s", why);
    if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK)
        return eb_error_set(err, -ENOMEM, "libcurl could not initialise");
    struct docker_state *s = calloc(1, sizeof(*s));
    CURL *h = curl_easy_init();
    int r = -ENOMEM;
    if (!s || !h) {
        eb_error_set(err, -ENOMEM, "out of memory");
        goto fail;
    }
    r = parse_options(o, s, err);
    if (r < 0)
        goto fail;
    /* Version negotiation: once per executor. */
    r = negotiate(h, s, err);
    if (r < 0)
        goto fail;
    r = image_present(h, s, err);
    if (r == 0 && s->pull)
        r = pull_image(h, s, err);
    else if (r == 0)
        r = eb_error_set(err, -ENOENT,
                         "image '%s' is missing (build or pull it, or use --pull missing)",
                         s->image);
    if (r < 0)
        goto fail;
    curl_easy_cleanup(h);
    *ret_state = s;
    return 0;
fail:
    curl_easy_cleanup(h);
    free(s);
    curl_global_cleanup();
    return r;
}

static void close_backend(void *state)
{
    if (!state)
        return;
    free(state);
    curl_global_cleanup();
}

/* ---- one run -----------------------------------------------------------------------------------
 */

/* The bootstrap's status line, when it came. */
struct guest_status {
    bool have;
    int code, sig;
    bool oom;
    int64_t cpu_us, maxrss_kb;
};

#define DK_HOLD_MAX 4096 /* small stderr frames are held whole to find the status line */

/* Demultiplexes the engine's log stream: frames of [stream, 0, 0, 0, size (big-endian u32)]
 * followed by size bytes. */
struct logs {
    const struct execbox_request *req;
    struct eb_capbuf buf[2];
    unsigned char hdr[8];
    size_t hdr_len;
    uint32_t left;   /* payload bytes left in the current frame */
    int stream;      /* 0 stdout, 1 stderr */
    char marker[64]; /* "\x1e" "EXECBOX <nonce> " */
    char hold[DK_HOLD_MAX];
    size_t hold_len;
    bool holding; /* the current frame is a small stderr one, held until complete */
    struct guest_status status;
    struct execbox_file *files; /* as the bootstrap listed them, trusted once status came */
    size_t n_files;
    bool files_truncated;
    uint64_t kill_at; /* total bytes past which the container is killed */
    bool flooded;
    bool nomem;
    int cancel_fd;
    bool cancelled;
};

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

/* A complete held stderr frame: the bootstrap's marked lines are taken out, the rest is
 * output. A marked line is whole within a frame, or it is not ours. */
static int deliver_held(struct logs *l)
{
    const char *p = l->hold, *end = l->hold + l->hold_len;
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

static size_t logs_write(char *p, size_t size, size_t n, void *ud)
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
            l->holding = l->stream == 1 && l->left <= DK_HOLD_MAX;
            l->hold_len = 0;
            continue;
        }
        size_t take = len - i < l->left ? len - i : l->left;
        int r = 0;
        if (l->holding) {
            memcpy(l->hold + l->hold_len, p + i, take);
            l->hold_len += take;
            if (take == l->left)
                r = deliver_held(l);
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

static int add_env(json_t *env, const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;
    char *kv = malloc(n);
    if (!kv)
        return -ENOMEM;
    snprintf(kv, n, "%s=%s", name, value);
    int r = json_array_append_new(env, json_string(kv));
    free(kv);
    return r < 0 ? -ENOMEM : 0;
}

/* data as base64 in Env variables PREFIX_0.. PREFIX_{N-1} and PREFIX_N=N. */
static int add_chunks(json_t *env, const char *prefix, const char *data, size_t len)
{
    size_t n = 0;
    char name[64];
    for (size_t off = 0; off < len; off += DK_CHUNK_RAW, n++) {
        size_t take = len - off < DK_CHUNK_RAW ? len - off : DK_CHUNK_RAW;
        _cleanup_free_ char *b64 = execbox_base64((const unsigned char *)data + off, take);
        if (!b64)
            return -ENOMEM;
        snprintf(name, sizeof(name), "%s_%zu", prefix, n);
        if (add_env(env, name, b64) < 0)
            return -ENOMEM;
    }
    char count[32];
    snprintf(name, sizeof(name), "%s_N", prefix);
    snprintf(count, sizeof(count), "%zu", n);
    return add_env(env, name, count);
}

static json_t *ulimit(const char *name, uint64_t v)
{
    return json_pack("{s:s, s:I, s:I}", "Name", name, "Soft", (json_int_t)v, "Hard", (json_int_t)v);
}

/* The create body: the policy as HostConfig, every wall every time. */
static int create_body(const struct docker_state *s, const struct eb_run *run, const char *nonce,
                       char **ret, struct execbox_error *err)
{
    const struct execbox_policy *p = run->policy;
    struct eb_env env;
    if (eb_env_build(&env, "/workspace", "/tmp", p->cpus) < 0)
        return eb_error_set(err, -E2BIG, "environment too large");
    json_t *jenv = json_array();
    json_t *cmd = json_array();
    json_t *hc = NULL, *body = NULL;
    int r = -ENOMEM;
    if (!jenv || !cmd)
        goto fail;
    for (size_t i = 0; env.envp[i]; i++)
        if (json_array_append_new(jenv, json_string(env.envp[i])) < 0)
            goto fail;
    if (add_env(jenv, "EXECBOX_FILE", run->lang->filename) < 0 ||
        add_env(jenv, "EXECBOX_NONCE", nonce) < 0 ||
        add_chunks(jenv, "EXECBOX_CODE", run->code, run->code_len) < 0)
        goto fail;
    if (run->req->stdin_data &&
        add_chunks(jenv, "EXECBOX_STDIN", run->req->stdin_data, run->req->stdin_len) < 0)
        goto fail;
    /* Cmd: the bootstrap, then the interpreter's argv (the program path is appended). */
    const char *pre[] = {"-I", "-S", "-c", eb_docker_bootstrap, run->lang->interpreter};
    for (size_t i = 0; i < ARRAY_SIZE(pre); i++)
        if (json_array_append_new(cmd, json_string(pre[i])) < 0)
            goto fail;
    for (size_t i = 0; run->lang->args[i]; i++)
        if (json_array_append_new(cmd, json_string(run->lang->args[i])) < 0)
            goto fail;

    char tmp_opts[128], ws_opts[128];
    /* Sized tmpfs mounts: the only writable places; nosuid/nodev like any untrusted mount. */
    snprintf(tmp_opts, sizeof(tmp_opts), "rw,nosuid,nodev,size=%" PRIu64 ",mode=1777", p->tmpfs);
    snprintf(ws_opts, sizeof(ws_opts), "rw,nosuid,nodev,size=%" PRIu64 ",mode=1777",
             p->workspace_size);
    hc = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:b, s:{s:s, s:s, s:s, s:s}, s:I, s:s, s:[s], s:[s], "
        "s:[o,o,o,o,o], s:b, s:b}",
        "NetworkMode", "none",
        /* Memory with MemorySwap equal: RAM only, no swap. */
        "Memory", (json_int_t)p->memory, "MemorySwap", (json_int_t)p->memory, "NanoCpus",
        (json_int_t)llround(p->cpus * 1e9), "PidsLimit", (json_int_t)p->pids, "ReadonlyRootfs", 1,
        "Tmpfs", "/tmp", tmp_opts, "/workspace", ws_opts,
        /* podman mounts unsized writable tmpfs on /run and /var/tmp under a read-only root;
         * empty read-only ones in their place keep "everything else is read-only" true. */
        "/run", DK_RO_TMPFS, "/var/tmp", DK_RO_TMPFS,
        /* /dev/shm (POSIX semaphores, shared memory) sized like /tmp, private to the run */
        "ShmSize", (json_int_t)p->tmpfs, "IpcMode", "private",
        /* No capabilities at all, and no way to regain any through setuid binaries. */
        "CapDrop", "ALL", "SecurityOpt", "no-new-privileges",
        /* Explicit ulimits: some engines' defaults cannot be applied, and no core dumps. */
        "Ulimits", ulimit("nofile", 1024), ulimit("fsize", p->file_size), ulimit("core", 0),
        ulimit("stack", DK_STACK), ulimit("nproc", DK_NPROC), "AutoRemove", 0, "Privileged", 0);
    if (!hc)
        goto fail;
    if (s->runtime[0] && json_object_set_new(hc, "Runtime", json_string(s->runtime)) < 0)
        goto fail;
    body = json_pack("{s:s, s:[s], s:o, s:o, s:s, s:s, s:b, s:b, s:b, s:b, s:{s:s}, s:o}", "Image",
                     s->image, "Entrypoint", "/usr/bin/python3", "Cmd", TAKE_PTR(cmd), "Env",
                     TAKE_PTR(jenv), "WorkingDir", "/workspace", "User", DK_GUEST_USER,
                     "NetworkDisabled", 1, "Tty", 0, "OpenStdin", 0, "AttachStdin", 0, "Labels",
                     DK_LABEL, "1", "HostConfig", TAKE_PTR(hc));
    if (!body)
        goto fail;
    *ret = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return *ret ? 0 : eb_error_set(err, -ENOMEM, "out of memory");
fail:
    json_decref(jenv);
    json_decref(cmd);
    json_decref(hc);
    json_decref(body);
    return eb_error_set(err, r, "out of memory building the container request");
}

struct container {
    CURL *h;
    const struct docker_state *s;
    char id[80];
};

/* A call on /containers/ID + suffix with a bounded JSON reply. */
static int api(struct container *k, const char *method, const char *suffix, long timeout_ms,
               long *status, char *msg, size_t msg_size, json_t **ret, struct execbox_error *err)
{
    char path[256];
    snprintf(path, sizeof(path), "/containers/%s%s", k->id, suffix);
    struct call c = {.method = method, .path = path, .versioned = true, .timeout_ms = timeout_ms};
    json_t *j = NULL;
    int r = http_json(k->h, k->s, &c, status, &j, msg, msg_size, err);
    if (ret)
        *ret = j;
    else
        json_decref(j);
    return r;
}

/* Kills and removes the container (force also kills a running one). Tries twice. */
/* The runtime the engine really gave the container. Docker reports HostConfig.Runtime; podman
 * reports OCIRuntime in its own API (its compat inspect says "oci"), and podman's Docker API
 * (4.x) ignores HostConfig.Runtime and uses its default runtime: a container asked to run
 * under gVisor must never silently run under runc. */
static int check_runtime(struct container *k, struct execbox_error *err)
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
        r = http_json(k->h, k->s, &c, &st, &j, msg, sizeof(msg), err);
    } else {
        r = api(k, "GET", "/json", DK_CALL_MS, &st, msg, sizeof(msg), &j, err);
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

static int remove_container(struct container *k, struct execbox_error *err)
{
    long st = 0;
    char msg[200] = "";
    struct execbox_error e = {0, ""};
    for (int i = 0; i < 2; i++) {
        int r = api(k, "DELETE", "?force=1&v=1", DK_CALL_MS, &st, msg, sizeof(msg), NULL, &e);
        if (r == 0 && (st == 204 || st == 200 || st == 404))
            return 0;
    }
    return eb_error_set(err, -EIO, "container %.12s could not be removed: %s", k->id,
                        e.msg[0] ? e.msg : msg);
}

/* Counts the bytes of the followed log stream; past kill_at the transfer is aborted. */
struct flood_guard {
    uint64_t bytes, kill_at;
    bool flooded;
};

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
static int watch(struct container *k, uint64_t deadline, int cancel_fd, struct flood_guard *guard,
                 bool *ret_timed_out, bool *ret_cancelled, bool *ret_done,
                 struct execbox_error *err)
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
    r = prepare(k->h, s, &wc, &wb, &whdrs, err);
    if (r >= 0)
        r = prepare(hl, s, &lc, NULL, &lhdrs, err);
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
                r = finish(k->h, msg->data.result, s, &wc, &wb, &st, err);
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

/* A run's container (the backend's eb_box): created by start() with the run in its Env,
 * started by deliver(), watched, read and inspected by wait(), removed by wait() once all of it
 * was read (so that a failed removal is the run's error) or else by destroy(). */
struct eb_box {
    struct container k;
    char marker[64]; /* "\x1e" "EXECBOX <nonce> ": the bootstrap's report lines */
    uint64_t t0;     /* the container started: the deadline counts from here (create is the
                        engine's setup, bounded apart) */
    bool removed;
};

static void dk_destroy(void *state, struct eb_box *w)
{
    (void)state;
    if (!w)
        return;
    if (w->k.id[0] && !w->removed)
        remove_container(&w->k, NULL);
    if (w->k.h)
        curl_easy_cleanup(w->k.h);
    free(w);
}

/* Cold only: the container created around its run (the policy as HostConfig, the program and
 * stdin in the Env, the bootstrap as Cmd), not started. */
static int dk_start(void *state, const struct eb_start *st, struct eb_box **ret,
                    struct execbox_error *err)
{
    const struct docker_state *s = state;
    const struct eb_run *run = st->run; /* cold only: not .warm */
    const struct execbox_policy *p = run->policy;
    if (p->workspace[0])
        return eb_error_set(err, -ENOTSUP,
                            "the docker backend does not mount host directories (the engine "
                            "may be remote): run without --workspace");
    if (p->rootfs[0])
        return eb_error_set(err, -ENOTSUP,
                            "the docker backend runs an image, not a root directory: use "
                            "--image instead of --rootfs");
    size_t payload = run->code_len + (run->req->stdin_data ? run->req->stdin_len : 0);
    if (payload > DK_PAYLOAD_MAX)
        return eb_error_set(err, -E2BIG,
                            "program and stdin are %zu bytes; the docker backend carries at "
                            "most %u in the container's environment",
                            payload, DK_PAYLOAD_MAX);
    struct eb_box *w = calloc(1, sizeof(*w));
    if (!w)
        return eb_error_set(err, -ENOMEM, "out of memory");
    w->k.s = s;
    _cleanup_free_ char *body = NULL;
    json_t *j = NULL;
    char msg[256] = "";
    long stc = 0;
    int r = 0;
    /* A fresh random name, and a nonce only the bootstrap learns (it marks its status line). */
    unsigned char rnd[24];
    if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
        r = eb_error_set(err, -errno, "getrandom: %s", execbox_strerror(-errno));
        goto fail;
    }
    char name[17], nonce[33];
    for (int i = 0; i < 8; i++)
        snprintf(name + 2 * i, 3, "%02x", rnd[i]);
    for (int i = 0; i < 16; i++)
        snprintf(nonce + 2 * i, 3, "%02x", rnd[8 + i]);
    snprintf(w->marker, sizeof(w->marker),
             "\x1e"
             "EXECBOX %s ",
             nonce);
    r = create_body(s, run, nonce, &body, err);
    if (r < 0)
        goto fail;
    w->k.h = curl_easy_init();
    if (!w->k.h) {
        r = eb_error_set(err, -ENOMEM, "out of memory");
        goto fail;
    }
    char path[128];
    snprintf(path, sizeof(path), "/containers/create?name=execbox-%s", name);
    struct call cc = {
        .method = "POST", .path = path, .versioned = true, .json = body, .timeout_ms = DK_CALL_MS};
    r = http_json(w->k.h, s, &cc, &stc, &j, msg, sizeof(msg), err);
    if (r < 0)
        goto fail;
    const char *id = json_string_value(json_object_get(j, "Id"));
    if (stc != 201 || !id || !valid_name(id, "")) {
        r = stc == 404 ? eb_error_set(err, -ENOENT, "image '%s' is missing: %s", s->image, msg)
                       : eb_error_set(err, -EIO, "creating the container: HTTP %ld: %s", stc, msg);
        goto fail;
    }
    snprintf(w->k.id, sizeof(w->k.id), "%s", id);
    json_decref(j);
    j = NULL;
    if (s->runtime[0] && (r = check_runtime(&w->k, err)) < 0)
        goto fail;
    *ret = w;
    return 0;
fail:
    json_decref(j);
    dk_destroy(state, w);
    return r;
}

/* Starts the container: the program is in it already. */
static int dk_deliver(void *state, struct eb_box *w, const struct eb_run *run,
                      struct execbox_error *err)
{
    (void)state, (void)run;
    long st = 0;
    char msg[256] = "";
    int r = api(&w->k, "POST", "/start", DK_CALL_MS, &st, msg, sizeof(msg), NULL, err);
    if (r < 0)
        return r;
    if (st != 204 && st != 304)
        return eb_error_set(err, -EIO, "starting the container: HTTP %ld: %s", st, msg);
    w->t0 = eb_now_ns();
    return 0;
}

/* Until the container stops: POST wait (it returns when the container is not running) and,
 * beside it on one multi handle, the followed log stream, which only counts bytes: the engine
 * stores every byte on its disk, so a flood is stopped, not drained. The output itself is read
 * once the container stopped (podman's followed logs lag by ~0.5 s). Then the inspect, and the
 * end as the bootstrap's status line tells it (or, without one, as the engine does). */
static int dk_wait(void *state, struct eb_box *w, const struct eb_run *run,
                   struct execbox_result *res, struct eb_wait *ret, struct execbox_error *err)
{
    const struct docker_state *s = state;
    const struct execbox_policy *p = run->policy;
    struct container *k = &w->k;
    struct logs lg = {.req = run->req, .cancel_fd = eb_cancel_fd(run->req->cancel)};
    snprintf(lg.marker, sizeof(lg.marker), "%s", w->marker);
    eb_capbuf_init(&lg.buf[0], p->output_limit);
    eb_capbuf_init(&lg.buf[1], p->output_limit);
    uint64_t per = p->output_limit * DK_LOG_KILL_FACTOR * 2;
    lg.kill_at = per > DK_LOG_KILL_MIN ? per : DK_LOG_KILL_MIN;
    json_t *j = NULL;
    char msg[256] = "", path[128];
    long st = 0;
    uint64_t deadline = w->t0 + (uint64_t)(p->timeout * 1e9);
    struct flood_guard guard = {.kill_at = lg.kill_at};
    bool timed_out = false, wait_done = false;
    int r = watch(k, deadline, lg.cancel_fd, &guard, &timed_out, &lg.cancelled, &wait_done, err);
    if (r < 0)
        goto out;
    lg.flooded = guard.flooded;
    uint64_t t1 = eb_now_ns();
    struct execbox_error lerr = {0, ""};
    if (!wait_done) {
        /* deadline, cancel or flood: SIGKILL to the whole container, then wait for it */
        api(k, "POST", "/kill?signal=KILL", DK_CALL_MS, &st, NULL, 0, NULL, &lerr);
        r = api(k, "POST", "/wait?condition=not-running", DK_KILL_WAIT_MS, &st, msg, sizeof(msg),
                NULL, err);
        if (r < 0)
            goto out;
    }
    /* The output, demultiplexed into the capped buffers (reading stops at 4x the flood limit:
     * the guard lags behind a fast writer). */
    lg.kill_at = guard.kill_at * 4;
    bool was_flooded = lg.flooded;
    lg.flooded = false;
    snprintf(path, sizeof(path), "/containers/%s/logs?stdout=1&stderr=1", k->id);
    struct call lc = {.method = "GET",
                      .path = path,
                      .versioned = true,
                      .timeout_ms = DK_CALL_MS,
                      .writer = logs_write,
                      .writer_data = &lg};
    int lr = http(k->h, s, &lc, NULL, &st, &lerr);
    if (lg.nomem) {
        r = eb_error_set(err, -ENOMEM, "out of memory buffering output");
        goto out;
    }
    if (lr < 0 && !lg.flooded) {
        r = eb_error_prefix(&lerr, lr, "reading the container's output");
        if (err)
            *err = lerr;
        goto out;
    }
    lg.kill_at = guard.kill_at;
    lg.flooded = was_flooded;
    r = api(k, "GET", "/json", DK_CALL_MS, &st, msg, sizeof(msg), &j, err);
    if (r < 0)
        goto out;
    json_t *state_obj = json_object_get(j, "State");
    json_t *code = json_object_get(state_obj, "ExitCode");
    if (st != 200 || !json_is_integer(code)) {
        r = eb_error_set(err, -EIO, "inspecting the container: HTTP %ld: %s", st, msg);
        goto out;
    }
    const char *serr = json_string_value(json_object_get(state_obj, "Error"));
    bool running = json_is_true(json_object_get(state_obj, "Running"));
    if (running) {
        r = eb_error_set(err, -EIO, "the container is still running after its kill");
        goto out;
    }
    int exit_code = (int)json_integer_value(code);
    bool engine_oom = json_is_true(json_object_get(state_obj, "OOMKilled"));
    res->execution_time = (double)(t1 - w->t0) / 1e9;

    /* No CPU or memory figure but the bootstrap's. */
    ret->cpu_ns = -2;
    ret->peak_memory = -2;
    struct eb_outcome *oc = &ret->oc;
    if (lg.cancelled) {
        oc->cancelled = true;
    } else if (timed_out) {
        oc->timed_out = true;
    } else if (lg.flooded) {
        oc->flooded = true;
        oc->flood_at = lg.kill_at;
    } else if (!lg.status.have && exit_code == 127 && serr && *serr) {
        r = eb_error_set(err, -EIO, "the engine could not run the container: %s", serr);
        goto out;
    } else if (lg.status.have) {
        /* The bootstrap saw the guest end: its exact status, its tree's CPU and largest RSS,
         * and an OOM kill proven by the memory cgroup's oom_kill counter going up while the
         * guest died of SIGKILL. */
        oc->got_exit = true;
        oc->status = lg.status.sig > 0 && lg.status.sig < 0x7f
                         ? lg.status.sig
                         : W_EXITCODE(lg.status.code & 0xff, 0);
        oc->utime_us = lg.status.cpu_us;
        oc->maxrss_kb = lg.status.maxrss_kb;
        ret->cpu_ns = -1;
        ret->peak_memory = -1;
        ret->oom_kills = lg.status.oom ? 1 : 0;
        /* The files in /workspace, as the bootstrap listed them after every process died. */
        res->files = TAKE_PTR(lg.files);
        res->n_files = lg.n_files;
        res->files_truncated = lg.files_truncated;
        lg.n_files = 0;
        ret->files_listed = true;
    } else {
        /* No status line (the bootstrap itself died): only the engine's word. Engines report
         * death by signal N as 128+N; an OOM kill is claimed only when that is a SIGKILL we did
         * not send AND the engine recorded the OOM kill (State.OOMKilled alone is not trusted,
         * see docs/backends.md). */
        oc->got_exit = true;
        oc->status = exit_code > 128 && exit_code < 128 + 65 ? exit_code - 128
                                                             : W_EXITCODE(exit_code & 0xff, 0);
        ret->oom_kills = engine_oom ? 1 : 0;
    }
out:
    /* Everything of the run was read: the container goes now, and a failed removal (after two
     * tries) is the run's error (destroy() removes it on the paths that do not come here). */
    if (k->id[0]) {
        struct execbox_error rerr = {0, ""};
        if (remove_container(k, &rerr) < 0 && r >= 0) {
            r = rerr.code;
            if (err)
                *err = rerr;
        }
        w->removed = true;
    }
    eb_capbuf_take_end(&lg.buf[0], run->req->on_output, run->req->userdata, EXECBOX_STREAM_STDOUT);
    eb_capbuf_take_end(&lg.buf[1], run->req->on_output, run->req->userdata, EXECBOX_STREAM_STDERR);
    res->stdout_truncated = eb_capbuf_truncated(&lg.buf[0]);
    res->stderr_truncated = eb_capbuf_truncated(&lg.buf[1]);
    res->stdout_bytes = lg.buf[0].total;
    res->stderr_bytes = lg.buf[1].total;
    if (!res->stdout_data && !res->stderr_data &&
        (eb_capbuf_finish(&lg.buf[0], &res->stdout_data, &res->stdout_len) < 0 ||
         eb_capbuf_finish(&lg.buf[1], &res->stderr_data, &res->stderr_len) < 0) &&
        r >= 0)
        r = eb_error_set(err, -ENOMEM, "out of memory");
    eb_capbuf_free(&lg.buf[0]);
    eb_capbuf_free(&lg.buf[1]);
    for (size_t i = 0; i < lg.n_files; i++) {
        free(lg.files[i].path);
        free(lg.files[i].mime);
    }
    free(lg.files);
    json_decref(j);
    return r < 0 ? r : 0;
}

const struct eb_backend_ops eb_backend_docker = {
    .name = "docker",
    .probe = probe,
    .open = open_backend,
    .close = close_backend,
    .start = dk_start,
    .deliver = dk_deliver,
    .wait = dk_wait,
    .destroy = dk_destroy,
};
