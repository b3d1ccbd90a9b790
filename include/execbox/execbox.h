/* SPDX-License-Identifier: MIT */
/*
 * execbox.h - the public API of libexecbox: run untrusted code in a fresh, disposable sandbox
 * under one security policy and get one structured result back, whatever the backend.
 *
 * Conventions (see docs/error-handling.md and docs/ownership.md):
 *  - Calls that can fail return int: >= 0 on success, a negative errno code on failure, and fill
 *    the caller-owned `struct execbox_error *err` (which may be NULL) with a message.
 *  - A guest that fails, times out or is OOM-killed is a *result*, not an API error.
 *  - ret_ parameters are written only on success. Memory returned by the library is freed with
 *    execbox_free() unless a dedicated *_free function is named.
 *  - Option structs are valid when zeroed; 0 / NULL means "the default".
 *  - The library is thread-safe: it keeps no global mutable state, and several runs may go on at
 *    once from different threads, on one executor or several.
 */
#ifndef EXECBOX_EXECBOX_H
#define EXECBOX_EXECBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is exported, even though the library builds with hidden
 * visibility; the version script exports execbox_* and nothing else. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define EXECBOX_VERSION "0.1.0"
#define EXECBOX_PATH_MAX 4096

/* ---- errors ------------------------------------------------------------------------------ */

/* What an error is about, for programs that must react to it (e.g. answer a client with the
 * field at fault) without reading the message, whose wording may change. */
enum execbox_error_kind {
    EXECBOX_ERROR_OTHER = 0,     /* not about one field of the caller's input (see code, msg) */
    EXECBOX_ERROR_UNKNOWN_FIELD, /* a field name that does not exist; field names it */
    EXECBOX_ERROR_INVALID_VALUE, /* a field's value is of the wrong type or form, below its
                                    minimum, or not allowed; field names it */
    EXECBOX_ERROR_OVER_MAXIMUM,  /* a field's value is above its maximum: the library's own, or
                                    the caller's (execbox_policy_check_within); field names it */
    EXECBOX_ERROR_MALFORMED,     /* the input is not valid JSON, or not the expected shape */
};

#define EXECBOX_ERROR_FIELD_MAX 64

/* A caller-owned, fixed-size error: producing one allocates nothing. */
struct execbox_error {
    int code;                            /* negative errno, 0 when no error */
    char msg[256];                       /* what failed and why; "" when no error */
    enum execbox_error_kind kind;        /* what it is about; EXECBOX_ERROR_OTHER when unsure */
    char field[EXECBOX_ERROR_FIELD_MAX]; /* the field at fault, e.g. "timeout"; "" if none */
};

/* A static description of a negative errno code. Never NULL. */
const char *execbox_strerror(int code);

/* Frees memory returned by the library (JSON strings and the like). Accepts NULL. */
void execbox_free(void *p);

/* The library's version string, EXECBOX_VERSION at build time. */
const char *execbox_version(void);

/* ---- sizes ------------------------------------------------------------------------------- */

/* Parses a size such as "256M", "1.5G", "64k", "4096" or "512MiB" (binary units; a bare number
 * is bytes) into *ret_bytes. -EINVAL with a message naming the bad value, -ERANGE if too big. */
int execbox_parse_size(const char *s, uint64_t *ret_bytes, struct execbox_error *err);

/* ---- the security policy (docs/policy.md) ------------------------------------------------ */

enum execbox_network {
    EXECBOX_NETWORK_NONE = 0, /* an empty network namespace: no sockets to anywhere */
    EXECBOX_NETWORK_ALLOW,    /* only execbox's proxy at 127.0.0.1:3128, to allow_hosts only */
};

/* network "allow" (docs/network.md): at most this many allow_hosts entries, each at most
 * EXECBOX_ALLOW_HOST_LEN - 1 bytes ("pypi.org", "*.example.com", "203.0.113.0/24",
 * "[2001:db8::1]:8443", "localhost:8000"), and at most this many allow_ports. */
#define EXECBOX_ALLOW_HOSTS_MAX 32
#define EXECBOX_ALLOW_HOST_LEN 272
#define EXECBOX_ALLOW_PORTS_MAX 16

/* Default values, used wherever a field is 0. */
#define EXECBOX_DEFAULT_TIMEOUT 10.0
#define EXECBOX_DEFAULT_MEMORY (256ULL << 20)
#define EXECBOX_DEFAULT_CPUS 1.0
#define EXECBOX_DEFAULT_PIDS 64U
#define EXECBOX_DEFAULT_TMPFS (64ULL << 20)
#define EXECBOX_DEFAULT_WORKSPACE_SIZE (256ULL << 20)
#define EXECBOX_DEFAULT_OUTPUT_LIMIT (1ULL << 20)
#define EXECBOX_DEFAULT_FILE_SIZE (64ULL << 20)

struct execbox_policy {
    double timeout;                   /* wall-clock seconds; the sandbox is killed after */
    uint64_t memory;                  /* RAM cap in bytes, no swap; OOM kills the sandbox */
    double cpus;                      /* CPU share, 1 = one core */
    uint32_t pids;                    /* max processes and threads */
    enum execbox_network network;     /* none (default) or allow */
    uint64_t tmpfs;                   /* size of the private /tmp */
    uint64_t workspace_size;          /* size cap of a fresh /workspace */
    uint64_t output_limit;            /* bytes kept per stream (head and tail) */
    uint64_t file_size;               /* largest file the code may write */
    char workspace[EXECBOX_PATH_MAX]; /* host dir mounted at /workspace; "" = fresh, removed */
    char rootfs[EXECBOX_PATH_MAX];    /* read-only root; "" = the host's system dirs */
    /* network allow: the hosts the proxy lets the code reach, in canonical form, "" after the
     * last; an entry without ":PORT" allows the ports of allow_ports. */
    char allow_hosts[EXECBOX_ALLOW_HOSTS_MAX][EXECBOX_ALLOW_HOST_LEN];
    uint16_t allow_ports[EXECBOX_ALLOW_PORTS_MAX]; /* 0 after the last; none at all: 80, 443 */
};

/* Fills *p with the documented defaults (the same values a zeroed policy resolves to). */
void execbox_policy_init(struct execbox_policy *p);

/* Sets one field by its name (docs/policy.md: "timeout", "memory", "output_limit"; '-' and '_'
 * are interchangeable) from text: sizes as in execbox_parse_size, timeout as seconds (decimal),
 * cpus as a decimal, pids as an integer, network "none" or "allow"; "allow_hosts" and
 * "allow_ports" replace their list with a comma-separated one, "allow_host" appends one entry
 * (the --allow-host flag). On failure *p is unchanged and the message names the field and the
 * bad value. */
int execbox_policy_set(struct execbox_policy *p, const char *key, const char *value,
                       struct execbox_error *err);

/* Typed setters: one field by its name from a value of its own type, with the checks, the
 * error kinds and the field of execbox_policy_set() and no text in between. _int and _real take
 * numbers (timeout and cpus in seconds and cores, sizes in bytes, pids); _string takes a
 * field's string form (a size such as "256M", "none" or "allow", a path, a host, or a
 * comma-separated list for allow_hosts and allow_ports) and refuses it for timeout, cpus and
 * pids, as a JSON policy does. A value of a type the field does not take is -EINVAL
 * (EXECBOX_ERROR_INVALID_VALUE). On failure *p is unchanged. */
int execbox_policy_set_int(struct execbox_policy *p, const char *key, int64_t value,
                           struct execbox_error *err);
int execbox_policy_set_real(struct execbox_policy *p, const char *key, double value,
                            struct execbox_error *err);
int execbox_policy_set_string(struct execbox_policy *p, const char *key, const char *value,
                              struct execbox_error *err);

/* One field from a jansson value (a program that holds the request as jansson JSON): a string,
 * an integer or a real as the typed setters take them, an array of strings (allow_hosts) or of
 * integers (allow_ports) replacing the list, null unsetting a path. The same rules as a field of
 * execbox_policy_merge_json(). */
struct json_t;
int execbox_policy_set_json(struct execbox_policy *p, const char *key, const struct json_t *value,
                            struct execbox_error *err);

/* Merges a JSON object of the same field names into *p (numbers or strings; sizes may be
 * "256M"). Unknown fields, wrong types and bad values are -EINVAL naming the field; on failure
 * *p is unchanged. len may be 0 when json is NUL-terminated. */
int execbox_policy_merge_json(struct execbox_policy *p, const char *json, size_t len,
                              struct execbox_error *err);

/* Reads a JSON policy file (at most 1 MiB) and merges it into *p as above. */
int execbox_policy_load_file(struct execbox_policy *p, const char *path, struct execbox_error *err);

/* Checks that every limit in *req is no larger than the one in *max (0 fields count as their
 * defaults). -EPERM naming the first field that asks for more. For the network: "allow" is
 * more than "none"; every allow_hosts entry of req (with its ports) must lie within an entry
 * of max (a name within the same name or a wildcard, a range within a range). */
int execbox_policy_check_within(const struct execbox_policy *req, const struct execbox_policy *max,
                                struct execbox_error *err);

/* Checks the policy's host paths now, as a program should at start-up rather than at each
 * run: a workspace must be an existing directory that may be handed to sandboxed code (not `/`,
 * a system directory, nor anything below one); a rootfs must be an existing directory. Empty
 * paths (the defaults) pass. 0, or -ENOENT, -ENOTDIR or -EPERM with err set (kind
 * EXECBOX_ERROR_INVALID_VALUE, field "workspace" or "rootfs"). */
int execbox_policy_check_host(const struct execbox_policy *p, struct execbox_error *err);

/* Lowers every limit of *p that is above the one in *max to it (0 fields count as their
 * defaults); fields that are not limits (workspace, rootfs, the network allow-list) are left
 * alone, so that execbox_policy_check_within() still refuses them. */
void execbox_policy_cap(struct execbox_policy *p, const struct execbox_policy *max);

/* One sentence for a model or a person saying what network the code has: "There is no network
 * access (no pip install, no downloads)." or, with network "allow", which hosts it may reach
 * and how. Written into buf (NUL-terminated, cut to size). */
void execbox_policy_network_text(const struct execbox_policy *p, char *buf, size_t size);

/* The policy as a JSON object with every field resolved; free with execbox_free(). */
int execbox_policy_to_json(const struct execbox_policy *p, char **ret_json,
                           struct execbox_error *err);

/* ---- cancellation ------------------------------------------------------------------------ */

/* A one-shot, thread-safe cancellation token: firing it kills the run it was given to (the
 * result then has killed_reason "cancelled"). Fire may be called from any thread or from a
 * signal handler. */
struct execbox_cancel;
int execbox_cancel_new(struct execbox_cancel **ret, struct execbox_error *err);
void execbox_cancel_fire(struct execbox_cancel *c);
struct execbox_cancel *execbox_cancel_free(struct execbox_cancel *c);

/* ---- a request ---------------------------------------------------------------------------- */

enum execbox_stream {
    EXECBOX_STREAM_STDOUT = 1,
    EXECBOX_STREAM_STDERR = 2,
};

/* Called from the running thread as the guest produces output, with the first output_limit
 * bytes of each stream as they are written; past that nothing more of the stream while it runs,
 * and at the run's end one line "\n[... execbox: N bytes omitted ...]\n" naming the N bytes held
 * back (the cut is a byte cut). A remote backend calls it once the run ended, with the record's
 * stdout and stderr. The callback must not block for long: the run's deadline keeps running
 * while it does. */
typedef void (*execbox_output_fn)(void *userdata, enum execbox_stream stream, const char *data,
                                  size_t len);

#define EXECBOX_CODE_MAX (16U << 20)  /* largest program accepted */
#define EXECBOX_STDIN_MAX (16U << 20) /* largest stdin accepted */

/* A file placed in /workspace before the code runs (one-shot runs and session cells). path is
 * relative to /workspace ("data/in.csv"; parents are made); absolute paths, "..", empty parts
 * and symlinks on the way are refused with -EINVAL (field "path"). */
struct execbox_input_file {
    const char *path;
    const void *data; /* borrowed */
    size_t len;
};

#define EXECBOX_INPUT_FILES_MAX 64

struct execbox_request {
    const char *language;   /* "python" (NULL), "javascript", "bash" */
    const char *code;       /* the program text (borrowed) */
    size_t code_len;        /* 0: strlen(code) */
    const char *stdin_data; /* NULL: stdin is /dev/null */
    size_t stdin_len;
    const struct execbox_policy *policy; /* NULL: defaults */
    execbox_output_fn on_output;         /* optional live output */
    void *userdata;                      /* passed to on_output */
    struct execbox_cancel *cancel;       /* optional; borrowed for the duration of the run */
    size_t inline_files_max; /* image files in /workspace up to this size come back inline */
    /* Files written into /workspace before the code starts (at most EXECBOX_INPUT_FILES_MAX,
     * each within the policy's file_size, together within its workspace_size). Backends that
     * cannot place them refuse the run with -ENOTSUP. */
    const struct execbox_input_file *files;
    size_t n_files;
    /* Python on the jail: run the code as a notebook cell in a sandbox of its own (a session of
     * one cell, docs/sessions.md), so that the result's `results` holds the value of its last
     * expression, objects passed to display() and matplotlib figures. The code then runs as a
     * cell does (no __file__, sys.argv ['']), not as `python3 FILE`. -ENOTSUP where sessions
     * cannot be had (another backend or language, a host workspace, network "allow"). */
    bool rich_results;
};

/* ---- the result record (docs/result.md) -------------------------------------------------- */

enum execbox_killed_reason {
    EXECBOX_KILLED_NONE = 0,
    EXECBOX_KILLED_TIMEOUT,
    EXECBOX_KILLED_MEMORY,
    EXECBOX_KILLED_OUTPUT_LIMIT,
    EXECBOX_KILLED_CPU,
    EXECBOX_KILLED_CANCELLED,
};

/* A listed file against the request's input files (execbox_request.files). */
enum execbox_file_origin {
    EXECBOX_FILE_CREATED = 0, /* not one of the input files: "created" */
    EXECBOX_FILE_CHANGED,     /* an input file whose content the run changed: "changed" */
    EXECBOX_FILE_INPUT,       /* an input file, byte for byte as given: "input" */
};

struct execbox_file {
    char *path;          /* relative to /workspace */
    uint64_t size;       /* bytes */
    char *mime;          /* guessed from the name and the first bytes */
    unsigned char *data; /* inline content of a small image, else NULL */
    size_t data_len;
    enum execbox_file_origin origin;
};

/* One connection attempt through the network proxy (network "allow"). */
struct execbox_egress {
    char host[256]; /* as the code asked for it (a name or an address) */
    uint16_t port;
    bool allowed;       /* the proxy connected it */
    char reason[96];    /* why it was refused (or failed), "" when it went through */
    uint64_t bytes_out; /* from the code to the host */
    uint64_t bytes_in;  /* from the host to the code */
};

/* One rich output of a Python cell or run, MIME-style as Jupyter and E2B have them (every
 * field NULL when that form is absent): the value of a session cell's last expression
 * (is_main_result), an object passed to display(), a matplotlib figure shown or left open. */
struct execbox_rich {
    char *text;       /* text/plain: the repr */
    char *html;       /* text/html (_repr_html_: pandas DataFrames) */
    char *markdown;   /* text/markdown */
    char *svg;        /* image/svg+xml */
    char *png;        /* image/png, base64 */
    char *jpeg;       /* image/jpeg, base64 */
    char *latex;      /* text/latex */
    char *json;       /* application/json, as JSON text */
    char *javascript; /* application/javascript */
    bool is_main_result;
};

/* A run or cell keeps at most this many rich outputs, and at most EXECBOX_RICH_BYTES_MAX bytes
 * of them in all; beyond, results_truncated is set (and results_dropped, results_cut say why). */
#define EXECBOX_RICH_MAX 64
#define EXECBOX_RICH_BYTES_MAX (16U << 20)

/* The result lists at most this many egress entries; later attempts only set
 * egress_truncated. */
#define EXECBOX_EGRESS_MAX 256

struct execbox_result {
    char *stdout_data; /* kept bytes, NUL-terminated (head, a marker line, tail when truncated) */
    size_t stdout_len;
    char *stderr_data;
    size_t stderr_len;
    uint64_t stdout_bytes; /* bytes the guest wrote in all */
    uint64_t stderr_bytes;
    bool stdout_truncated;
    bool stderr_truncated;
    int exit_code;         /* status; 124 timeout; 128+N signal N; 1 SandboxError */
    double execution_time; /* wall-clock seconds of the run */
    bool timed_out;
    bool oom_killed;
    int signal; /* 0, or the signal that ended the program */
    enum execbox_killed_reason killed_reason;
    double cpu_time;            /* user + system seconds, -1 when unknown */
    uint64_t peak_memory_bytes; /* 0 when unknown */
    char *error_name;           /* NULL, or the uncaught exception / SandboxError / Timeout ... */
    char *error_value;
    char *error_traceback;
    struct execbox_file *files;
    size_t n_files;
    bool files_truncated; /* more files existed than were listed */
    char backend[32];
    char language[32];
    char **degraded; /* walls that were missing under allow_degraded */
    size_t n_degraded;
    bool has_egress;               /* the run had network "allow": egress is in the JSON */
    struct execbox_egress *egress; /* every connection attempt, in order */
    size_t n_egress;
    bool egress_truncated;        /* more than EXECBOX_EGRESS_MAX attempts */
    struct execbox_rich *results; /* rich outputs in order (Python); always in the JSON */
    size_t n_results;
    bool results_truncated;
    /* Session cells only (in_session): the cell's number, 1 for the first cell run, and
     * whether the session's state is the one from before the cell (it failed, timed out, was
     * cancelled or OOM-killed, and the session rolls back). */
    bool in_session;
    uint64_t execution_count;
    bool rolled_back;
    /* Why results_truncated is set (added after rolled_back: the struct only grows).
     * results_dropped: outputs left out past EXECBOX_RICH_MAX. results_cut: outputs with a
     * form cut or left out for size (one form over EXECBOX_RICH_BYTES_MAX, or the cell's
     * outputs over it in all; the output's text then says which form, how big it was and the
     * cap), or left out whole for it. results_file_dropped: the file a cell's rich outputs
     * come back in was larger than any the session writes (the cell wrote it itself), and
     * every rich output was dropped with it. */
    size_t results_dropped;
    size_t results_cut;
    bool results_file_dropped;
};

/* Frees a result and everything it owns. Accepts NULL; returns NULL. */
struct execbox_result *execbox_result_free(struct execbox_result *r);

enum {
    EXECBOX_JSON_PRETTY = 1 << 0,       /* indented output */
    EXECBOX_JSON_NO_FILE_DATA = 1 << 1, /* leave inline file data out */
};

/* Every JSON execbox prints gives a real number this many significant digits (0.0225050 prints
 * as 0.022505, never as 0.022505000000000001): with jansson, JSON_REAL_PRECISION(this). */
#define EXECBOX_JSON_REAL_DIGITS 6

/* The result as one JSON object (docs/result.md). Invalid UTF-8 in the output becomes
 * U+FFFD so the JSON is always valid. Free *ret_json with execbox_free(). */
int execbox_result_to_json(const struct execbox_result *r, unsigned flags, char **ret_json,
                           struct execbox_error *err);

/* The same object as a new jansson value (*ret holds the only reference: json_decref it), for a
 * program that puts the result inside JSON of its own (MCP's structuredContent, the agent's run
 * record) rather than printing it and parsing it back. */
struct json_t;
int execbox_result_to_jansson(const struct execbox_result *r, unsigned flags, struct json_t **ret,
                              struct execbox_error *err);

/* The name of a killed reason as in the JSON ("timeout"), NULL for none. */
const char *execbox_killed_reason_name(enum execbox_killed_reason k);

/* ---- the executor ------------------------------------------------------------------------- */

#define EXECBOX_DEFAULT_BACKEND "jail"

struct execbox_executor_options {
    const char *backend;        /* NULL: EXECBOX_DEFAULT_BACKEND */
    bool allow_degraded;        /* jail: run even when a wall is missing, and say so */
    const char *docker_host;    /* docker: DOCKER_HOST form, NULL = $DOCKER_HOST or the default */
    const char *docker_image;   /* docker: image to run */
    const char *docker_runtime; /* docker: OCI runtime name, NULL = engine default */
    int docker_pull;            /* docker: 0 never, 1 if missing */
    /* remote: other `execbox serve` instances, as base URLs separated by commas
     * ("http://10.0.0.5:8080,http://10.0.0.6:8080"); each run goes to one of them and fails
     * over to the next on a connection error, a 429 or a 5xx (see docs/deploy.md). */
    const char *remote_urls;
    const char *remote_token;    /* remote: their bearer token, NULL = $EXECBOX_REMOTE_TOKEN */
    const char *e2b_template;    /* e2b: template to start, NULL = "code-interpreter-v1" */
    const char *gvisor_platform; /* gvisor: runsc platform ptrace | kvm | systrap; NULL = ptrace */
    /* Warm pool: sandboxes set up ahead of time, each serving exactly one run (see
     * docs/pool.md). A run finds one ready for its (policy, language) or runs cold; it never
     * waits for or fails because of the pool. */
    unsigned pool_size;       /* warm sandboxes kept per (policy, language); 0: no pool */
    const char *pool_preload; /* modules imported ahead of time, "numpy,pandas"; NULL: none */
    double pool_idle;         /* seconds a warm sandbox may wait unused; 0: 300 */
    /* jail: at open, remove what killed execbox processes left behind (cgroups, workspaces,
     * stages) even when another execbox did so moments ago; otherwise that sweep runs at most
     * once per 10 s per host. Long-lived programs (serve, mcp) set it, so that a restart cleans
     * up after its killed predecessor at once. */
    bool sweep_now;
    /* jail: keep runs' emptied cgroups for later runs instead of removing each after its run
     * (docs/jail.md, "Cgroups kept for reuse"); the kept ones are removed at close. For
     * programs that run many (serve, mcp): without it a run's cgroup is gone before its result
     * is handed back, which suits a one-shot run. */
    bool keep_cgroups;
    /* Templates (jail, python): warm sandboxes are forks of one process per (policy, language,
     * preload) that imported the preload once. Its runs share what a fork cannot make unique
     * (the string-hash secret, the address layout), so a template is replaced after this many
     * runs or seconds, whichever comes first. */
    unsigned template_max_runs; /* 0: 1000 */
    double template_max_age;    /* seconds; 0: 600 */
    bool no_templates;          /* warm sandboxes start from nothing, one interpreter each */
};

struct execbox_executor;

/* Opens an executor on a backend. The backend is probed; -ENOTSUP (with the reason) if it
 * cannot run here. Free with execbox_executor_free(). */
int execbox_executor_new(const struct execbox_executor_options *opts, struct execbox_executor **ret,
                         struct execbox_error *err);

/* Runs one request in a fresh sandbox that is destroyed before this returns. Thread-safe.
 * Returns 0 and a result (also when the guest failed, timed out or the sandbox could not run
 * it: see exit_code and error_name); a negative errno only for a bad request (-EINVAL: unknown
 * language, oversized code) or no memory. Free *ret with execbox_result_free(). */
int execbox_executor_run(struct execbox_executor *ex, const struct execbox_request *req,
                         struct execbox_result **ret, struct execbox_error *err);

/* The backend's name. */
const char *execbox_executor_backend(const struct execbox_executor *ex);

/* Starts keeping warm sandboxes for (policy, language) now rather than after the first run of
 * that pair. No-op without a pool; -ENOTSUP when the backend or language cannot be pooled. */
int execbox_executor_prewarm(struct execbox_executor *ex, const struct execbox_policy *policy,
                             const char *language, struct execbox_error *err);

struct execbox_pool_stats {
    uint64_t hits;    /* runs served by a warm sandbox */
    uint64_t misses;  /* runs that found none ready (or were not poolable) */
    uint64_t started; /* warm sandboxes started */
    uint64_t expired; /* discarded unused after pool_idle */
    uint64_t failed;  /* warm starts that failed */
    unsigned ready;   /* ready now, all pairs together */
    /* Templates (where the backend forks warm sandboxes from one, see docs/pool.md). */
    unsigned templates;             /* live now */
    uint64_t templates_started;     /* started in all */
    uint64_t templates_retired;     /* replaced after their generation bound, or died */
    uint64_t template_memory_bytes; /* the live templates' own memory (their cgroups' peak) */
    /* Of the misses, runs forked on the spot from their pair's live template (the rest went
     * cold: no template was live for them). */
    uint64_t forked;
    /* Runs given a cgroup an earlier run had (emptied and its counters reset; jail backend,
     * docs/pool.md), and how many are kept for that now. */
    uint64_t cgroups_reused;
    unsigned cgroups_kept;
};

/* A snapshot of the pool's counters (all zero without a pool). */
void execbox_executor_pool_stats(struct execbox_executor *ex, struct execbox_pool_stats *ret);

/* Closes the executor. Accepts NULL; returns NULL. No run may be in progress. */
struct execbox_executor *execbox_executor_free(struct execbox_executor *ex);

/* ---- sessions (docs/sessions.md) ---------------------------------------------------------- */

/* A session keeps an interpreter's state across cells. Its state lives in one process inside
 * the walls of a sandbox of its own (the policy's memory cap covers the state and the running
 * cell); each cell runs in a fork of that state, and the fork becomes the new state only when
 * the cell ends normally (exit status 0). When the cell raises (unless rollback is off), exits
 * non-zero, times out, is cancelled or is OOM-killed, the fork is discarded: the interpreter's
 * state is exactly what it was before the cell (files in /workspace and /tmp are not rolled
 * back). One cell at a time. jail backend, Python only. */
struct execbox_session;

struct execbox_session_options {
    const char *language;                /* NULL: python (the only one with sessions) */
    const struct execbox_policy *policy; /* NULL: defaults; its timeout is each cell's default
                                            and maximum; workspace must be unset and network
                                            "none" */
    bool no_rollback;    /* an uncaught exception keeps the cell's partial effects (Jupyter) */
    double idle_timeout; /* seconds without a cell or file call before the session expires;
                            0: EXECBOX_SESSION_IDLE_DEFAULT */
    double max_lifetime; /* seconds from creation; 0: EXECBOX_SESSION_LIFETIME_DEFAULT */
};

#define EXECBOX_SESSION_IDLE_DEFAULT 600.0
#define EXECBOX_SESSION_LIFETIME_DEFAULT 86400.0

/* Starts a session (with the executor's pool_preload imported, forked from its template when
 * there is one). -ENOTSUP (with the reason) when the backend, language or policy cannot have
 * sessions. Free with execbox_session_free(), before the executor. */
int execbox_session_new(struct execbox_executor *ex, const struct execbox_session_options *o,
                        struct execbox_session **ret, struct execbox_error *err);

/* Runs one cell: req->code and stdin_data, on_output, cancel and inline_files_max as for
 * execbox_executor_run, req->files placed first; req->policy may only lower the timeout and
 * output_limit (other fields are the session's; -EPERM when it asks for more). req->language
 * NULL or the session's. Returns 0 and a result with in_session, execution_count, rolled_back
 * and results; -EBUSY while another cell runs, -ETIMEDOUT when the session has expired,
 * -ESHUTDOWN when it has ended (its state process died or was killed: the result of the cell
 * that ended it said so). Free *ret with execbox_result_free(). */
int execbox_session_run(struct execbox_session *s, const struct execbox_request *req,
                        struct execbox_result **ret, struct execbox_error *err);

struct execbox_session_info {
    char language[32];
    double created_at;          /* Unix time, seconds */
    double last_used_at;        /* the last cell or file call began or ended */
    double expires_at;          /* min(last_used_at + idle_timeout, created_at + max_lifetime) */
    uint64_t execution_count;   /* cells run so far (rolled back ones too) */
    uint64_t rolled_back;       /* cells rolled back */
    bool busy;                  /* a cell is running */
    bool alive;                 /* not ended, not expired */
    uint64_t memory_bytes;      /* the session's memory now (its cgroup), 0 when unknown; read
                                 * once the state a finished cell replaced has exited (up to 1 s) */
    uint64_t memory_peak_bytes; /* the most it has held since it started, 0 when unknown */
};

/* A snapshot; thread-safe, also while a cell runs. */
void execbox_session_info(struct execbox_session *s, struct execbox_session_info *ret);

/* Counts as a use now, as a cell or file call does: for a caller that accepted a cell and will
 * run it after a wait (a queue), so that the wait does not expire the session. Thread-safe. */
void execbox_session_touch(struct execbox_session *s);

/* Workspace files of a session, by path relative to /workspace: resolved beneath it with no
 * symlink followed (absolute paths, ".." and symlinks are -EINVAL, field "path"); they may be
 * called while a cell runs. write creates parents and replaces the file (at most the policy's
 * file_size; -EFBIG above it, -ENOSPC when the workspace is full); read returns at most max
 * bytes (-EFBIG when the file is larger; free *ret_data with execbox_free()); list returns the
 * files as a result lists them (free with execbox_files_free()); remove deletes a file or an
 * empty directory. -ENOENT when there is no such file, -ESHUTDOWN after the session ended. */
int execbox_session_write_file(struct execbox_session *s, const char *path, const void *data,
                               size_t len, struct execbox_error *err);
int execbox_session_read_file(struct execbox_session *s, const char *path, size_t max,
                              char **ret_data, size_t *ret_len, struct execbox_error *err);
/* Opens a workspace file for reading, as read_file resolves and checks it, without reading it:
 * for a caller that streams a large file (a download) rather than holding it whole. *ret_fd is
 * a blocking, close-on-exec descriptor the caller closes; *ret_size is the file's size when
 * opened (-EFBIG when larger than max). A cell may change the file meanwhile: the caller
 * decides how to treat bytes past *ret_size or a file that shrinks. */
int execbox_session_open_file(struct execbox_session *s, const char *path, uint64_t max,
                              int *ret_fd, uint64_t *ret_size, struct execbox_error *err);
int execbox_session_list_files(struct execbox_session *s, struct execbox_file **ret_files,
                               size_t *ret_n, struct execbox_error *err);
int execbox_session_remove_file(struct execbox_session *s, const char *path,
                                struct execbox_error *err);
/* Moves a file, symlink or directory of the workspace from one path to another (paths as
 * above; to's parent must exist): a file at to is replaced, a directory only when it is empty
 * (-ENOTEMPTY). -ENOENT when from does not exist. */
int execbox_session_rename(struct execbox_session *s, const char *from, const char *to,
                           struct execbox_error *err);
void execbox_files_free(struct execbox_file *files, size_t n);

/* Directories of a session's workspace, resolved as the file calls above resolve paths (path
 * NULL or "" is /workspace itself for stat and list_dir). make_dir makes the directory and its
 * missing parents (-EEXIST when it already is one, -ENOTDIR when a file is in the way); stat
 * describes what is at the path (a symlink itself, not followed); list_dir returns a
 * directory's entries sorted by name, at most max of them (-E2BIG beyond; free *ret with
 * execbox_free()). */
enum execbox_dirent_type {
    EXECBOX_DIRENT_OTHER = 0,
    EXECBOX_DIRENT_FILE,
    EXECBOX_DIRENT_DIR,
    EXECBOX_DIRENT_SYMLINK,
};
struct execbox_dirent {
    char name[256];
    enum execbox_dirent_type type;
    uint64_t size;
    uint32_t mode;    /* st_mode */
    int64_t mtime_ns; /* Unix time */
};
int execbox_session_make_dir(struct execbox_session *s, const char *path,
                             struct execbox_error *err);
int execbox_session_stat(struct execbox_session *s, const char *path, struct execbox_dirent *ret,
                         struct execbox_error *err);
int execbox_session_list_dir(struct execbox_session *s, const char *path, size_t max,
                             struct execbox_dirent **ret, size_t *ret_n, struct execbox_error *err);

/* Ends the session now: its processes are killed and its sandbox removed; a cell running in
 * another thread returns with killed_reason "cancelled" and the session ended. Thread-safe;
 * idempotent. */
void execbox_session_kill(struct execbox_session *s);

/* Ends and frees the session. No cell may be running. Accepts NULL; returns NULL. */
struct execbox_session *execbox_session_free(struct execbox_session *s);

/* ---- backends and their walls -------------------------------------------------------------- */

#define EXECBOX_CHECK_MAX_WALLS 24

struct execbox_wall {
    char name[32]; /* "user namespace", "cgroup memory", "seccomp" ... */
    bool ok;
    bool required;    /* without it the backend refuses unless allow_degraded */
    char detail[200]; /* how it is enforced, or why it is missing */
};

struct execbox_check {
    char backend[32];
    bool usable;   /* can run code at all here */
    char tier[96]; /* the isolation tier that results, in words */
    size_t n_walls;
    struct execbox_wall walls[EXECBOX_CHECK_MAX_WALLS];
};

/* The names of the compiled-in backends, NULL-terminated, static. */
const char *const *execbox_backends(void);

/* Probes one backend (NULL: the default) and reports each of its walls. Returns 0 with the
 * report filled also when walls are missing; -ENOENT for an unknown backend. */
int execbox_check_backend(const char *backend, const struct execbox_executor_options *opts,
                          struct execbox_check *ret, struct execbox_error *err);

/* ---- languages ----------------------------------------------------------------------------- */

/* The supported language names, NULL-terminated, static. */
const char *const *execbox_languages(void);

/* The same names as one line for a message, "python, javascript, bash", cut to fit n (n > 0). */
void execbox_language_list(char *buf, size_t n);

/* The canonical name of a language or one of its aliases ("py", "python3" -> "python",
 * "js", "node" -> "javascript", "sh" -> "bash"; NULL -> "python"), or NULL when unknown. */
const char *execbox_language_name(const char *name);

/* ---- text: what every surface needs to put guest bytes into JSON ------------------------- */

/* A NUL-terminated copy of data[0..len) with every invalid UTF-8 sequence replaced by U+FFFD
 * (overlongs, surrogates and code points above U+10FFFF are invalid), its length in *ret_len.
 * With ret_pending, a valid but incomplete sequence at the very end is left out rather than
 * replaced and its length written there: hand those bytes in again with the stream's next
 * chunk. Free with execbox_free(); NULL when out of memory. */
char *execbox_utf8_sanitize(const char *data, size_t len, size_t *ret_len, size_t *ret_pending);

/* Standard base64 (RFC 4648, padded) of data, NUL-terminated. Free with execbox_free(); NULL
 * when out of memory. */
char *execbox_base64(const void *data, size_t len);

/* Decodes base64 (RFC 4648; whitespace skipped, padding optional, as MIME bundles carry images)
 * into a new buffer of *ret_len bytes, NUL-terminated. Free with execbox_free(); NULL when s is
 * not base64 or on no memory. */
unsigned char *execbox_base64_decode(const char *s, size_t len, size_t *ret_len);

/* ---- the tool definition (docs/mcp.md) --------------------------------------------------- */

enum execbox_schema_format {
    EXECBOX_SCHEMA_MCP = 0,   /* {name, description, inputSchema, outputSchema, annotations} */
    EXECBOX_SCHEMA_ANTHROPIC, /* {name, description, input_schema} */
    EXECBOX_SCHEMA_OPENAI,    /* {type: "function", function: {name, description, parameters}} */
};

struct execbox_tool_options {
    const char *name;             /* NULL: "execute_python" (or "execute_code" with languages) */
    const char *const *languages; /* NULL: python only; else adds a "language" enum */
    double max_timeout;           /* 0: the default policy's timeout */
    const struct execbox_policy *policy; /* limits quoted in the description; NULL: defaults */
    /* The tool runs in a session (`execbox mcp --stateful`): the description says that state
     * persists between calls and that a failed call is rolled back, and the MCP outputSchema
     * adds execution_count, rolled_back and results. */
    bool stateful;
    /* The backend the tool runs on (NULL: EXECBOX_DEFAULT_BACKEND). For jail, subprocess and
     * gvisor the description names the packages execbox_python_packages finds in the policy's
     * rootfs (or the host's root); for the others, whose image is not visible here, none. */
    const char *backend;
};

/* Which of numpy, pandas and matplotlib the Python of backend (NULL: the default) finds in root
 * (NULL or "": the host's /), as words for a description ("numpy, pandas and matplotlib",
 * "numpy", "" for none), in buf of size n. 1 when it could look: jail, subprocess and gvisor
 * run the Python of that root; 0 (buf "") for a backend with an image or a machine of its own.
 * It looks at files only (dist- and site-packages); nothing is run. */
int execbox_python_packages(const char *backend, const char *root, char *buf, size_t n);

/* The tool definition an agent registers, as JSON. Free with execbox_free(). */
int execbox_tool_schema(enum execbox_schema_format format, const struct execbox_tool_options *o,
                        char **ret_json, struct execbox_error *err);

/* Parses "mcp", "anthropic" or "openai". */
int execbox_schema_format_parse(const char *s, enum execbox_schema_format *ret,
                                struct execbox_error *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* EXECBOX_EXECBOX_H */
