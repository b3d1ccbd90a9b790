/* SPDX-License-Identifier: MIT */
/* test_pool.c - the warm pool through the public API on the subprocess backend: refill,
 * exhaustion (a run forks from the live template, or goes cold), idle expiry, one run per
 * sandbox, policy isolation, fresh randomness, teardown, and that a warm run looks exactly like
 * a cold one. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "execbox/execbox.h"

static char tmpdir[256];
static const char *backend = "subprocess"; /* the group runs once per backend */

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* Python that sets a to pid 1's arguments, read again (for up to 5 s) while the list is empty:
 * see test_miss_forks_from_live_template. */
#define INIT_ARGS                                                                                  \
    "import time\n"                                                                                \
    "for _ in range(500):\n"                                                                       \
    "    a = [x for x in open('/proc/1/cmdline').read().split(chr(0)) if x]\n"                     \
    "    if a:\n"                                                                                  \
    "        break\n"                                                                              \
    "    time.sleep(0.01)\n"

/* What a backend leaves behind while sandboxes exist: run dirs in TMPDIR (subprocess), run
 * cgroups named execbox-<our pid>-* (jail; v1 memory or v2 unified, where this process is). */
static int count_leftovers(void)
{
    if (strcmp(backend, "subprocess") == 0)
        return count_entries(tmpdir);
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return -1;
    char line[1024], dir[1200] = "";
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *p = strchr(line, ':');
        char *q = p ? strchr(p + 1, ':') : NULL;
        if (!q)
            continue;
        if (strncmp(p + 1, "memory:", 7) == 0)
            snprintf(dir, sizeof(dir), "/sys/fs/cgroup/memory%s", q + 1);
        else if (p[1] == ':' && !dir[0])
            snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", q + 1);
    }
    fclose(f);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "execbox-%d-", (int)getpid());
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static struct execbox_executor *open_pool_gen(unsigned size, const char *preload, double idle,
                                              unsigned template_runs)
{
    struct execbox_executor_options o = {.backend = backend,
                                         .pool_size = size,
                                         .pool_preload = preload,
                                         .pool_idle = idle,
                                         .template_max_runs = template_runs};
    struct execbox_executor *ex = NULL;
    struct execbox_error err = {0};
    assert_int_equal(execbox_executor_new(&o, &ex, &err), 0);
    return ex;
}

static struct execbox_executor *open_pool(unsigned size, const char *preload, double idle)
{
    return open_pool_gen(size, preload, idle, 0);
}

static void wait_ready(struct execbox_executor *ex, unsigned want)
{
    struct execbox_pool_stats st;
    for (int i = 0; i < 400; i++) { /* 20 s at most */
        execbox_executor_pool_stats(ex, &st);
        if (st.ready >= want)
            return;
        usleep(50 * 1000);
    }
    fail_msg("pool never reached %u ready sandboxes (ready %u, failed %llu)", want, st.ready,
             (unsigned long long)st.failed);
}

/* A pool of size for python, filled ahead of its first run until want sandboxes are ready. */
static struct execbox_executor *open_warm(unsigned size, const char *preload, double idle,
                                          unsigned want)
{
    struct execbox_executor *ex = open_pool(size, preload, idle);
    struct execbox_error err = {0};
    assert_int_equal(execbox_executor_prewarm(ex, NULL, "python", &err), 0);
    wait_ready(ex, want);
    return ex;
}

static struct execbox_result *run(struct execbox_executor *ex, const char *code,
                                  const struct execbox_policy *p, const char *in)
{
    struct execbox_request req = {
        .code = code, .policy = p, .stdin_data = in, .stdin_len = in ? strlen(in) : 0};
    struct execbox_result *res = NULL;
    struct execbox_error err = {0};
    assert_int_equal(execbox_executor_run(ex, &req, &res, &err), 0);
    if (res->error_name && strcmp(res->error_name, "SandboxError") == 0)
        fail_msg("sandbox error on %s: %s", backend, res->error_value);
    return res;
}

static void test_warm_run_looks_cold(void **state)
{
    (void)state;
    struct execbox_executor *ex = open_warm(2, "json", 60, 2);

    struct execbox_result *r =
        run(ex,
            "import sys, __main__\nprint(6*7)\nprint(__name__, sys.argv[0].endswith('main.py'), "
            "__main__.__file__ == sys.argv[0])\n",
            NULL, NULL);
    assert_int_equal(r->exit_code, 0);
    assert_string_equal(r->stdout_data, "42\n__main__ True True\n");
    execbox_result_free(r);

    r = run(ex, "x = 1\ny = x / 0\n", NULL, NULL);
    assert_int_equal(r->exit_code, 1);
    assert_non_null(r->error_name);
    assert_string_equal(r->error_name, "ZeroDivisionError");
    assert_non_null(strstr(r->error_traceback, "line 2, in <module>"));
    assert_null(strstr(r->error_traceback, "_execbox_warm"));
    assert_null(strstr(r->stderr_data, "_execbox_warm"));
    execbox_result_free(r);

    wait_ready(ex, 1);
    r = run(ex, "print(\n", NULL, NULL);
    assert_int_equal(r->exit_code, 1);
    assert_string_equal(r->error_name, "SyntaxError");
    assert_null(strstr(r->stderr_data, "_execbox_warm"));
    execbox_result_free(r);

    wait_ready(ex, 1);
    r = run(ex, "import sys\nprint(sys.stdin.read().upper(), end='')\nsys.exit(3)\n", NULL,
            "hello");
    assert_int_equal(r->exit_code, 3);
    assert_string_equal(r->stdout_data, "HELLO");
    execbox_result_free(r);

    struct execbox_pool_stats st;
    execbox_executor_pool_stats(ex, &st);
    assert_true(st.hits >= 3);
    execbox_executor_free(ex);
}

/* What a program can see of how it was started: identical cold and warm. */
static const char introspect[] =
    "import sys, os\n"
    "print(sorted(globals()))\n"
    "print(__name__, type(__loader__).__name__, __spec__, __cached__, __annotations__)\n"
    "print(os.path.basename(sys.argv[0]), len(sys.argv), sys.path[0] == "
    "os.path.dirname(__file__))\n"
    "print(os.getcwd() == os.environ['HOME'], sys.flags.dont_write_bytecode, sys.stdin.read())\n"
    "print(sorted(k for k in os.environ if k not in ('HOME', 'TMPDIR', 'MPLCONFIGDIR')))\n"
    "print(os.get_inheritable(0), [fd for fd in range(3, 64) if "
    "os.path.exists(f'/proc/self/fd/{fd}')])\n";

/* Shutdown: exit statuses, atexit, threads, finalisers and unclosed files, as a cold exit. */
static const char *const shutdown_programs[] = {
    "import atexit\natexit.register(print, 'bye')\nprint('hi')\n",
    "import sys\nsys.exit(3)\n",
    "import sys\nsys.exit('a message')\n",
    "import sys\nsys.exit(None)\n",
    "raise SystemExit(300)\n",
    "import threading, time\n"
    "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()\n"
    "print('main done')\n",
    "class D:\n    def __del__(self):\n        print('finalised')\nd = D()\nprint('made')\n",
    "f = open('/dev/stdout', 'w')\nf.write('unclosed and flushed at exit\\n')\n",
    "import atexit\natexit.register(print, 'second')\natexit.register(print, 'first')\n",
    "raise KeyError('k')\n",
};

/* Run dirs are random per run, cold or warm: blank their suffix before comparing. */
static void normalize(char *s)
{
    for (char *p = s; (p = strstr(p, "execbox-run-"));) {
        p += strlen("execbox-run-");
        for (int i = 0; i < 6 && p[i]; i++)
            p[i] = 'X';
    }
}

static void test_warm_equals_cold(void **state)
{
    (void)state;
    struct execbox_executor_options o = {.backend = backend};
    struct execbox_executor *cold = NULL;
    struct execbox_error err = {0};
    assert_int_equal(execbox_executor_new(&o, &cold, &err), 0);
    struct execbox_executor *warm = open_pool(1, "", 60);
    assert_int_equal(execbox_executor_prewarm(warm, NULL, "python", &err), 0);
    size_t n = sizeof(shutdown_programs) / sizeof(shutdown_programs[0]);
    for (size_t i = 0; i <= n; i++) {
        const char *prog = i < n ? shutdown_programs[i] : introspect;
        wait_ready(warm, 1);
        struct execbox_pool_stats before, after;
        execbox_executor_pool_stats(warm, &before);
        struct execbox_result *a = run(cold, prog, NULL, "in");
        struct execbox_result *b = run(warm, prog, NULL, "in");
        execbox_executor_pool_stats(warm, &after);
        assert_int_equal(after.hits, before.hits + 1);
        normalize(a->stdout_data);
        normalize(a->stderr_data);
        normalize(b->stdout_data);
        normalize(b->stderr_data);
        if (a->exit_code != b->exit_code || strcmp(a->stdout_data, b->stdout_data) != 0 ||
            strcmp(a->stderr_data, b->stderr_data) != 0)
            fail_msg("program %zu differs:\ncold %d [%s] [%s]\nwarm %d [%s] [%s]", i, a->exit_code,
                     a->stdout_data, a->stderr_data, b->exit_code, b->stdout_data, b->stderr_data);
        execbox_result_free(a);
        execbox_result_free(b);
    }
    execbox_executor_free(cold);
    execbox_executor_free(warm);
}

static void test_each_run_is_fresh(void **state)
{
    (void)state;
    /* One run per template generation: then even what a fork shares with its siblings (the
     * hash secret) must differ between runs (tests/integration/templates.py covers the
     * generations of many runs). */
    struct execbox_executor *ex = open_pool_gen(3, "", 60, 1);
    struct execbox_error err = {0};
    assert_int_equal(execbox_executor_prewarm(ex, NULL, "python", &err), 0);
    char seen[6][256];
    for (int i = 0; i < 6; i++) {
        wait_ready(ex, 1);
        struct execbox_result *r =
            run(ex,
                "import random, os, sys\n"
                "print(random.random(), os.urandom(8).hex(), hash('abc'), os.getpid())\n"
                "print('x' in globals())\n"
                "x = 1\nopen('/tmp/left-behind' if False else os.environ['TMPDIR'] + '/mark', "
                "'w').write('1')\n"
                "print([f for f in os.listdir(os.environ['TMPDIR']) if f[0] != '.'])\n",
                NULL, NULL);
        assert_int_equal(r->exit_code, 0);
        char *nl = strchr(r->stdout_data, '\n');
        assert_non_null(nl);
        snprintf(seen[i], sizeof(seen[i]), "%.*s", (int)(nl - r->stdout_data), r->stdout_data);
        /* no globals leak in, and this sandbox's /tmp held only what this run wrote */
        assert_non_null(strstr(nl, "False\n['mark']\n"));
        for (int j = 0; j < i; j++) {
            /* random state, urandom, hash seed and pid all differ between runs */
            char a[4][64], b[4][64];
            assert_int_equal(sscanf(seen[i], "%63s %63s %63s %63s", a[0], a[1], a[2], a[3]), 4);
            assert_int_equal(sscanf(seen[j], "%63s %63s %63s %63s", b[0], b[1], b[2], b[3]), 4);
            /* (pids may repeat: in the jail the guest is always pid 2 of its namespace) */
            for (int k = 0; k < 3; k++)
                assert_string_not_equal(a[k], b[k]);
        }
        execbox_result_free(r);
    }
    struct execbox_pool_stats st;
    execbox_executor_pool_stats(ex, &st);
    /* every started sandbox served at most one run */
    assert_true(st.started >= st.hits + st.ready);
    execbox_executor_free(ex);
}

static void test_exhaustion_goes_cold(void **state)
{
    (void)state;
    struct execbox_executor *ex = open_pool(1, "", 60);
    for (int i = 0; i < 4; i++) {
        struct execbox_result *r = run(ex, "print('ok')", NULL, NULL);
        assert_int_equal(r->exit_code, 0);
        assert_string_equal(r->stdout_data, "ok\n");
        execbox_result_free(r);
    }
    struct execbox_pool_stats st;
    execbox_executor_pool_stats(ex, &st);
    assert_int_equal(st.hits + st.misses, 4);
    assert_true(st.misses >= 1); /* the first one at least: nothing was ready */
    execbox_executor_free(ex);
}

/* A run on a thread of its own: code (NULL: the side run below) on ex; done once it is over. */
struct side_run {
    struct execbox_executor *ex;
    const char *code;
    struct execbox_result *res;
    int r;
    atomic_bool done;
};

/* pid 1's command line: a template run's init has its arguments (execbox-init, the guest's pid,
 * the cgroups to leave), a cold run's only its name. Read until it has one: the template's vfork
 * returns once the init's exec has its memory, a moment before the kernel has set its arguments
 * there, and a loaded machine may run the program in between. */
static const char pid1_args[] = INIT_ARGS "time.sleep(0.3)\nprint(a[0], len(a))\n";

static void *side_run(void *arg)
{
    struct side_run *c = arg;
    struct execbox_request req = {.code = c->code ? c->code : pid1_args};
    struct execbox_error err = {0};
    c->r = execbox_executor_run(c->ex, &req, &c->res, &err);
    atomic_store(&c->done, true);
    return NULL;
}

/* Runs that find no warm sandbox ready (four at once, the pool holds one) fork one from their
 * pair's live template on the spot rather than going cold (the counters say which, and each
 * run's pid 1 is a template run's init); a backend without templates runs them cold. */
static void test_miss_forks_from_live_template(void **state)
{
    (void)state;
    struct execbox_executor *ex = open_warm(1, "", 60, 1);
    struct execbox_pool_stats before, after;
    execbox_executor_pool_stats(ex, &before);
    bool tpl = before.templates > 0;
    assert_true(tpl == (strcmp(backend, "jail") == 0));
    struct side_run c[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (struct side_run){.ex = ex};
        assert_int_equal(pthread_create(&t[i], NULL, side_run, &c[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(c[i].r, 0);
        if (c[i].res->exit_code != 0)
            fprintf(stderr, "run %d: exit %d, %s: %s\n%s", i, c[i].res->exit_code,
                    c[i].res->error_name ? c[i].res->error_name : "-",
                    c[i].res->error_value ? c[i].res->error_value : "-",
                    c[i].res->stderr_data ? c[i].res->stderr_data : "");
        assert_int_equal(c[i].res->exit_code, 0);
        if (tpl)
            assert_string_equal(c[i].res->stdout_data, "execbox-init 3\n");
        execbox_result_free(c[i].res);
    }
    execbox_executor_pool_stats(ex, &after);
    uint64_t misses = after.misses - before.misses, forked = after.forked - before.forked;
    assert_int_equal(after.hits - before.hits + misses, 4);
    assert_true(misses >= 1); /* four at once, one ready */
    assert_int_equal(forked, tpl ? misses : 0);
    execbox_executor_free(ex);
}

/* While a run is in flight, a pair that still has half its sandboxes ready waits to refill (its
 * forks would take CPU from the run), and refills once the run is over; a pair run low refills
 * at once, runs in flight or not. Every run is joined and the executor freed before the verdict,
 * so that a failure leaves no sandbox behind for the next test to count. */
static void test_refill_yields_to_runs(void **state)
{
    (void)state;
    struct execbox_executor *ex = open_warm(4, "", 60, 4);
    struct execbox_pool_stats before, st;
    execbox_executor_pool_stats(ex, &before);

    /* One run: 3 of 4 ready, at least half, so nothing is started while it sleeps. */
    static const char nap[] = "import time\ntime.sleep(3)\n";
    struct side_run one = {.ex = ex, .code = nap};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, side_run, &one), 0);
    for (int i = 0; i < 200; i++) { /* the take: 10 s at most */
        execbox_executor_pool_stats(ex, &st);
        if (st.hits > before.hits)
            break;
        usleep(50 * 1000);
    }
    uint64_t taken = st.hits - before.hits;
    usleep(500 * 1000);
    execbox_executor_pool_stats(ex, &st);
    bool slow = atomic_load(&one.done);
    uint64_t started_during = st.started - before.started;
    unsigned ready_during = st.ready;
    pthread_join(t, NULL);
    execbox_executor_pool_stats(ex, &before);
    for (int i = 0; i < 400 && before.ready < 4; i++) { /* refilled after it: 20 s at most */
        usleep(50 * 1000);
        execbox_executor_pool_stats(ex, &before);
    }
    unsigned ready_after = before.ready;

    /* Three at once: 1 of 4 ready, below half, so the pool refills while they sleep. */
    struct side_run three[3];
    pthread_t ts[3];
    for (int i = 0; i < 3; i++) {
        three[i] = (struct side_run){.ex = ex, .code = nap};
        assert_int_equal(pthread_create(&ts[i], NULL, side_run, &three[i]), 0);
    }
    bool refilled = false, ended = false;
    for (int i = 0; i < 400 && !refilled && !ended; i++) {
        usleep(10 * 1000);
        ended = atomic_load(&three[0].done) || atomic_load(&three[1].done) ||
                atomic_load(&three[2].done);
        execbox_executor_pool_stats(ex, &st);
        refilled = st.started > before.started && !ended;
    }
    for (int i = 0; i < 3; i++)
        pthread_join(ts[i], NULL);
    execbox_executor_free(ex);

    assert_int_equal(taken, 1);
    if (slow)
        fail_msg("the 3 s run ended before its half second was up: the machine is too slow");
    assert_int_equal(one.r, 0);
    assert_int_equal(one.res->exit_code, 0);
    execbox_result_free(one.res);
    if (started_during != 0 || ready_during != 3)
        fail_msg("the pool refilled during a run with 3 of 4 ready (started %llu, ready %u)",
                 (unsigned long long)started_during, ready_during);
    assert_int_equal(ready_after, 4);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(three[i].r, 0);
        assert_int_equal(three[i].res->exit_code, 0);
        execbox_result_free(three[i].res);
    }
    if (!refilled)
        fail_msg("the pool did not refill while three of its four were in use (started %llu, "
                 "was %llu)",
                 (unsigned long long)st.started, (unsigned long long)before.started);
}

static void test_policy_isolation(void **state)
{
    (void)state;
    struct execbox_executor *ex = open_warm(2, "", 60, 2);
    struct execbox_error err = {0};
    struct execbox_pool_stats before, after;
    execbox_executor_pool_stats(ex, &before);
    struct execbox_policy p;
    execbox_policy_init(&p);
    p.timeout = 7; /* another policy: must never be served from the default pair */
    struct execbox_result *r = run(ex, "print(1)", &p, NULL);
    assert_int_equal(r->exit_code, 0);
    execbox_result_free(r);
    execbox_executor_pool_stats(ex, &after);
    assert_int_equal(after.hits, before.hits);
    assert_int_equal(after.misses, before.misses + 1);
    /* JavaScript has no warm start: it always runs cold and is counted nowhere */
    struct execbox_request req = {.code = "console.log(2)", .language = "javascript"};
    assert_int_equal(execbox_executor_run(ex, &req, &r, &err), 0);
    assert_string_equal(r->stdout_data, "2\n");
    execbox_result_free(r);
    assert_int_equal(execbox_executor_prewarm(ex, NULL, "javascript", &err), -ENOTSUP);
    execbox_executor_free(ex);
}

/* network "allow" goes warm where the backend can enforce it (the jail: each warm sandbox gets
 * its own proxy for its policy), and a warm sandbox made for one allow-list never serves a run
 * with another: the proxy enforces the list it was made for. Elsewhere such runs are refused,
 * warm or not. */
static void test_allow_list_isolation(void **state)
{
    (void)state;
    struct execbox_executor *ex = open_pool(1, "", 60);
    struct execbox_error err = {0};
    struct execbox_policy a, b;
    execbox_policy_init(&a);
    assert_int_equal(execbox_policy_set(&a, "network", "allow", &err), 0);
    b = a;
    assert_int_equal(execbox_policy_set(&a, "allow_hosts", "127.0.0.1:9", &err), 0);
    assert_int_equal(execbox_policy_set(&b, "allow_hosts", "127.0.0.2:9", &err), 0);
    int pr = execbox_executor_prewarm(ex, &a, "python", &err);
    if (strcmp(backend, "subprocess") == 0) {
        assert_int_equal(pr, -ENOTSUP);
        execbox_executor_free(ex);
        return;
    }
    assert_int_equal(pr, 0);
    wait_ready(ex, 1);
    struct execbox_pool_stats before, after;
    execbox_executor_pool_stats(ex, &before);
    /* The proxy of a run with list b refuses what a's allows: served cold, never from a's. */
    struct execbox_result *r = run(ex,
                                   "import os, urllib.request\n"
                                   "try:\n"
                                   "    urllib.request.urlopen('http://127.0.0.1:9/', timeout=5)\n"
                                   "except Exception as e:\n"
                                   "    print('403' in str(e))\n",
                                   &b, NULL);
    assert_int_equal(r->exit_code, 0);
    assert_string_equal(r->stdout_data, "True\n");
    assert_int_equal(r->n_egress, 1);
    assert_false(r->egress[0].allowed);
    execbox_result_free(r);
    execbox_executor_pool_stats(ex, &after);
    assert_int_equal(after.hits, before.hits);
    assert_int_equal(after.misses, before.misses + 1);
    /* A run with list a is a fork of the template (pid 1 is the template's init), and its
     * proxy lets it try 127.0.0.1:9 (nothing listens: refused by the host, not the list). */
    r = run(ex,
            "import urllib.request\n" INIT_ARGS "print(a[0])\n"
            "try:\n"
            "    urllib.request.urlopen('http://127.0.0.1:9/', timeout=5)\n"
            "except Exception as e:\n"
            "    print('403' in str(e))\n",
            &a, NULL);
    assert_int_equal(r->exit_code, 0);
    assert_string_equal(r->stdout_data, "execbox-init\nFalse\n");
    assert_int_equal(r->n_egress, 1);
    assert_true(r->egress[0].allowed);
    execbox_result_free(r);
    execbox_executor_pool_stats(ex, &after);
    assert_int_equal(after.hits, before.hits + 1);
    execbox_executor_free(ex);
}

static void test_timeout_counts_from_run_start(void **state)
{
    (void)state;
    struct execbox_executor *ex = open_pool(1, "", 60);
    struct execbox_error err = {0};
    struct execbox_policy p;
    execbox_policy_init(&p);
    p.timeout = 1;
    assert_int_equal(execbox_executor_prewarm(ex, &p, "python", &err), 0);
    wait_ready(ex, 1);
    sleep(2); /* longer than the timeout: a deadline counted from the warm start would fire */
    struct execbox_result *r = run(ex, "import time\ntime.sleep(0.3)\nprint('done')", &p, NULL);
    assert_int_equal(r->exit_code, 0);
    assert_string_equal(r->stdout_data, "done\n");
    execbox_result_free(r);
    wait_ready(ex, 1);
    r = run(ex, "print('start', flush=True)\nwhile True: pass", &p, NULL);
    assert_true(r->timed_out);
    assert_int_equal(r->exit_code, 124);
    assert_string_equal(r->stdout_data, "start\n");
    execbox_result_free(r);
    execbox_executor_free(ex);
}

static void test_idle_expiry_and_teardown(void **state)
{
    (void)state;
    struct execbox_executor *ex = open_warm(2, "", 0.5, 1);
    assert_true(count_leftovers() >= 1); /* warm sandboxes hold run dirs or cgroups */
    struct execbox_pool_stats st;
    for (int i = 0; i < 100; i++) {
        usleep(100 * 1000);
        execbox_executor_pool_stats(ex, &st);
        if (st.expired >= 2 && st.ready == 0)
            break;
    }
    assert_true(st.expired >= 2);
    assert_int_equal(st.ready, 0);
    execbox_executor_free(ex);
    assert_int_equal(count_leftovers(), 0); /* nothing left behind */

    ex = open_warm(3, "", 60, 3);
    execbox_executor_free(ex);
    assert_int_equal(count_leftovers(), 0);
}

static void test_bad_options(void **state)
{
    (void)state;
    struct execbox_executor *ex = NULL;
    struct execbox_error err = {0};
    struct execbox_executor_options o = {
        .backend = backend, .pool_size = 1, .pool_preload = "os; import evil"};
    assert_int_equal(execbox_executor_new(&o, &ex, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "preload"));
    o.pool_preload = NULL;
    o.pool_size = 100000;
    assert_int_equal(execbox_executor_new(&o, &ex, &err), -EINVAL);
}

int main(void)
{
    /* A private TMPDIR so that leftovers can be counted exactly. */
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/execbox-test-pool-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    setenv("TMPDIR", tmpdir, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warm_run_looks_cold),
        cmocka_unit_test(test_warm_equals_cold),
        cmocka_unit_test(test_each_run_is_fresh),
        cmocka_unit_test(test_exhaustion_goes_cold),
        cmocka_unit_test(test_miss_forks_from_live_template),
        cmocka_unit_test(test_refill_yields_to_runs),
        cmocka_unit_test(test_policy_isolation),
        cmocka_unit_test(test_allow_list_isolation),
        cmocka_unit_test(test_timeout_counts_from_run_start),
        cmocka_unit_test(test_idle_expiry_and_teardown),
        cmocka_unit_test(test_bad_options),
    };
    int r = cmocka_run_group_tests_name("pool on subprocess", tests, NULL, NULL);
    /* The same group on the jail, where this machine has every wall of it. */
    struct execbox_check c;
    struct execbox_error err = {0};
    bool ready = execbox_check_backend("jail", NULL, &c, &err) == 0 && c.usable;
    for (size_t i = 0; ready && i < c.n_walls; i++)
        ready = c.walls[i].ok || !c.walls[i].required;
    if (ready) {
        backend = "jail";
        r |= cmocka_run_group_tests_name("pool on jail", tests, NULL, NULL);
    } else {
        printf("pool on jail: skipped, the jail is not ready here (execbox check -b jail)\n");
    }
    rmdir(tmpdir);
    return r;
}
