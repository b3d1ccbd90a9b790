/* SPDX-License-Identifier: MIT */
/* repl.c - `execbox repl`: a Python session in the terminal, so that a person can feel what a
 * model with `execbox mcp --stateful` feels. Lines are edited with libedit (when stdin is a
 * terminal) and gathered into cells by Python's REPL rules (cell.h); each cell runs in the
 * session, its output streams through as it is produced, the main result's text follows,
 * other rich outputs become one-line notes and images are saved to the current directory.
 *
 * Signals: SIGINT while a cell runs cancels the cell (its fork is killed and the state rolls
 * back); at the prompt it discards the line. SIGTERM and SIGHUP cancel the cell and end the
 * repl. The handler only fires the cell's token and writes a self-pipe, which the input loop
 * polls next to stdin (libedit's callback interface, so no read ever blocks a signal). */
#include <editline/readline.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cell.h"
#include "common/cliopts.h"
#include "common/io.h"
#include "common/onesession.h"
#include "common/surface.h"
#include "execbox/execbox.h"

#define REPL_LINE_MAX (1U << 20)         /* longest line read without a terminal */
#define REPL_STALL_GRACE_NS 250000000ULL /* a stalled terminal may hold a cell this much longer */

static void help(FILE *f)
{
    fprintf(f,
            "Usage: execbox repl [OPTIONS]\n\n"
            "An interactive Python session in a sandbox: variables, imports and definitions\n"
            "persist from one cell to the next, and a cell that fails is rolled back (the\n"
            "variables are as before it). A line ending with ':' or inside open brackets\n"
            "continues the cell; an empty line ends it. Output streams as it is produced; the\n"
            "value of a cell's last expression is printed; images are saved to the current\n"
            "directory (execbox-out-CELL-N.png). A cell has no stdin: input() raises EOFError.\n\n"
            "  %%reset                   start over in a new session\n"
            "  %%exit, Ctrl-D            leave\n"
            "  exit(), quit(), sys.exit(N)  leave with status N (default 0)\n"
            "  Ctrl-C                   cancel the running cell (or discard the line)\n\n"
            "      --preload MODULES    import these when a session starts, e.g. numpy,pandas\n"
            "      --session-idle SECONDS  end the session after this long without a cell\n"
            "                           (default 600; the next cell starts a new one)\n"
            "  -h, --help               this text\n\n"
            "Sandbox options (the timeout is each cell's; the rest are the session's):\n"
            "  -b, --backend jail       the only backend with sessions\n" CLI_SANDBOX_HELP_LIMITS
                CLI_SANDBOX_HELP_FILES
            "\nA session runs in the jail with a fresh workspace and no network: --workspace,\n"
            "--network, --allow-host and the other backends' flags are refused.\n\n"
            "Exit status: 0; with stdin not a terminal, 1 when any cell failed; N after\n"
            "sys.exit(N); 125 the repl failed (bad flag, no session); 128+N signal N.\n");
}

/* Why the repl refuses one of the shared sandbox flags, or NULL when it takes it. */
static const char *refused(int opt, const char *arg)
{
    switch (opt) {
    case 'b': return strcmp(arg, "jail") == 0 ? NULL : "only the jail backend has sessions";
    case 'w': return "a session has a fresh workspace of its own";
    case CLI_OPT_NETWORK:
    case CLI_OPT_ALLOW_HOST: return "a session has no network";
    case CLI_OPT_DOCKER_HOST:
    case CLI_OPT_IMAGE:
    case CLI_OPT_RUNTIME:
    case CLI_OPT_PULL:
    case CLI_OPT_REMOTE:
    case CLI_OPT_REMOTE_TOKEN:
    case CLI_OPT_E2B_TEMPLATE:
    case CLI_OPT_GVISOR_PLATFORM: return "a session runs in the jail, not that backend";
    default: return NULL;
    }
}

/* ---- signals ----------------------------------------------------------------------------------
 */

/* The handler has no other way to reach the repl: the running cell's token, the self-pipe and
 * whether to leave are the only globals. */
static struct execbox_cancel *volatile cell_token;
static int sig_wr = -1;
static volatile sig_atomic_t quit_signal;

static void on_signal(int sig)
{
    int saved = errno;
    if (sig != SIGINT)
        quit_signal = sig;
    execbox_cancel_fire(cell_token); /* async-signal-safe: one write(2); accepts NULL */
    char c = (char)sig;
    if (sig_wr >= 0)
        (void)!write(sig_wr, &c, 1);
    errno = saved;
}

static void drain_fd(int fd)
{
    char buf[64];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
}

/* ---- input ------------------------------------------------------------------------------------
 */

/* libedit's callback interface hands a finished line to a function without user data; it is
 * parked here until read_line() takes it. */
static char *edit_line;
static bool edit_done;

static void on_edit_line(char *line)
{
    edit_line = line;
    edit_done = true;
    rl_callback_handler_remove();
}

struct repl {
    struct execbox_executor *ex;
    struct execbox_policy policy;
    struct execbox_session_options so;
    struct onesession one; /* the session, and why the last one ended unasked */
    bool tty;              /* stdin is a terminal: prompts and line editing */
    int sig_rd;
    FILE *in; /* stdin without a terminal */
};

enum read_status { READ_LINE, READ_EOF, READ_INTERRUPT };

/* One line without its newline into *ret (free with free()). */
static enum read_status read_line(struct repl *r, const char *prompt, char **ret)
{
    if (!r->tty) {
        char *line = NULL;
        size_t cap = 0;
        errno = 0;
        ssize_t n = getline(&line, &cap, r->in);
        if (n < 0 || quit_signal) {
            free(line);
            return READ_EOF;
        }
        if ((size_t)n > REPL_LINE_MAX) {
            fprintf(stderr, "execbox repl: a line of %zd bytes is over the limit of %u\n", n,
                    REPL_LINE_MAX);
            free(line);
            return READ_EOF;
        }
        if (n > 0 && line[n - 1] == '\n')
            line[n - 1] = '\0';
        *ret = line;
        return READ_LINE;
    }
    drain_fd(r->sig_rd); /* a Ctrl-C from before this prompt is spent */
    edit_done = false;
    edit_line = NULL;
    rl_callback_handler_install(prompt, on_edit_line);
    while (!edit_done) {
        struct pollfd pf[2] = {{.fd = r->sig_rd, .events = POLLIN}, {.fd = 0, .events = POLLIN}};
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pf[0].revents) {
            drain_fd(r->sig_rd);
            rl_replace_line("", 0);
            rl_callback_handler_remove();
            if (quit_signal)
                return READ_EOF;
            fputs("\nKeyboardInterrupt\n", stdout);
            fflush(stdout);
            return READ_INTERRUPT;
        }
        if (pf[1].revents & POLLIN)
            rl_callback_read_char();
        else if (pf[1].revents) { /* hang-up or error without data */
            rl_callback_handler_remove();
            return READ_EOF;
        }
    }
    if (!edit_line) {
        fputs("\n", stdout);
        fflush(stdout);
        return READ_EOF;
    }
    if (*edit_line)
        add_history(edit_line);
    *ret = edit_line;
    return READ_LINE;
}

/* A growing cell of at most EXECBOX_CODE_MAX bytes. */
struct cell {
    char *s;
    size_t len, cap;
};

static int cell_add(struct cell *c, const char *line)
{
    size_t n = strlen(line);
    size_t need = c->len + (c->len ? 1 : 0) + n + 1;
    if (need > EXECBOX_CODE_MAX)
        return -EFBIG;
    if (need > c->cap) {
        size_t cap = c->cap ? c->cap : 256;
        while (cap < need)
            cap *= 2;
        char *ns = realloc(c->s, cap);
        if (!ns)
            return -ENOMEM;
        c->s = ns;
        c->cap = cap;
    }
    if (c->len)
        c->s[c->len++] = '\n';
    memcpy(c->s + c->len, line, n + 1);
    c->len += n;
    return 0;
}

/* ---- output -----------------------------------------------------------------------------------
 */

struct stream {
    uint64_t deadline_ns;
    bool dropped[3];
    bool wrote_stderr;
    bool ends_in_newline; /* the last byte written was '\n' (or nothing was) */
};

static void on_output(void *ud, enum execbox_stream s, const char *data, size_t len)
{
    struct stream *st = ud;
    int fd = s == EXECBOX_STREAM_STDOUT ? 1 : 2;
    if (len == 0 || st->dropped[fd])
        return;
    if (fd == 2)
        st->wrote_stderr = true;
    st->ends_in_newline = data[len - 1] == '\n';
    /* This runs on the thread that enforces the cell's deadline: a terminal that stops
     * reading must not hold it for long. */
    if (cli_write_until(fd, data, len, st->deadline_ns) < 0)
        st->dropped[fd] = true;
}

/* Saves one base64 image as execbox-out-CELL-N.EXT in the current directory (never over an
 * existing file: -2, -3 ... are tried next) and says where. */
static void save_image(const char *b64, const char *ext, unsigned long long cell, size_t nth)
{
    size_t len = 0;
    unsigned char *data = execbox_base64_decode(b64, strlen(b64), &len);
    if (!data) {
        fprintf(stderr, "(an image/%s output could not be decoded)\n", ext);
        return;
    }
    char stem[64], name[96];
    snprintf(stem, sizeof(stem), "execbox-out-%llu-%zu", cell, nth);
    int w = cli_save_new(stem, ext, data, len, name, sizeof(name));
    if (w < 0)
        fprintf(stderr, "(an image/%s output could not be saved as '%s': %s)\n", ext, name,
                strerror(-w));
    else
        printf("(image/%s saved to %s, %zu bytes)\n", ext, name, len);
    free(data);
}

/* One line naming a rich output's forms that the terminal does not show. */
static void rich_note(const struct execbox_rich *x, const char *label)
{
    const char *const forms[] = {x->html, x->markdown, x->svg, x->latex, x->json, x->javascript};
    static const char *const mimes[] = {"text/html",  "text/markdown",    "image/svg+xml",
                                        "text/latex", "application/json", "application/javascript"};
    char line[256] = "";
    size_t n = 0;
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
        if (forms[i] && n < sizeof(line))
            n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s (%zu bytes)", n ? ", " : "",
                                  mimes[i], strlen(forms[i]));
    if (n)
        printf("(%s also as %s)\n", label, line);
}

/* Prints text followed by a newline unless it has one. */
static void print_text(const char *s)
{
    size_t n = strlen(s);
    fwrite(s, 1, n, stdout);
    if (n == 0 || s[n - 1] != '\n')
        fputc('\n', stdout);
}

/* The result's error is only the name of a non-zero exit (no exception, no kill). */
static bool exit_status_only(const struct execbox_result *res)
{
    return res->error_name && strcmp(res->error_name, "ExitStatus") == 0;
}

/* The code ended itself with a non-zero status (sys.exit(N), os._exit(N)): no exception, no
 * kill, no signal. */
static bool exited(const struct execbox_result *res)
{
    return res->exit_code != 0 && (!res->error_name || exit_status_only(res)) && !res->timed_out &&
           !res->oom_killed && res->signal == 0 && res->killed_reason == EXECBOX_KILLED_NONE;
}

static void show(const struct execbox_result *res, const struct stream *st, double timeout)
{
    fflush(stdout);
    if (!st->ends_in_newline) /* keep our lines off the end of the cell's last line */
        fputc('\n', stdout);
    /* The traceback is in stderr when the interpreter printed it there; kills and sandbox
     * failures get their own line below. */
    bool killed = res->timed_out || res->oom_killed || res->killed_reason != EXECBOX_KILLED_NONE;
    if (res->error_name && !st->wrote_stderr && !killed && !exit_status_only(res) &&
        strcmp(res->error_name, "SandboxError") != 0) {
        if (res->error_traceback && *res->error_traceback)
            fprintf(stderr, "%s%s", res->error_traceback,
                    res->error_traceback[strlen(res->error_traceback) - 1] == '\n' ? "" : "\n");
        else
            fprintf(stderr, "%s: %s\n", res->error_name, res->error_value ? res->error_value : "");
    }
    size_t images = 0, others = 0;
    for (size_t k = 0; k < res->n_results; k++) {
        const struct execbox_rich *x = &res->results[k];
        char label[32];
        if (x->is_main_result)
            snprintf(label, sizeof(label), "the result");
        else
            snprintf(label, sizeof(label), "output %zu", ++others);
        /* A figure's text is only its repr ("<Figure size ...>"): the saved file says more. */
        if (x->text && !(x->png || x->jpeg))
            print_text(x->text);
        if (x->png)
            save_image(x->png, "png", (unsigned long long)res->execution_count, ++images);
        if (x->jpeg)
            save_image(x->jpeg, "jpeg", (unsigned long long)res->execution_count, ++images);
        rich_note(x, label);
    }
    char note[256];
    for (unsigned i = 0; cli_rich_note(res, i, note, sizeof(note)); i++)
        printf("(%s)\n", note);
    fflush(stdout);
    if (res->timed_out)
        fprintf(stderr, "(timed out after %g s)\n", timeout);
    else if (res->oom_killed)
        fprintf(stderr, "(killed: the session's memory limit was reached)\n");
    else if (res->killed_reason == EXECBOX_KILLED_CANCELLED)
        fprintf(stderr, "KeyboardInterrupt: the cell was cancelled\n");
    else if (res->killed_reason == EXECBOX_KILLED_OUTPUT_LIMIT)
        fprintf(stderr, "(killed for writing too much output)\n");
    else if (res->killed_reason == EXECBOX_KILLED_CPU)
        fprintf(stderr, "(killed: the CPU time limit was reached)\n");
    else if (res->error_name && strcmp(res->error_name, "SandboxError") == 0)
        fprintf(stderr, "(the sandbox could not run the cell: %s)\n",
                res->error_value ? res->error_value : "");
    else if (res->error_name && strcmp(res->error_name, "EOFError") == 0 && res->error_value &&
             strcmp(res->error_value, "EOF when reading a line") == 0)
        fprintf(stderr, "(input() cannot read here: a cell has no stdin; put the value in the "
                        "code)\n");
    if (res->rolled_back && exited(res))
        fprintf(stderr, "exit status %d (rolled back: a cell that exits non-zero is undone)\n",
                res->exit_code);
    else if (res->rolled_back)
        fprintf(stderr, "(rolled back)\n");
}

/* ---- the session ------------------------------------------------------------------------------
 */

static int session_start(struct repl *r)
{
    struct execbox_error err = {0};
    if (onesession_open(&r->one, &err) < 0) {
        fprintf(stderr, "execbox repl: cannot start a session: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Why an earlier session's state was lost, in words for the user. */
static void lost_text(const struct onesession_lost *l, char *out, size_t n)
{
    switch (l->why) {
    case ONESESSION_IDLE: snprintf(out, n, "it expired after %g s without a cell", l->idle); return;
    case ONESESSION_LIFETIME: snprintf(out, n, "it reached its maximum lifetime"); return;
    case ONESESSION_PROCESS: snprintf(out, n, "its state process ended"); return;
    case ONESESSION_PREVIOUS: snprintf(out, n, "the session ended with the previous cell"); return;
    case ONESESSION_PREVIOUS_OOM:
        snprintf(out, n, "the session ended with the previous cell, which ran out of memory");
        return;
    case ONESESSION_NOT_LOST: break;
    }
    if (n)
        out[0] = '\0';
}

/* One attempt of a cell: its output streams from here, and Ctrl-C cancels it. */
struct attempt {
    struct repl *r;
    struct stream *st;
    struct execbox_cancel *cancel;
};

/* The holder's events: a lost state told, the cell armed before each attempt. */
static void on_session_event(void *ud, enum onesession_event ev, const struct onesession_lost *l)
{
    struct attempt *a = ud;
    if (ev == ONESESSION_ATTEMPT) {
        if (l) {
            char why[160];
            lost_text(l, why, sizeof(why));
            fprintf(stderr, "(the session's state was lost: %s; this cell runs in a new session)\n",
                    why);
        }
        drain_fd(a->r->sig_rd);
        a->st->deadline_ns =
            cli_now_ns() + (uint64_t)(a->r->policy.timeout * 1e9) + REPL_STALL_GRACE_NS;
        cell_token = a->cancel;
    } else if (ev == ONESESSION_RAN) {
        cell_token = NULL;
    }
}

/* How a cell ended, for the loop: whether it failed, and whether its code asked to leave. */
struct cell_end {
    bool failed;
    bool leave;
    int status; /* the code's exit status when leave */
};

/* Runs one cell; a session that ended is replaced first, and the user told. -1 when no
 * session can be started. */
static int run_cell(struct repl *r, const char *code, size_t len, struct cell_end *end)
{
    *end = (struct cell_end){.failed = true};
    struct execbox_cancel *cancel = NULL;
    struct execbox_error err = {0};
    if (execbox_cancel_new(&cancel, &err) < 0) {
        fprintf(stderr, "execbox repl: %s\n", err.msg);
        return 0;
    }
    struct stream st = {.ends_in_newline = true};
    struct execbox_request req = {
        .code = code,
        .code_len = len,
        .policy = &r->policy,
        .on_output = on_output,
        .userdata = &st,
        .cancel = cancel,
    };
    struct attempt at = {.r = r, .st = &st, .cancel = cancel};
    r->one.on_event = on_session_event;
    r->one.ud = &at;
    struct execbox_result *res = NULL;
    struct onesession_cell cell;
    int ret = 0;
    int rr = onesession_run(&r->one, &req, &res, &cell, &err);
    r->one.on_event = NULL;
    if (rr < 0 && cell.start_failed) {
        fprintf(stderr, "execbox repl: cannot start a session: %s\n", err.msg);
        ret = -1;
    } else if (rr < 0) {
        fprintf(stderr, "execbox repl: %s\n", err.msg);
    }
    if (rr == 0) {
        show(res, &st, r->policy.timeout);
        end->failed = res->exit_code != 0 || res->error_name || res->timed_out || res->oom_killed ||
                      res->signal || res->killed_reason != EXECBOX_KILLED_NONE;
        /* As in Python's REPL, SystemExit leaves: exit(0) looks like any cell that worked, so
         * only a cell that is nothing but the call counts then. */
        end->leave = exited(res) || (!end->failed && repl_cell_is_exit(code, len));
        end->status = res->exit_code;
        if (cell.ended)
            fprintf(stderr, "(the session ended; the next cell starts a new one)\n");
        execbox_result_free(res);
    }
    execbox_cancel_free(cancel);
    return ret;
}

/* ---- the loop ---------------------------------------------------------------------------------
 */

static bool blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r')
            return false;
    return true;
}

/* Reads and runs cells until EOF, %exit, exit() or SIGTERM/SIGHUP. The exit status: the
 * code's after sys.exit(N); without a terminal, 1 when a cell failed (a script's caller must
 * see that); else 0. */
static int loop(struct repl *r)
{
    struct cell c = {0};
    struct cell_end end = {0};
    bool any_failed = false;
    int status = 0;
    while (!quit_signal) {
        char *line = NULL;
        enum read_status rs = read_line(r, c.len ? "... " : ">>> ", &line);
        if (rs == READ_INTERRUPT) {
            c.len = 0;
            continue;
        }
        if (rs == READ_EOF) {
            /* Piped input runs what it ended with; at a terminal Ctrl-D just leaves. */
            if (!r->tty && c.len && !blank(c.s)) {
                if (run_cell(r, c.s, c.len, &end) < 0)
                    status = EXIT_EXECBOX;
                any_failed |= end.failed;
                if (end.leave)
                    status = end.status;
            }
            break;
        }
        if (c.len == 0) {
            const char *p = line + strspn(line, " \t");
            size_t n = strcspn(p, " \t\r");
            if (*p == '%') {
                bool rest_blank = blank(p + n);
                if (n == 5 && strncmp(p, "%exit", 5) == 0 && rest_blank) {
                    free(line);
                    break;
                }
                if (n == 6 && strncmp(p, "%reset", 6) == 0 && rest_blank) {
                    onesession_close(&r->one);
                    if (session_start(r) < 0) {
                        free(line);
                        status = EXIT_EXECBOX;
                        break;
                    }
                    printf("(new session: every variable is gone)\n");
                } else {
                    printf("(unknown command '%.*s': %%reset, %%exit)\n", (int)(n > 40 ? 40 : n),
                           p);
                }
                fflush(stdout);
                free(line);
                continue;
            }
            if (blank(line)) {
                free(line);
                continue;
            }
        }
        int e = cell_add(&c, line);
        free(line);
        if (e < 0) {
            fprintf(stderr, "execbox repl: the cell is over %u bytes; discarded\n",
                    EXECBOX_CODE_MAX);
            c.len = 0;
            continue;
        }
        if (repl_cell_continues(c.s, c.len))
            continue;
        int rr = run_cell(r, c.s, c.len, &end);
        c.len = 0;
        if (rr < 0) {
            status = EXIT_EXECBOX;
            break;
        }
        any_failed |= end.failed;
        if (end.leave) {
            status = end.status;
            break;
        }
    }
    free(c.s);
    if (quit_signal)
        status = 128 + quit_signal;
    else if (status == 0 && any_failed && !r->tty)
        status = 1;
    return status;
}

int cmd_repl(int argc, char **argv)
{
    enum { OPT_SESSION_IDLE = CLI_OPT__LAST + 1 };
    static const struct option longopts[] = {
        CLI_SANDBOX_LONGOPTS,
        {"preload", required_argument, NULL, CLI_OPT_PRELOAD},
        {"session-idle", required_argument, NULL, OPT_SESSION_IDLE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cli_sandbox sb;
    cli_sandbox_init(&sb);
    struct repl r = {.sig_rd = -1, .in = stdin};
    int c;
    optind = 1;
    int li = -1;
    while ((c = getopt_long(argc, argv, CLI_SANDBOX_SHORTOPTS "h", longopts, &li)) != -1) {
        const char *why = refused(c, optarg);
        if (why) {
            /* li is set only for a long option; the short ones are -b and -w. */
            if (c == 'b')
                fprintf(stderr, "execbox repl: --backend '%s' cannot be used: %s\n", optarg, why);
            else if (li >= 0)
                fprintf(stderr, "execbox repl: --%s cannot be used: %s\n", longopts[li].name, why);
            else
                fprintf(stderr, "execbox repl: -%c cannot be used: %s\n", c, why);
            return EXIT_EXECBOX;
        }
        li = -1;
        int o = cli_sandbox_option(&sb, c, optarg);
        if (o < 0)
            return EXIT_EXECBOX;
        if (o > 0)
            continue;
        switch (c) {
        case OPT_SESSION_IDLE: {
            char *end = NULL;
            double v = strtod(optarg, &end);
            if (!*optarg || *end || !(v > 0) || v > EXECBOX_SESSION_LIFETIME_DEFAULT) {
                fprintf(stderr,
                        "execbox repl: --session-idle: '%s' is not a number of seconds (0 to "
                        "%g]\n",
                        optarg, EXECBOX_SESSION_LIFETIME_DEFAULT);
                return EXIT_EXECBOX;
            }
            r.so.idle_timeout = v;
            break;
        }
        case 'h': help(stdout); return 0;
        default: fprintf(stderr, "execbox repl: see 'execbox repl --help'\n"); return EXIT_EXECBOX;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "execbox repl: unexpected argument '%s'\n", argv[optind]);
        return EXIT_EXECBOX;
    }
    if (cli_sandbox_policy(&sb, &r.policy) < 0)
        return EXIT_EXECBOX;
    r.so.policy = &r.policy;
    r.tty = isatty(0) && isatty(1);

    int sig_pipe[2];
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        fprintf(stderr, "execbox repl: pipe: %s\n", strerror(errno));
        return EXIT_EXECBOX;
    }
    r.sig_rd = sig_pipe[0];
    sig_wr = sig_pipe[1];
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* A terminal that went away must show up as EPIPE, not kill us before the sandbox is gone. */
    signal(SIGPIPE, SIG_IGN);

    int status = EXIT_EXECBOX;
    if (cli_sandbox_executor(&sb, &r.ex) < 0)
        goto out;
    onesession_init(&r.one, r.ex, &r.so, NULL);
    if (session_start(&r) < 0)
        goto out;
    if (r.tty) {
        /* Our handler, not libedit's, owns SIGINT; and no ~/.editrc surprises in tests. */
        rl_catch_signals = 0;
        rl_readline_name = "execbox";
        rl_initialize();
        using_history();
        printf("execbox repl: Python in a '%s' sandbox; state persists between cells, a failed "
               "cell is rolled back.\n%g s per cell, %llu MiB of memory. %%reset starts over, "
               "%%exit or Ctrl-D leaves, Ctrl-C cancels a cell.\n",
               execbox_executor_backend(r.ex), r.policy.timeout,
               (unsigned long long)(r.policy.memory >> 20));
        fflush(stdout);
    }
    status = loop(&r);
out:
    onesession_close(&r.one);
    execbox_executor_free(r.ex);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sig_wr = -1;
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    return status;
}
