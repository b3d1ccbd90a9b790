/* SPDX-License-Identifier: MIT */
/* run.c - `execbox run`: run code once in a fresh sandbox (README.md, docs/result.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "common/cliopts.h"
#include "common/errmap.h"
#include "common/io.h"
#include "execbox/execbox.h"
#include "repl/cell.h"

#define RUN_RICH_INLINE_MAX (16U << 20) /* --rich: image files up to this size come back */

static void help(FILE *f)
{
    fprintf(f,
            "Usage: execbox run [OPTIONS] [FILE | - | -c CODE]\n\n"
            "Runs code once in a fresh sandbox that is destroyed afterwards. Without --json the\n"
            "program's stdout and stderr stream through as they are produced; with --json one\n"
            "JSON result record is printed at the end.\n\n"
            "  -c, --code CODE          the program text\n"
            "  FILE | -                 read the program from a file or stdin\n"
            "  -l, --language NAME      python (default) | javascript | bash (also from the\n"
            "                           file's extension)\n"
            "  -i, --stdin              pass our stdin to the program (default: /dev/null)\n"
            "      --json               print the result record as one JSON object\n"
            "      --pretty             indent the JSON\n"
            "      --rich               run it as a notebook cell (python, jail; see\n"
            "                           docs/sessions.md): the last expression's value and\n"
            "                           display() outputs are printed after the output, and\n"
            "                           figures and the image files the code wrote are saved in\n"
            "                           the current directory (a line on stderr names each);\n"
            "                           with --json the record's results hold them instead\n"
            "      --warm               run in a sandbox started ahead of time, as mcp and serve\n"
            "                           do with --pool (waits for it; the result is the same)\n"
            "  -h, --help               this text\n\n" CLI_SANDBOX_HELP
            "\nExit status: the program's own; 124 timeout; 128+N killed by signal N (137 also\n"
            "for an out-of-memory kill); 125 execbox itself failed (the reason on stderr).\n");
}

/* Streaming the program's output through to ours. */
struct passthrough {
    uint64_t deadline_ns;  /* never block writing past this */
    bool dropped[3];       /* by fd: the reader stalled or went away; stop writing there */
    bool stdout_open_line; /* the program's stdout so far does not end with a newline */
};

static void stream_out(void *ud, enum execbox_stream s, const char *data, size_t len)
{
    struct passthrough *pt = ud;
    int fd = s == EXECBOX_STREAM_STDOUT ? 1 : 2;
    if (pt->dropped[fd] || len == 0)
        return;
    if (fd == 1)
        pt->stdout_open_line = data[len - 1] != '\n';
    /* This runs on the thread that enforces the run's deadline: a reader that stops reading
     * (`execbox run ... | sleep 100`) must not block it past the deadline, and a closed
     * terminal must not stop the run. Either way the output still lands in the result. */
    if (cli_write_until(fd, data, len, pt->deadline_ns) < 0)
        pt->dropped[fd] = true;
}

/* A name for a saved file made from what the guest called it: its last path component, with
 * anything but letters, digits, '.', '-' and '_' made '_' and no leading dot. */
static void safe_name(const char *path, char *buf, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = 0;
    for (const char *p = base; *p && n + 1 < size; p++) {
        unsigned char c = (unsigned char)*p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || (c == '.' && n > 0);
        buf[n++] = ok ? (char)c : '_';
    }
    buf[n] = '\0';
}

/* Writes len bytes to a new file in the current directory named stem.ext, or stem-2.ext,
 * stem-3.ext ... when that exists (never over an existing file, never through a symlink), and
 * with say, says on stderr where. */
static void save_new(const char *stem, const char *ext, const void *data, size_t len,
                     const char *mime, bool say)
{
    char name[320];
    int w = cli_save_new(stem, ext, data, len, name, sizeof(name));
    if (!say)
        return;
    if (w < 0)
        fprintf(stderr, "execbox: %s could not be saved as '%s': %s\n", mime, name, strerror(-w));
    else
        fprintf(stderr, "execbox: %s saved to %s (%zu bytes)\n", mime, name, len);
}

/* One base64 rich output image, saved as execbox-out-N.EXT. */
static void save_rich_image(const char *b64, const char *ext, size_t nth, bool say)
{
    size_t len = 0;
    unsigned char *data = execbox_base64_decode(b64, strlen(b64), &len);
    char mime[32], stem[48];
    snprintf(mime, sizeof(mime), "image/%s", ext);
    if (!data) {
        if (say)
            fprintf(stderr, "execbox: an %s output could not be decoded\n", mime);
        return;
    }
    snprintf(stem, sizeof(stem), "execbox-out-%zu", nth);
    save_new(stem, ext, data, len, mime, say);
    free(data);
}

/* --rich without --json: what repl shows of a cell. Each rich output's text (the last
 * expression's value, display()), its PNG or JPEG saved, a note on stderr for outputs cut or
 * dropped; then the image files the run created or changed in its fresh workspace (which is
 * gone now), saved under their own names. */
static void show_rich(const struct execbox_result *res, const struct passthrough *pt)
{
    bool say = !pt->dropped[2]; /* a stalled reader of our stderr would block us for good */
    if (!pt->dropped[1]) {
        fflush(stdout);
        if (pt->stdout_open_line)
            fputc('\n', stdout);
    }
    size_t images = 0;
    for (size_t k = 0; k < res->n_results; k++) {
        const struct execbox_rich *x = &res->results[k];
        /* A figure's text is only its repr ("<Figure size ...>"): the saved file says more. */
        if (x->text && !(x->png || x->jpeg) && !pt->dropped[1]) {
            size_t n = strlen(x->text);
            fwrite(x->text, 1, n, stdout);
            if (n == 0 || x->text[n - 1] != '\n')
                fputc('\n', stdout);
        }
        if (x->png)
            save_rich_image(x->png, "png", ++images, say);
        if (x->jpeg)
            save_rich_image(x->jpeg, "jpeg", ++images, say);
    }
    fflush(stdout);
    char note[256];
    for (unsigned i = 0; say && cli_rich_note(res, i, note, sizeof(note)); i++)
        fprintf(stderr, "execbox: note: %s\n", note);
    for (size_t i = 0; i < res->n_files; i++) {
        const struct execbox_file *f = &res->files[i];
        if (!f->data || f->origin == EXECBOX_FILE_INPUT)
            continue;
        char base[256];
        safe_name(f->path, base, sizeof(base));
        char *dot = strrchr(base, '.');
        const char *ext = "";
        if (dot && dot != base) {
            *dot = '\0';
            ext = dot + 1;
        }
        save_new(base, ext, f->data, f->data_len, f->mime, say);
    }
}

/* The run's cancellation token, fired by SIGINT, SIGTERM or SIGHUP so that an interrupted run
 * still kills its sandbox and removes its temp files (dying at once would leave both). */
static struct execbox_cancel *volatile interrupt_token;
static volatile sig_atomic_t interrupt_signal;

static void on_interrupt(int sig)
{
    interrupt_signal = sig;
    execbox_cancel_fire(interrupt_token); /* async-signal-safe: one write(2) */
}

static int catch_interrupts(struct execbox_cancel *c)
{
    interrupt_token = c;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0 ||
        sigaction(SIGHUP, &sa, NULL) < 0)
        return -1;
    return 0;
}

static const char *language_from_path(const char *path)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (!dot)
        return NULL;
    if (strcmp(dot, ".py") == 0)
        return "python";
    if (strcmp(dot, ".js") == 0 || strcmp(dot, ".mjs") == 0 || strcmp(dot, ".cjs") == 0)
        return "javascript";
    if (strcmp(dot, ".sh") == 0 || strcmp(dot, ".bash") == 0)
        return "bash";
    return NULL;
}

/* --warm: starts one warm sandbox for this run's policy and language and waits for it (30 s at
 * most). Where none can start (a language without a warm start, a host workspace on the jail)
 * the run goes cold, as it would through a pool. */
static void wait_warm(struct execbox_executor *ex, const struct execbox_policy *policy,
                      const char *language)
{
    struct execbox_error err = {0};
    if (execbox_executor_prewarm(ex, policy, language ? language : "python", &err) < 0)
        return;
    struct execbox_pool_stats st;
    for (int i = 0; i < 3000; i++) {
        execbox_executor_pool_stats(ex, &st);
        if (st.ready > 0 || st.failed > 0)
            return;
        usleep(10 * 1000);
    }
}

/* The long options besides the sandbox's. */
enum { OPT_JSON = CLI_OPT__LAST + 1, OPT_PRETTY, OPT_WARM, OPT_RICH };
static const struct option longopts[] = {
    CLI_SANDBOX_LONGOPTS,
    {"code", required_argument, NULL, 'c'},
    {"language", required_argument, NULL, 'l'},
    {"stdin", no_argument, NULL, 'i'},
    {"json", no_argument, NULL, OPT_JSON},
    {"pretty", no_argument, NULL, OPT_PRETTY},
    {"warm", no_argument, NULL, OPT_WARM},
    {"rich", no_argument, NULL, OPT_RICH},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* What the command line asks for. */
struct run_opts {
    struct cli_sandbox sb;
    const char *code_arg, *language, *path; /* path: a FILE, "-" for stdin, or NULL */
    bool json, pretty, pass_stdin, warm, rich;
};

/* Parses argv into o and checks the combination (the language resolved from the FILE's name
 * when not given). 0, 1 after --help (the text printed), or -1 with the reason on stderr. */
static int parse_options(int argc, char **argv, struct run_opts *o)
{
    cli_sandbox_init(&o->sb);
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, CLI_SANDBOX_SHORTOPTS "c:l:ih", longopts, NULL)) != -1) {
        int r = cli_sandbox_option(&o->sb, c, optarg);
        if (r < 0)
            return -1;
        if (r > 0)
            continue;
        switch (c) {
        case 'c': o->code_arg = optarg; break;
        case 'l': o->language = optarg; break;
        case 'i': o->pass_stdin = true; break;
        case OPT_JSON: o->json = true; break;
        case OPT_PRETTY: o->json = o->pretty = true; break;
        case OPT_RICH: o->rich = true; break;
        case OPT_WARM:
            o->warm = true;
            o->sb.exec.pool_size = 1;
            break;
        case 'h': help(stdout); return 1;
        default: fprintf(stderr, "execbox run: see 'execbox run --help'\n"); return -1;
        }
    }
    o->path = optind < argc ? argv[optind++] : NULL;
    if (optind < argc) {
        fprintf(stderr, "execbox run: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (o->code_arg && o->path) {
        fprintf(stderr, "execbox run: give the code with -c or as a FILE, not both\n");
        return -1;
    }
    if (!o->code_arg && !o->path) {
        fprintf(stderr, "execbox run: no code: give -c CODE, a FILE, or - for stdin\n");
        return -1;
    }
    if (o->path && strcmp(o->path, "-") == 0 && o->pass_stdin) {
        fprintf(stderr, "execbox run: stdin cannot be both the program and its input\n");
        return -1;
    }
    if (!o->language)
        o->language = language_from_path(o->path);
    if (o->language && !execbox_language_name(o->language)) {
        char names[128];
        execbox_language_list(names, sizeof(names));
        fprintf(stderr, "execbox run: unknown language '%s' (%s)\n", o->language, names);
        return -1;
    }
    return 0;
}

/* What a finished run shows: its record (--json), or the notes on stderr (sandbox failure,
 * timeout, memory, CPU, a cold --warm run, an interrupt), with --rich's images saved. The exit
 * status. */
static int report(const struct run_opts *o, const struct execbox_result *res,
                  const struct execbox_policy *policy, struct passthrough *pt,
                  struct execbox_executor *ex)
{
    struct execbox_error err = {0};
    bool sandbox_failed = res->error_name && strcmp(res->error_name, "SandboxError") == 0;
    if (o->rich && !o->json && !sandbox_failed)
        show_rich(res, pt);
    if (o->json) {
        char *s = NULL;
        if (execbox_result_to_json(res, o->pretty ? EXECBOX_JSON_PRETTY : 0, &s, &err) < 0) {
            cli_error("run", &err);
            return EXIT_EXECBOX;
        }
        printf("%s\n", s);
        fflush(stdout);
        execbox_free(s);
    } else if (pt->dropped[2]) {
        /* Our stderr's reader stopped reading: a note there would block us for good. */
    } else if (sandbox_failed) {
        fprintf(stderr, "execbox: the sandbox could not run the code: %s\n", res->error_value);
    } else if (res->timed_out) {
        fprintf(stderr, "execbox: timed out after %g %s; the sandbox was killed\n", policy->timeout,
                cli_seconds_word(policy->timeout));
    } else if (res->oom_killed) {
        fprintf(stderr, "execbox: killed for exceeding the memory limit\n");
    } else if (res->killed_reason == EXECBOX_KILLED_CPU) {
        fprintf(stderr, "execbox: killed for exceeding the CPU time limit\n");
    }
    if (o->warm) {
        struct execbox_pool_stats st;
        execbox_executor_pool_stats(ex, &st);
        if (st.hits == 0)
            fprintf(stderr, "execbox: note: no warm sandbox could be started for this run (see "
                            "docs/pool.md); it ran cold\n");
    }
    int status = sandbox_failed ? EXIT_EXECBOX : res->exit_code;
    if (interrupt_signal && res->killed_reason == EXECBOX_KILLED_CANCELLED) {
        /* As a shell reports a command killed by that signal. */
        if (!o->json && !pt->dropped[2])
            fprintf(stderr, "execbox: interrupted; the sandbox was killed\n");
        status = 128 + interrupt_signal;
    }
    return status;
}

int cmd_run(int argc, char **argv)
{
    struct run_opts o = {0};
    int pr = parse_options(argc, argv, &o);
    if (pr != 0)
        return pr > 0 ? 0 : EXIT_EXECBOX;
    char *code = NULL, *in = NULL;
    size_t code_len = 0, in_len = 0;
    if (o.path) {
        int r = cli_read_path(o.path, EXECBOX_CODE_MAX, &code, &code_len);
        if (r < 0) {
            fprintf(stderr, "execbox run: cannot read '%s': %s\n", o.path, execbox_strerror(r));
            return EXIT_EXECBOX;
        }
    }
    if (o.pass_stdin) {
        int r = cli_read_fd(0, EXECBOX_STDIN_MAX, &in, &in_len);
        if (r < 0) {
            fprintf(stderr, "execbox run: reading stdin: %s\n", execbox_strerror(r));
            free(code);
            return EXIT_EXECBOX;
        }
    }
    struct execbox_policy policy;
    struct execbox_executor *ex = NULL;
    struct execbox_cancel *cancel = NULL;
    int status = EXIT_EXECBOX;
    if (cli_sandbox_policy(&o.sb, &policy) < 0 || cli_sandbox_executor(&o.sb, &ex) < 0)
        goto out;
    if (o.warm)
        wait_warm(ex, &policy, o.language);
    /* A vanished reader of our output must not kill us before the sandbox is torn down. */
    signal(SIGPIPE, SIG_IGN);
    struct execbox_error err = {0};
    if (execbox_cancel_new(&cancel, &err) < 0 || catch_interrupts(cancel) < 0) {
        cli_error("run", &err);
        goto out;
    }
    /* A stalled reader may hold the run a little past its own deadline, no more. */
    struct passthrough pt = {.deadline_ns =
                                 cli_now_ns() + (uint64_t)(policy.timeout * 1e9) + 250000000ULL};
    struct execbox_request req = {
        .language = o.language,
        .code = code ? code : o.code_arg,
        .code_len = code ? code_len : strlen(o.code_arg),
        .stdin_data = in ? in : NULL,
        .stdin_len = in_len,
        .policy = &policy,
        .on_output = o.json ? NULL : stream_out,
        .userdata = &pt,
        .cancel = cancel,
        .rich_results = o.rich,
        /* --rich: the images the code wrote come back, to be saved here. */
        .inline_files_max = o.rich && !o.json ? RUN_RICH_INLINE_MAX : 0,
    };
    if (req.code_len == 0) {
        req.code = "\n";
        req.code_len = 1;
    }
    struct execbox_result *res = NULL;
    int rr = execbox_executor_run(ex, &req, &res, &err);
    if (rr < 0) {
        cli_error("run", &err);
        status = errmap_answer(ERRMAP_SCOPE_RUN, rr, &err)->exit_code;
        goto out;
    }
    status = report(&o, res, &policy, &pt, ex);
    execbox_result_free(res);
out:
    interrupt_token = NULL;
    execbox_cancel_free(cancel);
    execbox_executor_free(ex);
    free(code);
    free(in);
    return status;
}
