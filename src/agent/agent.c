/* SPDX-License-Identifier: MIT */
/* agent.c - `execbox agent "TASK"`: the self-debugging loop (docs/agent.md). Each turn
 * asks the model with the execute_python tool; when it calls the tool, its reply is appended to
 * the history first, the code runs in a fresh sandbox, then the result is appended (failures
 * flagged as errors, the traceback whole). After --max-attempts failed runs the agent stops and
 * says honestly that it could not compute the result, quoting the last error. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/http.h"
#include "agent/provider.h"
#include "common/surface.h"
#include "common/cliopts.h"
#include "common/io.h"
#include "execbox/execbox.h"

#define AGENT_TEXT_MAX (1U << 20) /* task and system prompt files */
#define AGENT_DEFAULT_MAX_TOKENS 4096
#define AGENT_DEFAULT_MAX_ATTEMPTS 3
#define AGENT_DEFAULT_MAX_TURNS 10
#define AGENT_DEFAULT_RETRIES 4
#define AGENT_DEFAULT_RETRY_BASE_MS 1000
#define AGENT_RETRY_MAX_MS 30000
#define AGENT_DEFAULT_CONNECT_TIMEOUT 10.0
#define AGENT_DEFAULT_HTTP_TIMEOUT 600.0
#define AGENT_ERROR_MAX 1024 /* the failure's reason kept for --json */

/* Set by SIGINT/SIGTERM: the run in progress is cancelled, the HTTP request abandoned, the
 * transcript still saved. Signal handlers can only reach globals. */
static volatile sig_atomic_t interrupted;
static struct execbox_cancel *cancel_token;

static void on_signal(int sig)
{
    interrupted = sig;
    if (cancel_token)
        execbox_cancel_fire(cancel_token); /* async-signal-safe: one eventfd write */
}

static void help(FILE *f)
{
    fprintf(f,
            "Usage: execbox agent [OPTIONS] TASK...   (TASK '-' reads it from stdin)\n\n"
            "Asks a model to solve TASK by writing Python and running it in a fresh sandbox:\n"
            "write, run, read the traceback, fix, retry, at most --max-attempts failed runs.\n"
            "The final answer goes to stdout, progress to stderr.\n\n"
            "  --provider NAME          anthropic | openai (default: anthropic, or openai when\n"
            "                           only OPENAI_API_KEY is set); the key comes from\n"
            "                           ANTHROPIC_API_KEY or OPENAI_API_KEY\n"
            "  --model NAME             model (default: %s | %s)\n"
            "  --base-url URL           API base URL (default: %s | %s); any OpenAI-compatible\n"
            "                           server works (llama.cpp, vLLM, Ollama: no key needed)\n"
            "  --max-tokens N           tokens per reply (default %d)\n"
            "  --max-attempts N         failed runs before giving up (default %d)\n"
            "  --max-turns N            model calls in all (default %d)\n"
            "  --system FILE            replace the system prompt\n"
            "  --json                   print {answer, stopped, attempts, runs, usage,\n"
            "                           transcript, error}; on failure too (stopped \"error\")\n"
            "  --transcript FILE        save the whole message history as JSON\n"
            "  --retries N              HTTP retries on 429, 529, 5xx, connection errors "
            "(default %d)\n"
            "  --retry-base-ms MS       first backoff, doubled each retry (default %d)\n"
            "  --connect-timeout SECS   (default %g)   --http-timeout SECS  per request "
            "(default %g)\n"
            "  -h, --help               this text\n\n" CLI_SANDBOX_HELP
            "\nExit status: 0 answered; 1 gave up (the honest answer is still printed); 125 the\n"
            "agent failed (bad flag, missing key, API error: the reason on stderr, and in\n"
            "error with --json); 128+N interrupted by signal N (the transcript is still\n"
            "saved).\n",
            agent_anthropic.default_model, agent_openai.default_model, agent_anthropic.default_base,
            agent_openai.default_base, AGENT_DEFAULT_MAX_TOKENS, AGENT_DEFAULT_MAX_ATTEMPTS,
            AGENT_DEFAULT_MAX_TURNS, AGENT_DEFAULT_RETRIES, AGENT_DEFAULT_RETRY_BASE_MS,
            AGENT_DEFAULT_CONNECT_TIMEOUT, AGENT_DEFAULT_HTTP_TIMEOUT);
}

static char *default_system(const struct execbox_policy *p, const char *backend)
{
    char *s = NULL, net[1024], pk[64], py[160];
    execbox_policy_network_text(p, net, sizeof(net));
    /* Name what the sandbox's Python has, as the tool's description does. */
    if (!execbox_python_packages(backend, p->rootfs, pk, sizeof(pk)))
        snprintf(py, sizeof(py), "Python 3 with the packages of the %s backend's image", backend);
    else if (pk[0])
        snprintf(py, sizeof(py), "Python 3 with %s", pk);
    else
        snprintf(py, sizeof(py),
                 "Python 3 with its standard library only (no numpy, pandas or "
                 "matplotlib)");
    if (asprintf(&s,
                 "You solve tasks by writing Python and running it with the execute_python tool. "
                 "Compute rather than guess: any number, count, date or statistic in your answer "
                 "must come from code you ran, never from memory or estimation.\n\n"
                 "The sandbox: %s. %s Every call starts fresh, so include all imports and "
                 "data each time; files go in /workspace (save plots there); only printed output "
                 "comes back; each run is killed after %g %s and may use %llu MiB of "
                 "memory.\n\n"
                 "If a run fails, read the whole traceback, fix the cause and run again. If a "
                 "package is missing, fall back to numpy or plain Python math instead of "
                 "retrying the import. When the code has printed what you need, answer briefly "
                 "with the computed result. If you cannot compute it, say so plainly; do not "
                 "invent a number.",
                 py, net, p->timeout, cli_seconds_word(p->timeout),
                 (unsigned long long)(p->memory >> 20)) < 0)
        return NULL;
    return s;
}

static int parse_long(const char *flag, const char *arg, long lo, long hi, long *ret)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || !end || end == arg || *end || v < lo || v > hi) {
        fprintf(stderr, "execbox agent: --%s: '%s' is not a whole number from %ld to %ld\n", flag,
                arg, lo, hi);
        return -1;
    }
    *ret = v;
    return 0;
}

static int parse_secs(const char *flag, const char *arg, double *ret)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || !end || end == arg || *end || !(v > 0) || v > 86400) {
        fprintf(stderr, "execbox agent: --%s: '%s' is not a number of seconds\n", flag, arg);
        return -1;
    }
    *ret = v;
    return 0;
}

/* The first non-blank line of the code, cut to fit a progress line. */
static void first_line(const char *code, char *out, size_t n)
{
    while (*code == '\n' || *code == '\r' || *code == ' ' || *code == '\t')
        code++;
    size_t len = strcspn(code, "\r\n");
    if (len >= n) {
        len = n > 4 ? n - 4 : 0;
        snprintf(out, n, "%.*s...", (int)len, code);
    } else
        snprintf(out, n, "%.*s", (int)len, code);
    /* The model's text must not drive the terminal. */
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
}

/* Appends at most max bytes of s to out (of size n, NUL-terminated) with every control byte
 * but \n and \t replaced, so an API error body cannot drive the terminal. */
static void append_sanitized(char *out, size_t n, const char *s, size_t max)
{
    size_t len = strlen(out);
    for (size_t i = 0; s[i] && i < max && len + 1 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        out[len++] = c < 0x20 && c != '\n' && c != '\t' ? '?' : (char)c;
    }
    out[len] = '\0';
}

struct agent {
    const struct agent_provider *prov;
    const char *model;
    char *url;
    bool official; /* the provider's own endpoint (not a compatible server) */
    long max_tokens, max_attempts, max_turns;
    struct agent_http_options http;
    char *system;
    json_t *tools; /* [tool definition] */
    json_t *history;
    json_t *runs; /* [{id, code, result}] for --json */
    struct curl_slist *headers;
    struct execbox_executor *ex;
    struct execbox_cancel *cancel; /* fired by SIGINT/SIGTERM */
    struct execbox_policy policy;
    const char *tool_name;
    long turns, attempts, failed;
    long long input_tokens, output_tokens;
    long http_requests;
    char *last_error;            /* the whole error text of the last failed run */
    char error[AGENT_ERROR_MAX]; /* why the agent failed (the first reason), for --json */
};

/* Says on stderr why the agent fails, and keeps the first reason for --json. */
__attribute__((format(printf, 2, 3))) static void fail(struct agent *a, const char *fmt, ...)
{
    char msg[AGENT_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "execbox agent: %s\n", msg);
    if (!a->error[0])
        snprintf(a->error, sizeof(a->error), "%s", msg);
}

/* Runs one tool call and fills *res (content owned by the caller, free()d). -ECANCELED (the
 * reason printed) when the sandbox itself failed, -ENOMEM. */
static int run_call(struct agent *a, const struct agent_call *c, struct agent_tool_result *res,
                    bool *ret_ok)
{
    char *content = NULL;
    *ret_ok = false;
    res->id = c->id;
    res->is_error = true;
    if (strcmp(c->name, a->tool_name) != 0) {
        if (asprintf(&content, "Error: there is no tool named '%s'; the only tool is '%s'.",
                     c->name, a->tool_name) < 0)
            return -ENOMEM;
        fprintf(stderr, "execbox agent: the model called an unknown tool '%s'\n", c->name);
        res->content = content;
        return 0;
    }
    if (!c->code) {
        if (asprintf(&content,
                     "Error: the call could not be run: %s. Call %s again with arguments that "
                     "are a JSON object such as {\"code\": \"print(1 + 1)\"}.",
                     c->bad_args, a->tool_name) < 0)
            return -ENOMEM;
        fprintf(stderr, "execbox agent: the model's tool call was unusable: %s\n", c->bad_args);
        res->content = content;
        return 0;
    }
    /* The model may ask for less time than the policy allows, never more. */
    struct execbox_policy pol = a->policy;
    if (c->timeout >= 1 && c->timeout < pol.timeout)
        pol.timeout = c->timeout;
    struct execbox_request req = {
        .language = "python",
        .code = c->code[0] ? c->code : "\n",
        .policy = &pol,
        .cancel = a->cancel,
    };
    struct execbox_result *r = NULL;
    struct execbox_error err = {0};
    a->attempts++;
    char line[72];
    first_line(c->code, line, sizeof(line));
    if (execbox_executor_run(a->ex, &req, &r, &err) < 0) {
        /* A request the library refuses (oversized code): the model's fault, so it hears. */
        a->failed++;
        fprintf(stderr, "execbox agent: attempt %ld: `%s` -> refused: %s\n", a->attempts, line,
                err.msg);
        if (asprintf(&content, "Error: the code was not run: %s", err.msg) < 0)
            return -ENOMEM;
        free(a->last_error);
        a->last_error = strdup(err.msg);
        res->content = content;
        return 0;
    }
    if (r->error_name && strcmp(r->error_name, "SandboxError") == 0) {
        /* Not the code's fault and nothing the model can fix: stop rather than retry. */
        fail(a, "the sandbox could not run the code: %s",
             r->error_value ? r->error_value : "unknown reason");
        execbox_result_free(r);
        return -ECANCELED;
    }
    /* The record once: its text goes to the model, the value itself into the run log. */
    json_t *rec = NULL;
    char *json = NULL;
    if (execbox_result_to_jansson(r, EXECBOX_JSON_NO_FILE_DATA, &rec, &err) < 0 ||
        !(json = json_dumps(rec, JSON_COMPACT | JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS)))) {
        json_decref(rec);
        execbox_result_free(r);
        return -ENOMEM;
    }
    bool ok = r->exit_code == 0;
    fprintf(stderr, "execbox agent: attempt %ld: `%s` -> exit %d%s%s%s in %.2f s\n", a->attempts,
            line, r->exit_code, r->error_name ? " (" : "", r->error_name ? r->error_name : "",
            r->error_name ? ")" : "", r->execution_time);
    int rc = 0;
    if (ok) {
        content = strdup(json);
    } else {
        a->failed++;
        /* The whole traceback (else the whole stderr) is the error, never a summary. */
        const char *e = r->error_traceback && *r->error_traceback ? r->error_traceback
                        : r->stderr_len                           ? r->stderr_data
                                                                  : NULL;
        free(a->last_error);
        if (r->timed_out)
            rc = asprintf(&a->last_error, "the code was killed after %g %s (time limit)%s%s",
                          pol.timeout, cli_seconds_word(pol.timeout), e ? "\n" : "", e ? e : "");
        else if (e)
            a->last_error = strdup(e);
        else
            rc = asprintf(&a->last_error, "exit code %d with no error output", r->exit_code);
        if (rc < 0)
            a->last_error = NULL;
        rc = asprintf(&content,
                      "Error: the code failed with exit_code %d%s%s%s. The whole result record "
                      "follows; read the traceback in stderr, fix the code and run it again.\n%s",
                      r->exit_code, r->timed_out ? " (timed out)" : "", r->error_name ? ", " : "",
                      r->error_name ? r->error_name : "", json);
        if (rc < 0)
            content = NULL;
    }
    json_t *run = json_pack("{s:s, s:s, s:o*}", "id", c->id, "code", c->code, "result", rec);
    if (run)
        json_array_append_new(a->runs, run);
    free(json);
    execbox_result_free(r);
    if (!content)
        return -ENOMEM;
    res->content = content;
    res->is_error = !ok;
    *ret_ok = ok;
    return 0;
}

/* One API call: the reply parsed, or -1 with the reason printed. */
static int ask(struct agent *a, struct agent_reply *ret)
{
    json_t *req =
        a->prov->request(a->model, a->max_tokens, a->system, a->tools, a->history, a->official);
    char *body =
        req ? json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS)) : NULL;
    json_decref(req);
    if (!body) {
        fail(a, "out of memory");
        return -1;
    }
    struct agent_http_response resp = {0};
    char err[512];
    int r = agent_http_post(&a->http, a->url, a->headers, body, &resp, err, sizeof(err));
    free(body);
    if (r < 0) {
        if (r != -EINTR)
            fail(a, "%s: %s", a->url, err);
        return -1;
    }
    a->http_requests += resp.tries;
    json_error_t jerr;
    json_t *doc = json_loadb(resp.body, resp.len, 0, &jerr);
    if (resp.status != 200) {
        const char *msg = doc ? agent_api_error_message(doc) : NULL;
        const char *what = resp.status == 401   ? "the API rejected the key"
                           : resp.status == 403 ? "the key may not do this"
                           : resp.status == 400 ? "the API refused the request"
                           : resp.status == 404 ? "not found (check --model and --base-url)"
                           : resp.status == 429 || resp.status >= 500
                               ? "the API kept failing"
                               : "the API answered with an error";
        char line[AGENT_ERROR_MAX - 64], tries[32] = "", keyenv[64] = "";
        if (resp.tries > 1)
            snprintf(tries, sizeof(tries), " after %d tries", resp.tries);
        if (resp.status == 401)
            snprintf(keyenv, sizeof(keyenv), "; the key is $%s", a->prov->key_env);
        snprintf(line, sizeof(line), "%s (HTTP %ld%s%s): ", what, resp.status, tries, keyenv);
        append_sanitized(line, sizeof(line),
                         msg        ? msg
                         : resp.len ? resp.body
                                    : "(empty body)",
                         600);
        fail(a, "%s", line);
        json_decref(doc);
        agent_http_response_clear(&resp);
        return -1;
    }
    agent_http_response_clear(&resp);
    if (!doc) {
        fail(a, "the API's reply is not valid JSON (line %d: %s)", jerr.line, jerr.text);
        return -1;
    }
    r = a->prov->parse(doc, ret, err, sizeof(err));
    json_decref(doc);
    if (r < 0) {
        fail(a, "the API's reply is malformed: %s", err);
        return -1;
    }
    a->input_tokens += ret->input_tokens;
    a->output_tokens += ret->output_tokens;
    return 0;
}

enum outcome { OUT_ERROR = -1, OUT_ANSWERED = 0, OUT_MAX_ATTEMPTS, OUT_MAX_TURNS, OUT_INTERRUPTED };

/* The loop. On OUT_ANSWERED / OUT_MAX_* *ret_answer holds the answer (owned). */
static enum outcome loop(struct agent *a, char **ret_answer)
{
    for (;;) {
        if (interrupted)
            return OUT_INTERRUPTED;
        if (a->turns >= a->max_turns) {
            char *ans = NULL;
            if (asprintf(&ans,
                         "I could not compute this exactly: the model used all of its turns "
                         "(--max-turns %ld) without reaching an answer, so I will not give a "
                         "result I have not computed.%s%s\n",
                         a->max_turns, a->last_error ? "\n\nThe last error was:\n" : "",
                         a->last_error ? a->last_error : "") < 0) {
                fail(a, "out of memory");
                return OUT_ERROR;
            }
            *ret_answer = ans;
            return OUT_MAX_TURNS;
        }
        a->turns++;
        fprintf(stderr, "execbox agent: turn %ld: asking %s (%s)\n", a->turns, a->model,
                a->prov->name);
        struct agent_reply reply = {0};
        if (ask(a, &reply) < 0)
            return interrupted ? OUT_INTERRUPTED : OUT_ERROR;
        /* The model's reply goes into the history first, then the results of its calls. */
        if (json_array_append(a->history, reply.message) < 0) {
            agent_reply_clear(&reply);
            fail(a, "out of memory");
            return OUT_ERROR;
        }
        if (reply.n_calls == 0) {
            if (strcmp(reply.stop, "max_tokens") == 0 || strcmp(reply.stop, "length") == 0)
                fprintf(stderr, "execbox agent: warning: the answer was cut at --max-tokens %ld\n",
                        a->max_tokens);
            *ret_answer = reply.text;
            reply.text = NULL;
            agent_reply_clear(&reply);
            if (!*ret_answer)
                fail(a, "the model's reply has neither text nor a tool call");
            return *ret_answer ? OUT_ANSWERED : OUT_ERROR;
        }
        if (reply.text && *reply.text) {
            char line[200];
            first_line(reply.text, line, sizeof(line));
            fprintf(stderr, "execbox agent: model: %s\n", line);
        }
        struct agent_tool_result *res = calloc(reply.n_calls, sizeof(*res));
        bool any_ok = false;
        int failed = res ? 0 : -ENOMEM;
        /* Every call of one reply is run and answered, in order. */
        for (size_t i = 0; !failed && i < reply.n_calls; i++) {
            bool ok = false;
            failed = run_call(a, &reply.calls[i], &res[i], &ok);
            any_ok |= ok;
        }
        if (!failed && a->prov->append_results(a->history, res, reply.n_calls) < 0)
            failed = -ENOMEM;
        for (size_t i = 0; res && i < reply.n_calls; i++)
            free((char *)res[i].content);
        free(res);
        agent_reply_clear(&reply);
        if (failed) {
            if (failed == -ENOMEM)
                fail(a, "out of memory");
            return OUT_ERROR;
        }
        if (interrupted)
            return OUT_INTERRUPTED;
        if (a->failed >= a->max_attempts && !any_ok) {
            char *ans = NULL;
            if (asprintf(&ans,
                         "I could not compute this exactly: the code failed on every attempt "
                         "(%ld failed runs, the limit), so I will not give a result I have not "
                         "computed.\n\nThe last error was:\n%s\n",
                         a->failed, a->last_error ? a->last_error : "(unknown)") < 0) {
                fail(a, "out of memory");
                return OUT_ERROR;
            }
            *ret_answer = ans;
            return OUT_MAX_ATTEMPTS;
        }
    }
}

/* NULL before the history exists (the agent failed while starting). */
static json_t *transcript(const struct agent *a)
{
    if (!a->history || !a->system || !a->tools)
        return NULL;
    return json_pack("{s:s, s:s, s:s, s:O, s:O}", "provider", a->prov->name, "model", a->model,
                     "system", a->system, "tools", a->tools, "messages", a->history);
}

static int save_transcript(struct agent *a, const char *path)
{
    json_t *t = transcript(a);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int r = t && fd >= 0
                ? json_dumpfd(t, fd, JSON_INDENT(2) | JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS))
                : -1;
    if (fd >= 0 && close(fd) < 0)
        r = -1;
    json_decref(t);
    if (r < 0) {
        fail(a, "cannot write the transcript to '%s': %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}

static const char *const outcome_names[] = {"answered", "max_attempts", "max_turns", "interrupted"};

/* The --json object. On OUT_ERROR answer is NULL, stopped is "error" and error says why; the
 * fields the agent had not reached yet are null (transcript, provider, model) or empty. */
static int print_json(const struct agent *a, const char *answer, enum outcome o)
{
    json_t *runs = a->runs ? json_incref(a->runs) : json_array();
    const char *error = o == OUT_ERROR         ? (a->error[0] ? a->error : "the agent failed")
                        : o == OUT_INTERRUPTED ? "interrupted"
                                               : NULL;
    json_t *out =
        json_pack("{s:s?, s:s, s:I, s:I, s:o, s:{s:I, s:I, s:I, s:I}, s:o?, s:s?, s:s?, s:s?}",
                  "answer", answer, "stopped", o == OUT_ERROR ? "error" : outcome_names[o],
                  "attempts", (json_int_t)a->attempts, "failed_runs", (json_int_t)a->failed, "runs",
                  runs, "usage", "input_tokens", (json_int_t)a->input_tokens, "output_tokens",
                  (json_int_t)a->output_tokens, "turns", (json_int_t)a->turns, "http_requests",
                  (json_int_t)a->http_requests, "transcript", transcript(a), "provider",
                  a->prov ? a->prov->name : NULL, "model", a->model, "error", error);
    char *s = out ? json_dumps(out, JSON_INDENT(2) | JSON_ENSURE_ASCII |
                                        JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS))
                  : NULL;
    json_decref(out);
    if (!s)
        return -1;
    printf("%s\n", s);
    free(s);
    return 0;
}

static void agent_clear(struct agent *a)
{
    free(a->url);
    free(a->system);
    json_decref(a->tools);
    json_decref(a->history);
    json_decref(a->runs);
    curl_slist_free_all(a->headers);
    execbox_executor_free(a->ex);
    execbox_cancel_free(a->cancel);
    free(a->last_error);
}

/* Reads the task: the arguments joined by spaces, or stdin for "-". */
static char *read_task(int argc, char **argv)
{
    if (argc == 1 && strcmp(argv[0], "-") == 0) {
        char *t = NULL;
        size_t len = 0;
        int r = cli_read_fd(0, AGENT_TEXT_MAX, &t, &len);
        if (r < 0) {
            fprintf(stderr, "execbox agent: reading the task from stdin: %s\n",
                    execbox_strerror(r));
            return NULL;
        }
        return t;
    }
    size_t n = 1;
    for (int i = 0; i < argc; i++)
        n += strlen(argv[i]) + 1;
    char *t = calloc(1, n), *p = t;
    for (int i = 0; t && i < argc; i++) {
        size_t l = strlen(argv[i]);
        memcpy(p, argv[i], l);
        p += l;
        *p = i + 1 < argc ? ' ' : '\0';
        p += i + 1 < argc;
    }
    return t;
}

enum {
    OPT_PROVIDER = CLI_OPT__LAST + 1,
    OPT_MODEL,
    OPT_BASE_URL,
    OPT_MAX_TOKENS,
    OPT_MAX_ATTEMPTS,
    OPT_MAX_TURNS,
    OPT_SYSTEM,
    OPT_JSON,
    OPT_TRANSCRIPT,
    OPT_RETRIES,
    OPT_RETRY_BASE_MS,
    OPT_CONNECT_TIMEOUT,
    OPT_HTTP_TIMEOUT,
};
static const struct option longopts[] = {
    CLI_SANDBOX_LONGOPTS,
    {"provider", required_argument, NULL, OPT_PROVIDER},
    {"model", required_argument, NULL, OPT_MODEL},
    {"base-url", required_argument, NULL, OPT_BASE_URL},
    {"max-tokens", required_argument, NULL, OPT_MAX_TOKENS},
    {"max-attempts", required_argument, NULL, OPT_MAX_ATTEMPTS},
    {"max-turns", required_argument, NULL, OPT_MAX_TURNS},
    {"system", required_argument, NULL, OPT_SYSTEM},
    {"json", no_argument, NULL, OPT_JSON},
    {"transcript", required_argument, NULL, OPT_TRANSCRIPT},
    {"retries", required_argument, NULL, OPT_RETRIES},
    {"retry-base-ms", required_argument, NULL, OPT_RETRY_BASE_MS},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"http-timeout", required_argument, NULL, OPT_HTTP_TIMEOUT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* What the command line asks for. */
struct agent_opts {
    struct cli_sandbox sb;
    const char *provider, *model, *base_url, *system_file, *transcript_file;
    bool json;
    long max_tokens, max_attempts, max_turns, retries, retry_base;
    double connect_timeout, http_timeout;
};

/* Parses the options of argv into o (its defaults set first); the task is what is left from
 * optind. 0, 1 after --help (the text printed), or -1 with the reason on stderr. */
static int parse_options(int argc, char **argv, struct agent_opts *o)
{
    cli_sandbox_init(&o->sb);
    o->max_tokens = AGENT_DEFAULT_MAX_TOKENS;
    o->max_attempts = AGENT_DEFAULT_MAX_ATTEMPTS;
    o->max_turns = AGENT_DEFAULT_MAX_TURNS;
    o->retries = AGENT_DEFAULT_RETRIES;
    o->retry_base = AGENT_DEFAULT_RETRY_BASE_MS;
    o->connect_timeout = AGENT_DEFAULT_CONNECT_TIMEOUT;
    o->http_timeout = AGENT_DEFAULT_HTTP_TIMEOUT;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, CLI_SANDBOX_SHORTOPTS "h", longopts, NULL)) != -1) {
        int r = cli_sandbox_option(&o->sb, c, optarg);
        if (r < 0)
            return -1;
        if (r > 0)
            continue;
        switch (c) {
        case OPT_PROVIDER: o->provider = optarg; break;
        case OPT_MODEL: o->model = optarg; break;
        case OPT_BASE_URL: o->base_url = optarg; break;
        case OPT_SYSTEM: o->system_file = optarg; break;
        case OPT_JSON: o->json = true; break;
        case OPT_TRANSCRIPT: o->transcript_file = optarg; break;
        case OPT_MAX_TOKENS:
            r = parse_long("max-tokens", optarg, 1, 1000000, &o->max_tokens);
            break;
        case OPT_MAX_ATTEMPTS:
            r = parse_long("max-attempts", optarg, 1, 100, &o->max_attempts);
            break;
        case OPT_MAX_TURNS: r = parse_long("max-turns", optarg, 1, 1000, &o->max_turns); break;
        case OPT_RETRIES: r = parse_long("retries", optarg, 0, 20, &o->retries); break;
        case OPT_RETRY_BASE_MS:
            r = parse_long("retry-base-ms", optarg, 0, 60000, &o->retry_base);
            break;
        case OPT_CONNECT_TIMEOUT:
            r = parse_secs("connect-timeout", optarg, &o->connect_timeout);
            break;
        case OPT_HTTP_TIMEOUT: r = parse_secs("http-timeout", optarg, &o->http_timeout); break;
        case 'h': help(stdout); return 1;
        default: fprintf(stderr, "execbox agent: see 'execbox agent --help'\n"); return -1;
        }
        if (r < 0)
            return -1;
    }
    return 0;
}

/* Everything before the first request: the provider and its key (*key, NULL for a local server
 * that needs none), the model and limits, the task (*task, the caller's to free; argc/argv: the
 * arguments after the options), the URL, the policy, the system prompt, the tool and the
 * history. 0, or -1 with the failure in a. */
static int set_up(struct agent *a, struct agent_opts *o, int argc, char **argv, char **task,
                  const char **key)
{
    struct execbox_error err = {0};
    if (argc <= 0) {
        fail(a, "no task: give it as arguments, or '-' for stdin");
        return -1;
    }
    const char *akey = getenv("ANTHROPIC_API_KEY"), *okey = getenv("OPENAI_API_KEY");
    if (akey && !*akey)
        akey = NULL;
    if (okey && !*okey)
        okey = NULL;
    if (!o->provider)
        o->provider = !akey && okey ? "openai" : "anthropic";
    a->prov = agent_provider_find(o->provider);
    if (!a->prov) {
        fail(a, "--provider: '%s' is not one of anthropic, openai", o->provider);
        return -1;
    }
    *key = a->prov == &agent_anthropic ? akey : okey;
    /* A compatible local server (llama.cpp, Ollama) needs no key; the real APIs do. */
    if (!*key && (a->prov == &agent_anthropic || !o->base_url)) {
        fail(a, "no API key: set %s (the key for --provider %s)%s", a->prov->key_env, a->prov->name,
             a->prov == &agent_openai ? ", or give --base-url of a server that needs none" : "");
        return -1;
    }
    a->model = o->model ? o->model : a->prov->default_model;
    a->official = !o->base_url;
    a->max_tokens = o->max_tokens;
    a->max_attempts = o->max_attempts;
    a->max_turns = o->max_turns;
    a->http = (struct agent_http_options){
        .connect_timeout_ms = (long)(o->connect_timeout * 1000),
        .timeout_ms = (long)(o->http_timeout * 1000),
        .max_retries = (int)o->retries,
        .retry_base_ms = o->retry_base,
        .retry_max_ms = AGENT_RETRY_MAX_MS,
    };
    *task = read_task(argc, argv);
    if (!*task) {
        fail(a, "the task could not be read");
        return -1;
    }
    if (!**task) {
        fail(a, "the task is empty");
        return -1;
    }
    const char *base = o->base_url ? o->base_url : a->prov->default_base;
    size_t blen = strlen(base);
    while (blen && base[blen - 1] == '/')
        blen--;
    if (asprintf(&a->url, "%.*s%s", (int)blen, base, a->prov->path) < 0) {
        a->url = NULL;
        fail(a, "out of memory");
        return -1;
    }
    if (cli_sandbox_policy(&o->sb, &a->policy) < 0) {
        snprintf(a->error, sizeof(a->error), "the sandbox policy is not valid (why is on stderr)");
        return -1;
    }
    if (o->system_file) {
        size_t len = 0;
        int r = cli_read_path(o->system_file, AGENT_TEXT_MAX, &a->system, &len);
        if (r < 0) {
            fail(a, "--system: cannot read '%s': %s", o->system_file, execbox_strerror(r));
            return -1;
        }
    } else if (!(a->system = default_system(&a->policy, o->sb.exec.backend))) {
        fail(a, "out of memory");
        return -1;
    }
    struct execbox_tool_options topt = {.policy = &a->policy, .backend = o->sb.exec.backend};
    char *schema = NULL;
    if (execbox_tool_schema(a->prov->schema, &topt, &schema, &err) < 0) {
        fail(a, "%s", err.msg);
        return -1;
    }
    json_t *tool = json_loads(schema, 0, NULL);
    execbox_free(schema);
    const char *tname =
        a->prov == &agent_anthropic
            ? json_string_value(json_object_get(tool, "name"))
            : json_string_value(json_object_get(json_object_get(tool, "function"), "name"));
    a->tools = tool ? json_pack("[o]", tool) : NULL;
    a->tool_name = tname;
    a->history = a->prov->start(a->system, *task);
    a->runs = json_array();
    if (!a->tools || !a->tool_name || !a->history || !a->runs) {
        fail(a, "out of memory");
        return -1;
    }
    return 0;
}

/* The conversation: libcurl, the headers, the sandbox and its cancel token, the signals, the
 * loop, the transcript and the answer on stdout. The exit status; *o is the outcome. */
static int converse(struct agent *a, struct agent_opts *o, const char *key, enum outcome *out)
{
    int status = EXIT_EXECBOX;
    struct execbox_error err = {0};
    char *answer = NULL;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fail(a, "cannot initialise libcurl");
        return status;
    }
    a->headers = a->prov->headers(key);
    if (!a->headers) {
        fail(a, "out of memory");
        goto cleanup_curl;
    }
    if (cli_sandbox_executor(&o->sb, &a->ex) < 0) {
        snprintf(a->error, sizeof(a->error), "the sandbox could not be opened (why is on stderr)");
        goto cleanup_curl;
    }
    if (execbox_cancel_new(&a->cancel, &err) < 0) {
        fail(a, "%s", err.msg);
        goto cleanup_curl;
    }
    /* A vanished reader of our output must not kill us before the sandbox is torn down. */
    signal(SIGPIPE, SIG_IGN);
    /* Ctrl-C stops the sandbox and the request cleanly; a second one kills at once. */
    cancel_token = a->cancel;
    a->http.stop = &interrupted;
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    *out = loop(a, &answer);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    cancel_token = NULL;
    if (o->transcript_file && save_transcript(a, o->transcript_file) < 0 && *out != OUT_ERROR)
        *out = OUT_ERROR;
    if (*out == OUT_INTERRUPTED) {
        fprintf(stderr, "execbox agent: interrupted\n");
        status = 128 + interrupted;
    } else if (*out != OUT_ERROR) {
        if (*out != OUT_ANSWERED)
            fprintf(stderr, "execbox agent: gave up: %s\n",
                    *out == OUT_MAX_ATTEMPTS ? "too many failed runs" : "too many turns");
        if (o->json) {
            if (print_json(a, answer, *out) < 0) {
                fprintf(stderr, "execbox agent: out of memory\n");
                *out = OUT_ANSWERED; /* nothing more to print */
                goto cleanup_curl;
            }
        } else {
            size_t len = strlen(answer);
            fputs(answer, stdout);
            if (!len || answer[len - 1] != '\n')
                fputc('\n', stdout);
        }
        fflush(stdout);
        status = *out == OUT_ANSWERED ? 0 : 1;
    }
cleanup_curl:
    curl_global_cleanup();
    free(answer);
    return status;
}

int cmd_agent(int argc, char **argv)
{
    struct agent_opts opts = {0};
    int r = parse_options(argc, argv, &opts);
    if (r != 0)
        return r > 0 ? 0 : EXIT_EXECBOX;
    /* From here on every failure is told on stderr, and with --json on stdout too. */
    struct agent a = {0};
    int status = EXIT_EXECBOX;
    enum outcome o = OUT_ERROR;
    char *task = NULL;
    const char *key = NULL;
    if (set_up(&a, &opts, argc - optind, argv + optind, &task, &key) == 0)
        status = converse(&a, &opts, key, &o);
    /* A failure has the success's shape, with stopped "error" (or "interrupted") and error. */
    if (opts.json && (o == OUT_ERROR || o == OUT_INTERRUPTED)) {
        if (print_json(&a, NULL, o) < 0)
            fprintf(stderr, "execbox agent: out of memory\n");
        fflush(stdout);
    }
    free(task);
    agent_clear(&a);
    return status;
}
