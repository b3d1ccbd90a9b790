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
 * This file holds the backend's table: the options, the probe, the create request and the
 * run's steps. The Engine API client is docker_api.c, the log demultiplexer docker_logs.c,
 * both behind the private docker.h.
 *
 * Thread safety: the state is read-only after open(); each run uses its own CURL easy handle.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/curl_load.h"
#include "backends/docker.h"
#include "base/buf.h"
#include "base/cancel.h"
#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "model/lang.h"
#include "model/result.h"
#include "ws/workspace.h"

/* The bootstrap, the container's pid 1 (python3 -I -S -c BOOT INTERPRETER ARGS...): a real
 * program, lib/lang/python_docker.py, embedded at build time (docker_boot.c). It writes the
 * program from the Env to /tmp, runs the guest, kills and reaps the rest, proves an OOM kill
 * from the memory cgroup's counter, lists /workspace and reports it all on stderr in lines
 * marked with the nonce (see the file). No shell anywhere. */
extern const char eb_docker_bootstrap[];

/* ---- options, probe ------------------------------------------------------------------------ */

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
    if (dk_negotiate(h, &s, &e) < 0) {
        eb_check_add(c, "engine", false, true, "%s", e.msg);
        goto out;
    }
    eb_check_add(c, "engine", true, true, "%s at %s", s.engine, s.host);
    int img = dk_image_present(h, &s, &e);
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
    if (dk_http_json(h, &s, &ci, &st, &info, NULL, 0, &e) < 0 || st != 200) {
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
    r = dk_negotiate(h, s, err);
    if (r < 0)
        goto fail;
    r = dk_image_present(h, s, err);
    if (r == 0 && s->pull)
        r = dk_pull_image(h, s, err);
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

/* ---- the create request ------------------------------------------------------------------- */

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

/* ---- one run ------------------------------------------------------------------------------- */

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
        dk_remove_container(&w->k, NULL);
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
    r = dk_http_json(w->k.h, s, &cc, &stc, &j, msg, sizeof(msg), err);
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
    if (s->runtime[0] && (r = dk_check_runtime(&w->k, err)) < 0)
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
    int r = dk_api(&w->k, "POST", "/start", DK_CALL_MS, &st, msg, sizeof(msg), NULL, err);
    if (r < 0)
        return r;
    if (st != 204 && st != 304)
        return eb_error_set(err, -EIO, "starting the container: HTTP %ld: %s", st, msg);
    w->t0 = eb_now_ns();
    return 0;
}

/* The first step of wait(): until the container stops. dk_watch follows it (the deadline, a
 * cancel, a flood); a container that did not stop by itself gets SIGKILL, the whole of it, and
 * is waited for. *ret_t1 is when the watch ended (the run's end). 0 or -errno. */
static int stop_container(struct container *k, uint64_t deadline, struct logs *lg,
                          struct flood_guard *guard, bool *ret_timed_out, uint64_t *ret_t1,
                          struct execbox_error *err)
{
    bool wait_done = false;
    int r =
        dk_watch(k, deadline, lg->cancel_fd, guard, ret_timed_out, &lg->cancelled, &wait_done, err);
    if (r < 0)
        return r;
    lg->flooded = guard->flooded;
    *ret_t1 = eb_now_ns();
    if (wait_done)
        return 0;
    long st = 0;
    char msg[256] = "";
    struct execbox_error kerr = {0, ""};
    dk_api(k, "POST", "/kill?signal=KILL", DK_CALL_MS, &st, NULL, 0, NULL, &kerr);
    return dk_api(k, "POST", "/wait?condition=not-running", DK_KILL_WAIT_MS, &st, msg, sizeof(msg),
                  NULL, err);
}

/* The stopped container's output, demultiplexed into lg's capped buffers. Reading stops at 4x
 * the flood limit (the guard lags behind a fast writer); lg->kill_at and lg->flooded are as the
 * watch left them afterwards. 0 or -errno. */
static int read_output(struct container *k, struct logs *lg, struct execbox_error *err)
{
    uint64_t kill_at = lg->kill_at;
    bool was_flooded = lg->flooded;
    lg->kill_at = kill_at * 4;
    lg->flooded = false;
    char path[128];
    snprintf(path, sizeof(path), "/containers/%s/logs?stdout=1&stderr=1", k->id);
    struct call lc = {.method = "GET",
                      .path = path,
                      .versioned = true,
                      .timeout_ms = DK_CALL_MS,
                      .writer = dk_logs_write,
                      .writer_data = lg};
    long st = 0;
    struct execbox_error lerr = {0, ""};
    int lr = dk_http(k->h, k->s, &lc, NULL, &st, &lerr);
    if (lg->nomem)
        return eb_error_set(err, -ENOMEM, "out of memory buffering output");
    if (lr < 0 && !lg->flooded) {
        int r = eb_error_prefix(&lerr, lr, "reading the container's output");
        if (err)
            *err = lerr;
        return r;
    }
    lg->kill_at = kill_at;
    lg->flooded = was_flooded;
    return 0;
}

/* What the engine's inspect tells of the stopped container. */
struct inspected {
    json_t *j; /* the reply, owning error */
    int exit_code;
    bool oom_killed;   /* State.OOMKilled */
    const char *error; /* State.Error, or NULL */
};

/* Inspects the stopped container into *ins (ins->j to be freed by the caller). 0 or -errno,
 * also when the container still runs. */
static int inspect(struct container *k, struct inspected *ins, struct execbox_error *err)
{
    long st = 0;
    char msg[256] = "";
    int r = dk_api(k, "GET", "/json", DK_CALL_MS, &st, msg, sizeof(msg), &ins->j, err);
    if (r < 0)
        return r;
    json_t *state_obj = json_object_get(ins->j, "State");
    json_t *code = json_object_get(state_obj, "ExitCode");
    if (st != 200 || !json_is_integer(code))
        return eb_error_set(err, -EIO, "inspecting the container: HTTP %ld: %s", st, msg);
    ins->error = json_string_value(json_object_get(state_obj, "Error"));
    if (json_is_true(json_object_get(state_obj, "Running")))
        return eb_error_set(err, -EIO, "the container is still running after its kill");
    ins->exit_code = (int)json_integer_value(code);
    ins->oom_killed = json_is_true(json_object_get(state_obj, "OOMKilled"));
    return 0;
}

/* How the run ended, into ret->oc and its counters (and res's files): a cancel, the deadline, a
 * flood, else the bootstrap's status line, else the engine's word. 0, or -EIO when the engine
 * could not run the container at all. */
static int map_end(struct logs *lg, const struct inspected *ins, bool timed_out,
                   struct execbox_result *res, struct eb_wait *ret, struct execbox_error *err)
{
    /* No CPU or memory figure but the bootstrap's. */
    ret->cpu_ns = -2;
    ret->peak_memory = -2;
    struct eb_outcome *oc = &ret->oc;
    if (lg->cancelled) {
        oc->cancelled = true;
    } else if (timed_out) {
        oc->timed_out = true;
    } else if (lg->flooded) {
        oc->flooded = true;
        oc->flood_at = lg->kill_at;
    } else if (!lg->status.have && ins->exit_code == 127 && ins->error && *ins->error) {
        return eb_error_set(err, -EIO, "the engine could not run the container: %s", ins->error);
    } else if (lg->status.have) {
        /* The bootstrap saw the guest end: its exact status, its tree's CPU and largest RSS,
         * and an OOM kill proven by the memory cgroup's oom_kill counter going up while the
         * guest died of SIGKILL. */
        oc->got_exit = true;
        oc->status = lg->status.sig > 0 && lg->status.sig < 0x7f
                         ? lg->status.sig
                         : W_EXITCODE(lg->status.code & 0xff, 0);
        oc->utime_us = lg->status.cpu_us;
        oc->maxrss_kb = lg->status.maxrss_kb;
        ret->cpu_ns = -1;
        ret->peak_memory = -1;
        ret->oom_kills = lg->status.oom ? 1 : 0;
        /* The files in /workspace, as the bootstrap listed them after every process died. */
        res->files = TAKE_PTR(lg->files);
        res->n_files = lg->n_files;
        res->files_truncated = lg->files_truncated;
        lg->n_files = 0;
        ret->files_listed = true;
    } else {
        /* No status line (the bootstrap itself died): only the engine's word. Engines report
         * death by signal N as 128+N; an OOM kill is claimed only when that is a SIGKILL we did
         * not send AND the engine recorded the OOM kill (State.OOMKilled alone is not trusted,
         * see docs/backends.md). */
        int code = ins->exit_code;
        oc->got_exit = true;
        oc->status = code > 128 && code < 128 + 65 ? code - 128 : W_EXITCODE(code & 0xff, 0);
        ret->oom_kills = ins->oom_killed ? 1 : 0;
    }
    return 0;
}

/* The last step of wait(), on every path: everything of the run was read, so the container
 * goes now, and a failed removal (after two tries) is the run's error (destroy() removes it on
 * the paths that do not come here); the output goes into res, lg is freed. r is the run's
 * status so far; returns the final one. */
static int end_run(struct eb_box *w, const struct eb_run *run, struct logs *lg, int r,
                   struct execbox_result *res, struct execbox_error *err)
{
    struct container *k = &w->k;
    if (k->id[0]) {
        struct execbox_error rerr = {0, ""};
        if (dk_remove_container(k, &rerr) < 0 && r >= 0) {
            r = rerr.code;
            if (err)
                *err = rerr;
        }
        w->removed = true;
    }
    const struct execbox_request *req = run->req;
    eb_capbuf_take_end(&lg->buf[0], req->on_output, req->userdata, EXECBOX_STREAM_STDOUT);
    eb_capbuf_take_end(&lg->buf[1], req->on_output, req->userdata, EXECBOX_STREAM_STDERR);
    res->stdout_truncated = eb_capbuf_truncated(&lg->buf[0]);
    res->stderr_truncated = eb_capbuf_truncated(&lg->buf[1]);
    res->stdout_bytes = lg->buf[0].total;
    res->stderr_bytes = lg->buf[1].total;
    if (!res->stdout_data && !res->stderr_data &&
        (eb_capbuf_finish(&lg->buf[0], &res->stdout_data, &res->stdout_len) < 0 ||
         eb_capbuf_finish(&lg->buf[1], &res->stderr_data, &res->stderr_len) < 0) &&
        r >= 0)
        r = eb_error_set(err, -ENOMEM, "out of memory");
    eb_capbuf_free(&lg->buf[0]);
    eb_capbuf_free(&lg->buf[1]);
    for (size_t i = 0; i < lg->n_files; i++) {
        free(lg->files[i].path);
        free(lg->files[i].mime);
    }
    free(lg->files);
    return r < 0 ? r : 0;
}

/* Until the container stops: POST wait (it returns when the container is not running) and,
 * beside it on one multi handle, the followed log stream, which only counts bytes: the engine
 * stores every byte on its disk, so a flood is stopped, not drained. The output itself is read
 * once the container stopped (podman's followed logs lag by ~0.5 s). Then the inspect, and the
 * end as the bootstrap's status line tells it (or, without one, as the engine does). */
static int dk_wait(void *state, struct eb_box *w, const struct eb_run *run,
                   struct execbox_result *res, struct eb_wait *ret, struct execbox_error *err)
{
    (void)state;
    const struct execbox_policy *p = run->policy;
    struct container *k = &w->k;
    struct logs lg = {.req = run->req, .cancel_fd = eb_cancel_fd(run->req->cancel)};
    snprintf(lg.marker, sizeof(lg.marker), "%s", w->marker);
    eb_capbuf_init(&lg.buf[0], p->output_limit);
    eb_capbuf_init(&lg.buf[1], p->output_limit);
    uint64_t per = p->output_limit * DK_LOG_KILL_FACTOR * 2;
    lg.kill_at = per > DK_LOG_KILL_MIN ? per : DK_LOG_KILL_MIN;
    uint64_t deadline = w->t0 + (uint64_t)(p->timeout * 1e9), t1 = 0;
    struct flood_guard guard = {.kill_at = lg.kill_at};
    struct inspected ins = {0};
    bool timed_out = false;
    int r = stop_container(k, deadline, &lg, &guard, &timed_out, &t1, err);
    if (r >= 0)
        r = read_output(k, &lg, err);
    if (r >= 0)
        r = inspect(k, &ins, err);
    if (r >= 0) {
        res->execution_time = (double)(t1 - w->t0) / 1e9;
        r = map_end(&lg, &ins, timed_out, res, ret, err);
    }
    r = end_run(w, run, &lg, r, res, err);
    json_decref(ins.j);
    return r;
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
