/* SPDX-License-Identifier: MIT */
/* serve.c - `execbox serve`: options, the listening socket, signals and the graceful drain
 * around the HTTP service of server.h (docs/api.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/surface.h"
#include "common/cliopts.h"
#include "common/io.h"
#include "common/sessions.h"
#include "execbox/execbox.h"
#include "request.h"
#include "server.h"
#include "tenants.h"

#define DEFAULT_LISTEN "127.0.0.1:8080"
#define DEFAULT_QUEUE 64
#define DEFAULT_MAX_BODY (4U << 20)
#define LISTEN_BACKLOG 1024
#define FORCED_STOP_GRACE_S 5
#define MAX_ALLOW_ORIGINS 32
#define MAX_ALLOW_HOSTS 32

static void help(FILE *f)
{
    fprintf(f,
            "Usage: execbox serve [OPTIONS]\n\n"
            "HTTP service: POST /v1/execute runs code in a fresh sandbox and answers with the\n"
            "result record; /v1/sessions keeps state between cells (docs/sessions.md);\n"
            "GET /v1/health; GET /metrics (Prometheus); under /e2b/ (or /e2b/TOKEN/ with a\n"
            "token) the wire of E2B's code interpreter, for E2B's SDK (docs/e2b.md). See\n"
            "docs/api.md.\n\n"
            "  -L, --listen ADDR        host:port, [v6]:port or unix:/path (default " DEFAULT_LISTEN
            ")\n"
            "      --token TOKEN        require 'Authorization: Bearer TOKEN' (default: "
            "$EXECBOX_TOKEN)\n"
            "      --tokens FILE        tenants: one per line, a name, a token (or sha256:HEX)\n"
            "                           and quotas; each sees only its own sessions; SIGHUP\n"
            "                           reads the file again; a --policy file may name it\n"
            "                           instead: \"tokens\": \"FILE\" (docs/tenants.md)\n"
            "      --insecure           allow listening beyond loopback without a token\n"
            "      --workers N          concurrent sandboxes (default: number of cores)\n"
            "      --queue N            requests that may wait for a worker (default 64); more\n"
            "                           get 429 with Retry-After\n"
            "      --max-body SIZE      largest request body (default 4M); larger get 413\n"
            "      --drain-grace SECONDS  on SIGTERM, first answer /v1/health with 503 for this\n"
            "                           long while still taking runs, so that load balancers\n"
            "                           and readiness probes see the instance leave (default 0)\n"
            "      --allow-origin ORIGIN  let web pages from ORIGIN (e.g. https://app.example)\n"
            "                           call this server (repeatable; '*': any). A request\n"
            "                           with any other Origin header gets 403 (default: all)\n"
            "      --allow-host-header NAME  without a token, also serve requests whose Host\n"
            "                           header is NAME (any port; repeatable). Without a\n"
            "                           token only IP addresses, localhost, the --listen name\n"
            "                           and these are served; any other Host gets 421, so\n"
            "                           that a DNS-rebinding web page cannot reach the server\n"
            "      --max-sessions N     sessions open at once (default 16); more get 429\n"
            "      --session-idle-max SECONDS  most idle_timeout a session may ask for\n"
            "                           (default 3600; a session's default is 600, or this)\n"
            "      --session-lifetime SECONDS  hard lifetime of every session (default 86400)\n"
            "      --drain-timeout SECONDS  on SIGTERM, how long to let queued and running\n"
            "                           requests finish before killing them (default: enough\n"
            "                           for the queue at the policy's timeout)\n"
            "  -h, --help               this text\n\n" CLI_SANDBOX_HELP CLI_POOL_HELP
            "\nThe sandbox options set each request's default and maximum: a request may ask\n"
            "for less, never more. The access log goes to stderr as JSON lines. SIGTERM or\n"
            "SIGINT drains (stop accepting, finish what was accepted, exit 0); a second one\n"
            "kills the running sandboxes.\n");
}

static int parse_count(const char *name, const char *v, size_t max, size_t *ret)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end || !*v || v[0] == '-' || n == 0 || n > max) {
        fprintf(stderr, "execbox serve: --%s: '%s' is not a number from 1 to %zu\n", name, v, max);
        return -1;
    }
    *ret = (size_t)n;
    return 0;
}

static bool addr_is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const unsigned char *b =
            (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr.s_addr;
        return b[0] == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a))
            return true;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return false;
}

static int listen_unix(const char *path, char *shown, size_t shown_size)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sun.sun_path) || !*path) {
        fprintf(stderr, "execbox serve: --listen: unix socket path too long or empty\n");
        return -1;
    }
    memcpy(sun.sun_path, path, strlen(path) + 1);
    struct stat st;
    if (lstat(path, &st) == 0) {
        /* Replace a stale socket of an earlier run, never any other kind of file. */
        if (!S_ISSOCK(st.st_mode)) {
            fprintf(stderr, "execbox serve: --listen: '%s' exists and is not a socket\n", path);
            return -1;
        }
        unlink(path);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
        listen(fd, LISTEN_BACKLOG) < 0) {
        fprintf(stderr, "execbox serve: cannot listen on 'unix:%s': %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    snprintf(shown, shown_size, "unix:%s", path);
    return fd;
}

/* Opens the listening socket of ADDR; refuses a non-loopback address unless allowed. */
static int listen_on(const char *addr, bool allow_public, char *shown, size_t shown_size)
{
    if (strncmp(addr, "unix:", 5) == 0)
        return listen_unix(addr + 5, shown, shown_size);
    char host[256], port[16];
    const char *colon = strrchr(addr, ':');
    if (!colon || !colon[1] || (size_t)(colon - addr) >= sizeof(host) ||
        strlen(colon + 1) >= sizeof(port)) {
        fprintf(stderr, "execbox serve: --listen: '%s' is not host:port or unix:/path\n", addr);
        return -1;
    }
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    snprintf(port, sizeof(port), "%s", colon + 1);
    char *h = host;
    size_t hl = strlen(h);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h[hl - 1] = '\0';
        h++;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(*h ? h : NULL, port, &hints, &res);
    if (g != 0) {
        fprintf(stderr, "execbox serve: --listen: '%s': %s\n", addr, gai_strerror(g));
        return -1;
    }
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
        if (!addr_is_loopback(ai->ai_addr) && !allow_public) {
            freeaddrinfo(res);
            fprintf(stderr,
                    "execbox serve: refusing to listen on '%s', which is reachable beyond this "
                    "machine, without a token: set --token or EXECBOX_TOKEN (or pass --insecure "
                    "if something in front of it authenticates)\n",
                    addr);
            return -1;
        }
    int fd = -1, saved = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, LISTEN_BACKLOG) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "execbox serve: cannot listen on '%s': %s\n", addr, strerror(saved));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char nh[NI_MAXHOST] = "", ns[NI_MAXSERV] = "";
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
        getnameinfo((struct sockaddr *)&ss, sl, nh, sizeof(nh), ns, sizeof(ns),
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0)
        snprintf(shown, shown_size, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", nh, ns);
    else
        snprintf(shown, shown_size, "%s", addr);
    return fd;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The long options besides the sandbox's and the pool's. */
enum {
    OPT_TOKEN = CLI_OPT__LAST + 1,
    OPT_TOKENS,
    OPT_INSECURE,
    OPT_WORKERS,
    OPT_QUEUE,
    OPT_MAX_BODY,
    OPT_DRAIN,
    OPT_DRAIN_GRACE,
    OPT_ALLOW_ORIGIN,
    OPT_ALLOW_HOST_HEADER,
    OPT_MAX_SESSIONS,
    OPT_SESSION_IDLE_MAX,
    OPT_SESSION_LIFETIME,
};
static const struct option longopts[] = {
    CLI_SANDBOX_LONGOPTS,
    CLI_POOL_LONGOPTS,
    {"listen", required_argument, NULL, 'L'},
    {"token", required_argument, NULL, OPT_TOKEN},
    {"tokens", required_argument, NULL, OPT_TOKENS},
    {"insecure", no_argument, NULL, OPT_INSECURE},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"queue", required_argument, NULL, OPT_QUEUE},
    {"max-body", required_argument, NULL, OPT_MAX_BODY},
    {"drain-timeout", required_argument, NULL, OPT_DRAIN},
    {"drain-grace", required_argument, NULL, OPT_DRAIN_GRACE},
    {"allow-origin", required_argument, NULL, OPT_ALLOW_ORIGIN},
    {"allow-host-header", required_argument, NULL, OPT_ALLOW_HOST_HEADER},
    {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
    {"session-idle-max", required_argument, NULL, OPT_SESSION_IDLE_MAX},
    {"session-lifetime", required_argument, NULL, OPT_SESSION_LIFETIME},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* What the command line asks for. The origins and hosts are borrowed by the server's config. */
struct serve_opts {
    struct cli_sandbox sb;
    const char *listen_addr, *token, *tokens_file;
    char policy_tokens[PATH_MAX]; /* the tokens file a policy file names, or "" */
    bool insecure;
    size_t workers, queue, max_body;
    double drain_timeout, drain_grace;
    size_t max_sessions, idle_max, lifetime;
    const char *origins[MAX_ALLOW_ORIGINS];
    size_t n_origins;
    /* the --allow-host-header names, then the --listen host's */
    const char *hosts[MAX_ALLOW_HOSTS + 1];
    size_t n_hosts;
    char listen_host[SRV_HOST_NAME_MAX + 1];
};

/* Parses argv into o (its defaults set first). 0, 1 after --help (the text printed), or -1 with
 * the reason on stderr. */
static int parse_options(int argc, char **argv, struct serve_opts *o)
{
    cli_sandbox_init(&o->sb);
    o->listen_addr = DEFAULT_LISTEN;
    o->token = getenv("EXECBOX_TOKEN");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    o->workers = cores > 0 ? (size_t)cores : 1;
    o->queue = DEFAULT_QUEUE;
    o->max_body = DEFAULT_MAX_BODY;
    o->drain_timeout = -1;
    o->max_sessions = SESS_MAX_DEFAULT;
    o->idle_max = (size_t)SESS_IDLE_MAX_DEFAULT;
    o->lifetime = (size_t)SESS_LIFETIME_DEFAULT;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, CLI_SANDBOX_SHORTOPTS "L:h", longopts, NULL)) != -1) {
        int r = cli_sandbox_option(&o->sb, c, optarg);
        if (r < 0)
            return -1;
        if (r > 0)
            continue;
        switch (c) {
        case 'L': o->listen_addr = optarg; break;
        case OPT_TOKEN: o->token = optarg; break;
        case OPT_TOKENS: o->tokens_file = optarg; break;
        case OPT_INSECURE: o->insecure = true; break;
        case OPT_WORKERS:
            if (parse_count("workers", optarg, 1024, &o->workers) < 0)
                return -1;
            break;
        case OPT_MAX_SESSIONS:
            if (parse_count("max-sessions", optarg, SESS_MAX_LIMIT, &o->max_sessions) < 0)
                return -1;
            break;
        case OPT_SESSION_IDLE_MAX:
            if (parse_count("session-idle-max", optarg, 30 * 86400, &o->idle_max) < 0)
                return -1;
            break;
        case OPT_SESSION_LIFETIME:
            if (parse_count("session-lifetime", optarg, 365 * 86400, &o->lifetime) < 0)
                return -1;
            break;
        case OPT_QUEUE:
            if (parse_count("queue", optarg, 1000000, &o->queue) < 0)
                return -1;
            break;
        case OPT_MAX_BODY: {
            uint64_t v;
            struct execbox_error err = {0};
            if (execbox_parse_size(optarg, &v, &err) < 0 || v == 0 || v > (1ULL << 30)) {
                fprintf(stderr, "execbox serve: --max-body: '%s' is not a size from 1 to 1G\n",
                        optarg);
                return -1;
            }
            o->max_body = (size_t)v;
            break;
        }
        case OPT_ALLOW_ORIGIN:
            /* An origin is a scheme, a host and maybe a port: nothing else ever matches. */
            if (o->n_origins == MAX_ALLOW_ORIGINS ||
                (strcmp(optarg, "*") != 0 &&
                 (!strstr(optarg, "://") || strchr(strstr(optarg, "://") + 3, '/')))) {
                fprintf(stderr,
                        "execbox serve: --allow-origin: '%s' is not an origin such as "
                        "https://app.example:8443 (or '*'; at most %d)\n",
                        optarg, MAX_ALLOW_ORIGINS);
                return -1;
            }
            o->origins[o->n_origins++] = optarg;
            break;
        case OPT_ALLOW_HOST_HEADER:
            /* A name as a Host header carries it: no scheme, no port, no path. */
            if (o->n_hosts == MAX_ALLOW_HOSTS || !srv_host_name_ok(optarg)) {
                fprintf(stderr,
                        "execbox serve: --allow-host-header: '%s' is not a host name such as "
                        "execbox.internal (letters, digits, '.', '-'; no port; at most %d)\n",
                        optarg, MAX_ALLOW_HOSTS);
                return -1;
            }
            o->hosts[o->n_hosts++] = optarg;
            break;
        case OPT_DRAIN: {
            char *end;
            o->drain_timeout = strtod(optarg, &end);
            if (*end || !*optarg || o->drain_timeout < 0) {
                fprintf(stderr, "execbox serve: --drain-timeout: '%s' is not seconds\n", optarg);
                return -1;
            }
            break;
        }
        case OPT_DRAIN_GRACE: {
            char *end;
            o->drain_grace = strtod(optarg, &end);
            if (*end || !*optarg || !(o->drain_grace >= 0) || o->drain_grace > 3600) {
                fprintf(stderr, "execbox serve: --drain-grace: '%s' is not seconds (0 to 3600)\n",
                        optarg);
                return -1;
            }
            break;
        }
        case 'h': help(stdout); return 1;
        default: fprintf(stderr, "execbox serve: see 'execbox serve --help'\n"); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "execbox serve: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (o->token && !*o->token)
        o->token = NULL;
    if (o->token && o->tokens_file) {
        fprintf(stderr, "execbox serve: --token and --tokens: give one (a --tokens file may hold "
                        "a single tenant)\n");
        return -1;
    }
    /* The name given with --listen is one of ours too ("[v6]" and IP literals always are). */
    const char *lc = strrchr(o->listen_addr, ':');
    if (strncmp(o->listen_addr, "unix:", 5) != 0 && lc &&
        (size_t)(lc - o->listen_addr) < sizeof(o->listen_host)) {
        memcpy(o->listen_host, o->listen_addr, (size_t)(lc - o->listen_addr));
        o->listen_host[lc - o->listen_addr] = '\0';
        if (srv_host_name_ok(o->listen_host))
            o->hosts[o->n_hosts++] = o->listen_host;
    }
    return 0;
}

/* The server's config from o, the executor (its pool warmed) and the listening socket (shown:
 * where, for the log). 0, or -1 with the reason on stderr. */
static int set_up(struct serve_opts *o, struct srv_config *cfg, char *shown, size_t shown_size)
{
    *cfg = (struct srv_config){.token = o->token,
                               .workers = o->workers,
                               .queue = o->queue,
                               .max_body = o->max_body,
                               .allow_origins = o->origins,
                               .n_allow_origins = o->n_origins,
                               /* A unix socket is out of a browser's reach: no name to rebind. */
                               .check_host = !o->token && !o->tokens_file &&
                                             strncmp(o->listen_addr, "unix:", 5) != 0,
                               .allow_hosts = o->hosts,
                               .n_allow_hosts = o->n_hosts,
                               .max_sessions = o->max_sessions,
                               .session_idle_max = (double)o->idle_max,
                               .session_lifetime = (double)o->lifetime};
    char *named = NULL;
    if (cli_sandbox_policy_tokens(&o->sb, &cfg->policy, &named) < 0)
        return -1;
    if (named) {
        snprintf(o->policy_tokens, sizeof(o->policy_tokens), "%s", named); /* < PATH_MAX */
        free(named);
    }
    if (o->policy_tokens[0] && (o->token || o->tokens_file)) {
        fprintf(stderr,
                "execbox serve: the policy file names a tokens file, and %s is given too: "
                "give one\n",
                o->token ? "--token (or EXECBOX_TOKEN)" : "--tokens");
        return -1;
    }
    if (o->policy_tokens[0]) {
        o->tokens_file = o->policy_tokens;
        cfg->check_host = false; /* every request carries a tenant's token */
    }
    struct execbox_error terr = {0};
    if ((o->tokens_file && tenants_load(o->tokens_file, &cfg->policy, &cfg->tenants, &terr) < 0) ||
        (o->token && tenants_single(o->token, &cfg->policy, &cfg->tenants, &terr) < 0)) {
        fprintf(stderr, "execbox serve: %s\n", terr.msg);
        return -1;
    }
    if (o->drain_timeout < 0) {
        struct execbox_policy p = cfg->policy;
        double t = p.timeout > 0 ? p.timeout : EXECBOX_DEFAULT_TIMEOUT;
        o->drain_timeout = t * ((double)o->queue / (double)o->workers + 2) + 10;
    }
    struct execbox_error err = {0};
    /* A server restarted after a kill -9 cleans up after its predecessor now, not at some
     * later run. */
    o->sb.exec.sweep_now = true;
    o->sb.exec.keep_cgroups = true;
    if (execbox_executor_new(&o->sb.exec, &cfg->exec, &err) < 0) {
        fprintf(stderr, "execbox serve: %s\n", err.msg);
        tenants_free(cfg->tenants);
        return -1;
    }
    /* With --pool, Python sandboxes for the server's own policy start now (a request asking
     * for other limits is another policy: its pool fills after its first run). */
    if (execbox_executor_prewarm(cfg->exec, &cfg->policy, "python", &err) < 0) /* no-op: no pool */
        fprintf(stderr, "execbox serve: warm pool: %s\n", err.msg);
    cfg->listen_fd =
        listen_on(o->listen_addr, cfg->tenants != NULL || o->insecure, shown, shown_size);
    if (cfg->listen_fd < 0) {
        execbox_executor_free(cfg->exec);
        tenants_free(cfg->tenants);
        return -1;
    }
    return 0;
}

/* SIGHUP reads the tokens file again, on a thread of its own (SIGHUP is blocked in every
 * thread; this one takes it synchronously). A file that no longer parses changes nothing. */
static void *reload_main(void *arg)
{
    pthread_setname_np(pthread_self(), "execbox-reload"); /* in ps, top -H and perf */
    struct tenants *t = arg;
    sigset_t hup;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    for (;;) {
        int sig = sigwaitinfo(&hup, NULL);
        if (sig != SIGHUP)
            continue;
        struct execbox_error err = {0};
        if (tenants_reload(t, &err) < 0)
            srv_log("error", "tokens not reloaded", err.msg);
        else
            srv_log("info", "tokens reloaded", "the tokens file was read again");
    }
    return NULL;
}

/* Waits for SIGTERM or SIGINT (returned in *sig); with a grace period, leaves first (health says
 * 503 while runs are still taken). True when a second signal cut the grace short. */
static bool wait_and_leave(struct srv *s, const sigset_t *sigs, double drain_grace, int *sig)
{
    *sig = sigwaitinfo(sigs, NULL);
    while (*sig < 0 && errno == EINTR)
        *sig = sigwaitinfo(sigs, NULL);
    if (drain_grace <= 0)
        return false;
    /* Leaving: health says 503 while runs are still taken, until the load balancers and
     * readiness probes have seen it; then the listener closes. A second signal cuts the grace
     * short and kills the runs, as below. */
    char msg[160];
    snprintf(msg, sizeof(msg),
             "%s: leaving (health answers 503 for %g s, runs still taken), then draining",
             strsignal(*sig), drain_grace);
    srv_log("info", "leaving", msg);
    srv_leave(s);
    struct timespec g0;
    clock_gettime(CLOCK_MONOTONIC, &g0);
    while (seconds_since(&g0) < drain_grace) {
        double left = drain_grace - seconds_since(&g0);
        struct timespec tick = {0, 50 * 1000000L};
        if (left < 0.05)
            tick.tv_nsec = (long)(left * 1e9) + 1;
        if (sigtimedwait(sigs, NULL, &tick) > 0)
            return true;
    }
    return false;
}

/* Stops accepting and waits for what was accepted, killing the runs at a second signal or
 * past drain_timeout (at once when forced); sessions are closed last. True when runs were
 * killed. */
static bool drain(struct srv *s, const sigset_t *sigs, const struct serve_opts *o, int sig,
                  bool forced)
{
    char msg[160];
    snprintf(msg, sizeof(msg), "%s: draining (stop accepting, finish what was accepted)",
             strsignal(sig));
    srv_log("info", "draining", msg);
    srv_quiesce(s);
    if (strncmp(o->listen_addr, "unix:", 5) == 0)
        unlink(o->listen_addr + 5);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (forced) {
        srv_log("warning", "drain", "second signal: killing running sandboxes");
        srv_cancel_all(s);
    }
    while (!srv_idle(s)) {
        struct timespec tick = {0, 50 * 1000000L};
        int r = sigtimedwait(sigs, NULL, &tick);
        if (r > 0 || (!forced && seconds_since(&t0) > o->drain_timeout)) {
            srv_log("warning", "drain",
                    r > 0 ? "second signal: killing running sandboxes"
                          : "drain timeout: killing running sandboxes");
            srv_cancel_all(s);
            forced = true;
            clock_gettime(CLOCK_MONOTONIC, &t0);
        }
        if (forced && seconds_since(&t0) > FORCED_STOP_GRACE_S)
            break;
    }
    /* Sessions are closed last: their cells were among what was accepted. */
    srv_close_sessions(s);
    return forced;
}

int cmd_serve(int argc, char **argv)
{
    struct serve_opts o = {0};
    int r = parse_options(argc, argv, &o);
    if (r != 0)
        return r > 0 ? 0 : EXIT_EXECBOX;
    struct srv_config cfg;
    char shown[300];
    cli_raise_nofile(); /* before the executor and its pool open anything */
    if (set_up(&o, &cfg, shown, sizeof(shown)) < 0)
        return EXIT_EXECBOX;

    /* Signals are taken synchronously by this thread alone: block them before any thread
     * starts so that every thread inherits the mask (the sandbox's children reset it). */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigset_t with_hup = sigs;
    sigaddset(&with_hup, SIGHUP); /* for reload_main alone */
    pthread_sigmask(SIG_BLOCK, &with_hup, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (o.tokens_file) {
        pthread_t t;
        if (pthread_create(&t, NULL, reload_main, cfg.tenants) == 0)
            pthread_detach(t);
    }

    struct srv *s = NULL;
    struct execbox_error err = {0};
    if (srv_start(&cfg, &s, &err) < 0) {
        fprintf(stderr, "execbox serve: %s\n", err.msg[0] ? err.msg : "cannot start");
        execbox_executor_free(cfg.exec);
        tenants_free(cfg.tenants);
        return EXIT_EXECBOX;
    }
    if (strcmp(execbox_executor_backend(cfg.exec), "subprocess") == 0)
        srv_log("warning", "backend",
                "the 'subprocess' backend isolates nothing: the code runs as this server's user, "
                "on this host; use it only for trusted code");
    if (!cfg.tenants)
        srv_log("warning", "auth", "no token: every client that can connect may run code");
    srv_log("info", "listening", shown);

    int sig = 0;
    bool forced = wait_and_leave(s, &sigs, o.drain_grace, &sig);
    forced = drain(s, &sigs, &o, sig, forced);
    /* Stopping libmicrohttpd with a connection still suspended is undefined; after a forced
     * stop that did not settle, leave the rest to the exit. */
    if (srv_idle(s))
        srv_stop(s);
    execbox_executor_free(cfg.exec);
    if (!o.tokens_file) /* with a file, reload_main holds it until the exit */
        tenants_free(cfg.tenants);
    srv_log("info", "stopped", forced ? "stopped after killing runs" : "drained; exiting");
    return forced ? 1 : 0;
}
