/* SPDX-License-Identifier: MIT */
/*
 * docker.h - private to the docker backend (docker.c, docker_api.c, docker_logs.c): its limits,
 * the executor's engine state, the Engine API client over libcurl and the log demultiplexer.
 */
#ifndef EXECBOX_BACKENDS_DOCKER_H
#define EXECBOX_BACKENDS_DOCKER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/curl_load.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/limits.h"

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
#define DK_HOLD_MAX 4096 /* stderr is held up to this, by lines, to find the status line */

/* One executor's engine: read-only after open(). */
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

/* ---- the Engine API client (docker_api.c) -------------------------------------------------- */

/* The headers of /_ping that identify the engine (Docker clients negotiate from these). */
struct ping_headers {
    char api[16];    /* "1.41" */
    char server[64]; /* "Libpod/4.3.1 (linux)", "Docker/24.0.7 (linux)" */
};

/* One Engine API call. */
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

/* One container of a run: its handle (one per run), the engine and the container's id. */
struct container {
    CURL *h;
    const struct docker_state *s;
    char id[80];
};

/* Counts the bytes of the followed log stream; past kill_at the transfer is aborted. */
struct flood_guard {
    uint64_t bytes, kill_at;
    bool flooded;
};

/* A curl write callback that keeps the last b->max bytes in the struct eb_http_body ud (a
 * pull's progress stream ends with its error, if any). */
size_t dk_discard_write(char *p, size_t size, size_t n, void *ud);

/* A curl header callback that keeps Api-Version and Server in the struct ping_headers ud. */
size_t dk_ping_header(char *p, size_t size, size_t n, void *ud);

/* Sets up h for one call (for curl_easy_perform or a multi handle). *ret_hdrs, freed by the
 * caller after the transfer, holds the request headers. 0 or -errno. */
int dk_prepare(CURL *h, const struct docker_state *s, const struct call *c,
               struct eb_http_body *reply, struct curl_slist **ret_hdrs, struct execbox_error *err);

/* The outcome of a finished transfer: 0 with *status (any HTTP status), or -errno with a
 * message a user understands. */
int dk_finish(CURL *h, CURLcode cr, const struct docker_state *s, const struct call *c,
              const struct eb_http_body *reply, long *status, struct execbox_error *err);

/* Performs one call; 0 with *status set (any HTTP status), or -errno with a message. */
int dk_http(CURL *h, const struct docker_state *s, const struct call *c, struct eb_http_body *reply,
            long *status, struct execbox_error *err);

/* A call whose reply is a bounded JSON body; 0 with *status, and *ret (may be NULL if the
 * body is not JSON); msg (optional) gets the reply's message. */
int dk_http_json(CURL *h, const struct docker_state *s, const struct call *c, long *status,
                 json_t **ret, char *msg, size_t msg_size, struct execbox_error *err);

/* Negotiates the API version with the engine: fills s->base and s->engine. 0 or -errno. */
int dk_negotiate(CURL *h, struct docker_state *s, struct execbox_error *err);

/* Whether s->image is on the engine: 1 present, 0 missing, -errno. */
int dk_image_present(CURL *h, const struct docker_state *s, struct execbox_error *err);

/* Pulls s->image. 0 or -errno. */
int dk_pull_image(CURL *h, const struct docker_state *s, struct execbox_error *err);

/* A call on /containers/ID + suffix with a bounded JSON reply (*ret if ret, else freed). */
int dk_api(struct container *k, const char *method, const char *suffix, long timeout_ms,
           long *status, char *msg, size_t msg_size, json_t **ret, struct execbox_error *err);

/* 0 when the engine really gave the container the runtime s->runtime, else -ENOTSUP. */
int dk_check_runtime(struct container *k, struct execbox_error *err);

/* Kills and removes the container (force also kills a running one). Tries twice. 0 or -EIO. */
int dk_remove_container(struct container *k, struct execbox_error *err);

/* Waits until the container stops (*ret_done), the deadline passes (*ret_timed_out), the
 * cancel fd fires (*ret_cancelled) or the guard sees a flood. 0, or -errno when the engine
 * failed. */
int dk_watch(struct container *k, uint64_t deadline, int cancel_fd, struct flood_guard *guard,
             bool *ret_timed_out, bool *ret_cancelled, bool *ret_done, struct execbox_error *err);

/* ---- the log demultiplexer (docker_logs.c) -------------------------------------------------- */

/* The bootstrap's status line, when it came. */
struct guest_status {
    bool have;
    int code, sig;
    bool oom;
    int64_t cpu_us, maxrss_kb;
};

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

/* A curl write callback for the log stream into the struct logs ud: the output goes to the
 * capped buffers (and the request's on_output), the bootstrap's marked lines to l->status and
 * l->files. Returns 0 (aborting the transfer) on a flood (l->flooded) or no memory (l->nomem). */
size_t dk_logs_write(char *p, size_t size, size_t n, void *ud);

#endif
