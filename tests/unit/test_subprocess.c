/* SPDX-License-Identifier: MIT */
/* test_subprocess.c - the `subprocess` backend through the public API: exit codes, signals,
 * timeouts (busy, sleeping, SIGTERM-deaf, double-forked daemon) with nothing of the run left
 * on the host afterwards, output caps, stdin, a large program, a missing interpreter, tracebacks,
 * workspace files, temp dir cleanup, cancellation, concurrent runs and live output.
 *
 * "Nothing left": every run's processes carry the private $TMPDIR of this test in their argv
 * (the program path) or environment (TMPDIR), and each test's helpers add their own marker to
 * argv; after every run /proc is scanned for both. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "backends/backend.h"
#include "base/limits.h"
#include "base/util.h"
#include "core/pipeline.h"
#include "execbox/execbox.h"
#include "model/lang.h"
#include "model/policy.h"
#include "model/result.h"
#include "proc/proc.h"

static char tmpdir[256]; /* our private $TMPDIR */
static struct execbox_executor *ex;

/* ---- helpers ---------------------------------------------------------------------------- */

static bool file_contains(const char *path, const char *needle)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    static __thread char buf[1 << 16];
    ssize_t n = eb_read_full(fd, buf, sizeof(buf));
    close(fd);
    return n > 0 && memmem(buf, (size_t)n, needle, strlen(needle)) != NULL;
}

/* Pids (other than ours) whose argv or environment contains marker. */
static int leftovers(const char *marker, pid_t *first, bool kill_found)
{
    DIR *d = opendir("/proc");
    assert_non_null(d);
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0 || pid == getpid())
            continue;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
        bool hit = file_contains(path, marker);
        snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
        hit = hit || file_contains(path, marker);
        if (hit) {
            if (first && !count)
                *first = (pid_t)pid;
            count++;
            /* A failing check still cleans up: later tests (and the host) must not inherit
             * the escapee. */
            if (kill_found)
                kill((pid_t)pid, SIGKILL);
        }
    }
    closedir(d);
    return count;
}

static void assert_nothing_left(const char *marker)
{
    pid_t pid = 0;
    int n = leftovers(marker, &pid, false);
    if (n) {
        char path[64], cmd[256] = "";
        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
        FILE *f = fopen(path, "r");
        if (f) {
            size_t k = fread(cmd, 1, sizeof(cmd) - 1, f);
            for (size_t i = 0; i < k; i++)
                if (!cmd[i])
                    cmd[i] = ' ';
            fclose(f);
        }
        leftovers(marker, NULL, true);
        fail_msg("%d process(es) of the run left, e.g. pid %d: %s", n, (int)pid, cmd);
    }
}

/* execbox-run-* directories in our $TMPDIR. */
static int temp_dirs(void)
{
    DIR *d = opendir(tmpdir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strncmp(de->d_name, "execbox-run-", 12) == 0)
            n++;
    closedir(d);
    return n;
}

static struct execbox_policy quick_policy(double timeout)
{
    struct execbox_policy p;
    execbox_policy_init(&p);
    p.timeout = timeout;
    return p;
}

/* Runs req; asserts the API call succeeded, that no process of any run is left and that no
 * temp dir remains. */
static struct execbox_result *run_req(struct execbox_request *req)
{
    struct execbox_result *r = NULL;
    struct execbox_error err = {0, ""};
    int rc = execbox_executor_run(ex, req, &r, &err);
    if (rc != 0)
        fail_msg("execbox_executor_run: %d %s", rc, err.msg);
    assert_non_null(r);
    assert_string_equal(r->backend, "subprocess");
    assert_nothing_left(tmpdir);
    assert_int_equal(temp_dirs(), 0);
    return r;
}

static struct execbox_result *run_py(const char *code, double timeout)
{
    struct execbox_policy p = quick_policy(timeout);
    struct execbox_request req = {.code = code, .policy = &p};
    return run_req(&req);
}

static void assert_contains(const char *hay, const char *needle)
{
    if (!hay || !strstr(hay, needle))
        fail_msg("'%.300s' does not contain '%s'", hay ? hay : "(null)", needle);
}

static void marker(char *buf, size_t n, const char *what)
{
    static int counter;
    snprintf(buf, n, "EBMARK-%s-%d-%d", what, (int)getpid(), ++counter);
}

/* ---- exit codes and signals --------------------------------------------------------------- */

static void test_exit_codes(void **state)
{
    (void)state;
    struct execbox_result *r = run_py("print(6*7)", 5);
    assert_int_equal(r->exit_code, 0);
    assert_string_equal(r->stdout_data, "42\n");
    assert_int_equal(r->stdout_bytes, 3);
    assert_false(r->timed_out);
    assert_int_equal(r->signal, 0);
    assert_null(r->error_name);
    assert_string_equal(r->language, "python");
    assert_true(r->cpu_time >= 0);
    assert_true(r->peak_memory_bytes > 0);
    assert_true(r->execution_time > 0);
    execbox_result_free(r);
    r = run_py("import sys\nsys.exit(3)", 5);
    assert_int_equal(r->exit_code, 3);
    assert_non_null(r->error_name);
    assert_string_equal(r->error_name, "ExitStatus");
    assert_string_equal(r->error_value, "exit status 3");
    execbox_result_free(r);
    r = run_py("import sys\nsys.exit('bye')", 5);
    assert_int_equal(r->exit_code, 1);
    assert_string_equal(r->stderr_data, "bye\n");
    /* A SystemExit message is not an exception: only the exit status is named. */
    assert_non_null(r->error_name);
    assert_string_equal(r->error_name, "ExitStatus");
    assert_string_equal(r->error_value, "exit status 1");
    assert_string_equal(r->error_traceback, "");
    execbox_result_free(r);
    struct execbox_policy p = quick_policy(5);
    struct execbox_request req = {
        .language = "bash", .code = "echo $((40+2)); exit 42", .policy = &p};
    r = run_req(&req);
    assert_int_equal(r->exit_code, 42);
    assert_string_equal(r->stdout_data, "42\n");
    assert_string_equal(r->language, "bash");
    execbox_result_free(r);
    if (access("/usr/bin/node", X_OK) == 0) {
        struct execbox_request js = {
            .language = "javascript", .code = "console.log(6*7); process.exit(5)", .policy = &p};
        r = run_req(&js);
        assert_int_equal(r->exit_code, 5);
        assert_string_equal(r->stdout_data, "42\n");
        assert_string_equal(r->language, "javascript");
        execbox_result_free(r);
    }
}

static void test_signals(void **state)
{
    (void)state;
    struct execbox_result *r = run_py("import os, signal\nprint('before', flush=True)\n"
                                      "os.kill(os.getpid(), signal.SIGKILL)",
                                      5);
    assert_int_equal(r->exit_code, 137);
    assert_int_equal(r->signal, 9);
    assert_string_equal(r->stdout_data, "before\n");
    assert_false(r->timed_out);
    execbox_result_free(r);
    r = run_py("import ctypes\nctypes.string_at(0)", 5);
    assert_int_equal(r->exit_code, 139);
    assert_int_equal(r->signal, 11);
    execbox_result_free(r);
    r = run_py("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)", 5);
    assert_int_equal(r->exit_code, 143);
    assert_int_equal(r->signal, 15);
    execbox_result_free(r);
}

/* ---- timeouts ------------------------------------------------------------------------------ */

static void check_timeout(struct execbox_result *r, double timeout)
{
    assert_int_equal(r->exit_code, 124);
    assert_true(r->timed_out);
    assert_int_equal(r->killed_reason, EXECBOX_KILLED_TIMEOUT);
    assert_non_null(r->error_name);
    assert_string_equal(r->error_name, "Timeout");
    assert_true(r->execution_time >= timeout);
    /* Partial output is kept. */
    assert_contains(r->stdout_data, "started\n");
    assert_contains(r->stderr_data, "err started\n");
}

/* The timeout's message, in English: "1 second", "2 seconds", "0.5 seconds". */
static void test_timeout_message(void **state)
{
    (void)state;
    static const struct {
        double timeout;
        const char *value;
    } cases[] = {
        {1, "execution exceeded the time limit of 1 second and was killed"},
        {2, "execution exceeded the time limit of 2 seconds and was killed"},
        {0.5, "execution exceeded the time limit of 0.5 seconds and was killed"},
        {1.5, "execution exceeded the time limit of 1.5 seconds and was killed"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct execbox_policy pol = quick_policy(cases[i].timeout);
        struct eb_outcome oc = {.timed_out = true};
        struct execbox_result *r = eb_result_new("subprocess", "python");
        assert_non_null(r);
        eb_outcome_to_result(&oc, &pol, r);
        assert_string_equal(r->error_name, "Timeout");
        assert_string_equal(r->error_value, cases[i].value);
        execbox_result_free(r);
    }
}

static void test_timeout_busy_loop(void **state)
{
    (void)state;
    struct execbox_result *r = run_py("import sys\nprint('started')\n"
                                      "print('err started', file=sys.stderr)\nwhile True: pass",
                                      1.0);
    check_timeout(r, 1.0);
    execbox_result_free(r);
}

static void test_timeout_sleep(void **state)
{
    (void)state;
    struct execbox_result *r = run_py("import sys, time\nprint('started')\n"
                                      "print('err started', file=sys.stderr)\ntime.sleep(100)",
                                      1.0);
    check_timeout(r, 1.0);
    execbox_result_free(r);
}

static void test_timeout_ignores_sigterm(void **state)
{
    (void)state;
    char m[64], code[1024];
    marker(m, sizeof(m), "deaf");
    snprintf(code, sizeof(code),
             "import os, signal, sys\n"
             "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
             "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
             "if os.fork() == 0:\n"
             "    os.execv(sys.executable, [sys.executable, '-c', 'import signal, time\\n"
             "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\ntime.sleep(100)', '%s'])\n"
             "print('started')\nprint('err started', file=sys.stderr)\n"
             "import time\ntime.sleep(100)\n",
             m);
    struct execbox_result *r = run_py(code, 1.0);
    check_timeout(r, 1.0);
    assert_nothing_left(m);
    execbox_result_free(r);
}

/* A daemon: fork, setsid, fork again, the grandchild becomes a python sleeping with marker in
 * its argv. keep_pipes: it keeps our stdout/stderr open. */
static void daemon_code(char *code, size_t n, const char *m, bool keep_pipes, const char *then)
{
    snprintf(code, n,
             "import os, sys, time\n"
             "if os.fork() == 0:\n"
             "    os.setsid()\n"
             "    if os.fork() == 0:\n"
             "        %s\n"
             "        os.execv(sys.executable, [sys.executable, '-c', "
             "'import time; time.sleep(100)', '%s'])\n"
             "    os._exit(0)\n"
             "os.wait()\n"
             "print('started')\nprint('err started', file=sys.stderr)\n"
             "%s\n",
             keep_pipes ? "pass"
                        : "fd = os.open('/dev/null', os.O_RDWR); os.dup2(fd, 1); os.dup2(fd, 2)",
             m, then);
}

static void test_timeout_double_fork(void **state)
{
    (void)state;
    char m[64], code[2048];
    marker(m, sizeof(m), "daemon");
    daemon_code(code, sizeof(code), m, true, "time.sleep(100)");
    struct execbox_result *r = run_py(code, 1.0);
    check_timeout(r, 1.0);
    assert_nothing_left(m);
    execbox_result_free(r);
}

static void test_daemon_after_normal_exit(void **state)
{
    (void)state;
    /* The program exits 0 at once, leaving a daemon behind: it must not outlive the run,
     * whether or not it holds our pipes. */
    for (int keep = 0; keep < 2; keep++) {
        char m[64], code[2048];
        marker(m, sizeof(m), "leftover");
        daemon_code(code, sizeof(code), m, keep, "time.sleep(0.2)");
        struct execbox_result *r = run_py(code, 10);
        assert_int_equal(r->exit_code, 0);
        assert_false(r->timed_out);
        assert_string_equal(r->stdout_data, "started\n");
        assert_nothing_left(m);
        execbox_result_free(r);
    }
}

/* ---- output -------------------------------------------------------------------------------- */

static void test_output_capped(void **state)
{
    (void)state;
    /* 50 MB on each stream, interleaved, under a 64 KiB cap: counted exactly, head and tail
     * kept, the middle dropped with a marker. */
    const char *code = "import sys\n"
                       "o, e = sys.stdout.buffer, sys.stderr.buffer\n"
                       "o.write(b'OUT-BEGIN'); e.write(b'ERR-BEGIN')\n"
                       "chunk = b'x' * (1 << 20)\n"
                       "for i in range(50):\n"
                       "    o.write(chunk); e.write(chunk)\n"
                       "o.write(b'OUT-END'); e.write(b'ERR-END')\n";
    struct execbox_policy p = quick_policy(30);
    p.output_limit = 64 << 10;
    struct execbox_request req = {.code = code, .policy = &p};
    struct execbox_result *r = run_req(&req);
    assert_int_equal(r->exit_code, 0);
    assert_int_equal(r->stdout_bytes, 50ULL * (1 << 20) + 9 + 7);
    assert_int_equal(r->stderr_bytes, 50ULL * (1 << 20) + 9 + 7);
    assert_true(r->stdout_truncated);
    assert_true(r->stderr_truncated);
    assert_true(r->stdout_len < (64 << 10) + 128);
    assert_true(r->stdout_len > (64 << 10));
    assert_int_equal(strncmp(r->stdout_data, "OUT-BEGIN", 9), 0);
    assert_int_equal(strncmp(r->stderr_data, "ERR-BEGIN", 9), 0);
    assert_string_equal(r->stdout_data + r->stdout_len - 7, "OUT-END");
    assert_string_equal(r->stderr_data + r->stderr_len - 7, "ERR-END");
    assert_contains(r->stdout_data, "bytes omitted");
    assert_contains(r->stderr_data, "bytes omitted");
    execbox_result_free(r);

    /* Just under the cap: all of it, not truncated. */
    p.output_limit = 1 << 20;
    req.code = "import sys\nsys.stdout.write('y' * 1048576)";
    r = run_req(&req);
    assert_int_equal(r->stdout_bytes, 1 << 20);
    assert_int_equal(r->stdout_len, 1 << 20);
    assert_false(r->stdout_truncated);
    assert_false(r->stderr_truncated);
    execbox_result_free(r);
}

static void test_stdin(void **state)
{
    (void)state;
    struct execbox_policy p = quick_policy(5);
    struct execbox_request req = {.code = "import sys\nprint(sys.stdin.read().upper(), end='')",
                                  .stdin_data = "hello\nworld\n",
                                  .stdin_len = 12,
                                  .policy = &p};
    struct execbox_result *r = run_req(&req);
    assert_int_equal(r->exit_code, 0);
    assert_string_equal(r->stdout_data, "HELLO\nWORLD\n");
    execbox_result_free(r);
    /* No stdin: /dev/null, read returns at once. */
    req.stdin_data = NULL;
    req.stdin_len = 0;
    req.code = "import sys\nprint(repr(sys.stdin.read()))";
    r = run_req(&req);
    assert_string_equal(r->stdout_data, "''\n");
    execbox_result_free(r);
    /* 4 MiB of stdin with NUL bytes, more than a pipe holds. */
    size_t n = 4 << 20;
    char *in = malloc(n);
    assert_non_null(in);
    for (size_t i = 0; i < n; i++)
        in[i] = (char)(i % 251);
    req.stdin_data = in;
    req.stdin_len = n;
    req.code = "import sys, hashlib\nd = sys.stdin.buffer.read()\n"
               "print(len(d), sum(d) % 1000003, d[:3] == bytes([0, 1, 2]))";
    r = run_req(&req);
    unsigned long long sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (unsigned char)in[i];
    char want[128];
    snprintf(want, sizeof(want), "%zu %llu True\n", n, sum % 1000003);
    assert_string_equal(r->stdout_data, want);
    execbox_result_free(r);
    free(in);
}

static void test_large_program(void **state)
{
    (void)state;
    size_t cap = (1 << 20) + 4096, n = 0;
    char *code = malloc(cap);
    assert_non_null(code);
    n += (size_t)snprintf(code + n, cap - n, "x = 0\n");
    int lines = 0;
    while (n < (1 << 20)) {
        n += (size_t)snprintf(code + n, cap - n, "x += 1  # padding padding padding\n");
        lines++;
    }
    n += (size_t)snprintf(code + n, cap - n, "print(x)\n");
    struct execbox_policy p = quick_policy(30);
    struct execbox_request req = {.code = code, .code_len = n, .policy = &p};
    struct execbox_result *r = run_req(&req);
    char want[32];
    snprintf(want, sizeof(want), "%d\n", lines);
    assert_int_equal(r->exit_code, 0);
    assert_string_equal(r->stdout_data, want);
    execbox_result_free(r);
    free(code);
}

/* ---- failures ------------------------------------------------------------------------------ */

static void test_missing_interpreter(void **state)
{
    (void)state;
    static const struct eb_language fake = {
        "python", "/nonexistent/execbox-test/python3", {NULL}, "main.py", RLIMIT_AS};
    struct execbox_policy p = quick_policy(5);
    struct execbox_request req = {.code = "print(1)", .policy = &p};
    struct eb_run run = {.req = &req,
                         .policy = &p,
                         .lang = &fake,
                         .code = req.code,
                         .code_len = 8,
                         .start_ns = eb_now_ns()};
    struct execbox_result *r = eb_result_new("subprocess", "python");
    assert_non_null(r);
    struct execbox_error err = {0, ""};
    int rc = eb_backend_run_cold(&eb_backend_subprocess, NULL, &run, r, &err);
    assert_int_equal(rc, 0);
    assert_int_equal(r->exit_code, 1);
    assert_non_null(r->error_name);
    assert_string_equal(r->error_name, "SandboxError");
    assert_contains(r->error_value, "/nonexistent/execbox-test/python3");
    assert_contains(r->stderr_data, "/nonexistent/execbox-test/python3");
    assert_false(r->timed_out);
    assert_nothing_left(tmpdir);
    assert_int_equal(temp_dirs(), 0);
    execbox_result_free(r);
}

static void test_sandbox_error_bad_workspace(void **state)
{
    (void)state;
    /* The sandbox cannot start (the workspace is a file): a result saying so, not an API
     * error. */
    struct execbox_policy p = quick_policy(5);
    snprintf(p.workspace, sizeof(p.workspace), "/etc/passwd");
    struct execbox_request req = {.code = "print(1)", .policy = &p};
    struct execbox_result *r = run_req(&req);
    assert_int_equal(r->exit_code, 1);
    assert_string_equal(r->error_name, "SandboxError");
    assert_contains(r->stderr_data, "/etc/passwd");
    assert_string_equal(r->stdout_data ? r->stdout_data : "", "");
    execbox_result_free(r);
}

static void test_bad_requests(void **state)
{
    (void)state;
    struct execbox_result *r = NULL;
    struct execbox_error err = {0, ""};
    struct execbox_request req = {.language = "cobol", .code = "x"};
    assert_int_equal(execbox_executor_run(ex, &req, &r, &err), -EINVAL);
    assert_contains(err.msg, "cobol");
    assert_null(r);
    req.language = NULL;
    req.code = NULL;
    assert_int_equal(execbox_executor_run(ex, &req, &r, &err), -EINVAL);
    req.code = "x";
    req.code_len = EXECBOX_CODE_MAX + 1;
    assert_int_equal(execbox_executor_run(ex, &req, &r, &err), -E2BIG);
    req.code_len = 0;
    req.stdin_data = "x";
    req.stdin_len = EXECBOX_STDIN_MAX + 1;
    assert_int_equal(execbox_executor_run(ex, &req, &r, &err), -E2BIG);
    assert_null(r);
    struct execbox_executor *e2 = NULL;
    struct execbox_executor_options o = {.backend = "nope"};
    assert_int_equal(execbox_executor_new(&o, &e2, &err), -ENOENT);
    assert_contains(err.msg, "nope");
    assert_int_equal(temp_dirs(), 0);
}

static void test_traceback(void **state)
{
    (void)state;
    struct execbox_result *r = run_py("def f():\n    raise ValueError('boom')\nf()\n", 5);
    assert_int_equal(r->exit_code, 1);
    assert_non_null(r->error_name);
    assert_string_equal(r->error_name, "ValueError");
    assert_string_equal(r->error_value, "boom");
    assert_contains(r->error_traceback, "Traceback (most recent call last):");
    assert_contains(r->error_traceback, "line 2, in f");
    execbox_result_free(r);
    r = run_py("def f(:\n", 5);
    assert_int_equal(r->exit_code, 1);
    assert_string_equal(r->error_name, "SyntaxError");
    execbox_result_free(r);
}

/* ---- the workspace ------------------------------------------------------------------------- */

static void test_workspace_files(void **state)
{
    (void)state;
    const char *code = "import os\n"
                       "open('a.txt', 'w').write('hello')\n"
                       "os.mkdir('sub')\n"
                       "open('sub/b.csv', 'w').write('x,y\\n1,2\\n')\n"
                       "png = b'\\x89PNG\\r\\n\\x1a\\n' + b'\\0' * 24\n"
                       "open('plot.png', 'wb').write(png)\n"
                       "open('fake.png', 'wb').write(b'not a png at all')\n"
                       "open('big.png', 'wb').write(png + b'\\0' * 10000)\n"
                       "os.symlink('/etc/passwd', 'link.png')\n"
                       "os.symlink('/etc', 'linkdir')\n"
                       "print(os.getcwd() == os.environ['HOME'])\n";
    struct execbox_policy p = quick_policy(5);
    struct execbox_request req = {.code = code, .policy = &p, .inline_files_max = 4096};
    struct execbox_result *r = run_req(&req);
    assert_int_equal(r->exit_code, 0);
    assert_string_equal(r->stdout_data, "True\n");
    static const struct {
        const char *path, *mime;
        uint64_t size;
        bool data;
    } want[] = {
        {"a.txt", "text/plain", 5, false},    {"big.png", "image/png", 10032, false},
        {"fake.png", "image/png", 16, false}, {"plot.png", "image/png", 32, true},
        {"sub/b.csv", "text/csv", 8, false},
    };
    if (r->n_files != 5) {
        for (size_t i = 0; i < r->n_files; i++)
            print_message("file %s\n", r->files[i].path);
        fail_msg("%zu files listed, want 5", r->n_files);
    }
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(r->files[i].path, want[i].path);
        assert_string_equal(r->files[i].mime, want[i].mime);
        assert_int_equal(r->files[i].size, want[i].size);
        assert_int_equal(r->files[i].data != NULL, want[i].data);
    }
    assert_int_equal(r->files[3].data_len, 32);
    assert_memory_equal(r->files[3].data, "\x89PNG\r\n\x1a\n", 8);
    assert_false(r->files_truncated);
    execbox_result_free(r);
    /* inline_files_max 0: nothing inline. */
    req.inline_files_max = 0;
    r = run_req(&req);
    for (size_t i = 0; i < r->n_files; i++)
        assert_null(r->files[i].data);
    execbox_result_free(r);
}

static void test_workspace_limits(void **state)
{
    (void)state;
    /* More files than are listed, deeper than is walked; and a planted link to a directory
     * of ours, which the cleanup of the fresh workspace must not follow. */
    char canary_dir[512], canary[600], code[2048];
    snprintf(canary_dir, sizeof(canary_dir), "%s/canary", tmpdir);
    assert_int_equal(mkdir(canary_dir, 0700), 0);
    snprintf(canary, sizeof(canary), "%s/keep.txt", canary_dir);
    FILE *f = fopen(canary, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(code, sizeof(code),
             "import os\n"
             "for i in range(300): open('f%%03d.txt' %% i, 'w').close()\n"
             "os.symlink('%s', 'outside')\n"
             "os.mkfifo('fifo.png')\n",
             canary_dir);
    struct execbox_policy p = quick_policy(10);
    struct execbox_request req = {.code = code, .policy = &p, .inline_files_max = 1 << 20};
    struct execbox_result *r = run_req(&req);
    assert_int_equal(r->exit_code, 0);
    assert_int_equal(r->n_files, 256);
    assert_true(r->files_truncated);
    for (size_t i = 0; i < r->n_files; i++) {
        assert_int_equal(strncmp(r->files[i].path, "f", 1), 0);
        assert_null(r->files[i].data);
    }
    execbox_result_free(r);
    assert_int_equal(access(canary, F_OK), 0);

    req.code = "import os\nd = '.'\n"
               "for i in range(12):\n"
               "    d = os.path.join(d, 'd%d' % i)\n"
               "    os.mkdir(d)\n"
               "    open(os.path.join(d, 'x.txt'), 'w').close()\n";
    r = run_req(&req);
    assert_int_equal(r->exit_code, 0);
    /* EB_FILES_DEPTH (8) directory levels are walked: d0/x.txt .. d0/../d7/x.txt. */
    assert_int_equal(r->n_files, 8);
    assert_string_equal(r->files[0].path, "d0/d1/d2/d3/d4/d5/d6/d7/x.txt"); /* sorted */
    assert_false(r->files_truncated);
    execbox_result_free(r);
    unlink(canary);
    rmdir(canary_dir);
}

static void test_workspace_swapped_for_link(void **state)
{
    (void)state;
    /* The code replaces its workspace and its TMPDIR with links to a directory of ours:
     * listing the files and removing the run's temp dir must not follow them. */
    char canary_dir[512], canary[600], code[2048];
    snprintf(canary_dir, sizeof(canary_dir), "%s/canary2", tmpdir);
    assert_int_equal(mkdir(canary_dir, 0700), 0);
    snprintf(canary, sizeof(canary), "%s/keep.png", canary_dir);
    FILE *f = fopen(canary, "w");
    assert_non_null(f);
    fputs("\x89PNG\r\n\x1a\n", f);
    fclose(f);
    snprintf(code, sizeof(code),
             "import os, shutil\n"
             "ws, tmp = os.getcwd(), os.environ['TMPDIR']\n"
             "os.chdir('/')\n"
             "shutil.rmtree(ws); os.symlink('%s', ws)\n"
             "shutil.rmtree(tmp); os.symlink('%s', tmp)\n"
             "print('swapped')\n",
             canary_dir, canary_dir);
    struct execbox_policy p = quick_policy(10);
    struct execbox_request req = {.code = code, .policy = &p, .inline_files_max = 4096};
    struct execbox_result *r = run_req(&req);
    assert_int_equal(r->exit_code, 0);
    assert_string_equal(r->stdout_data, "swapped\n");
    assert_int_equal(r->n_files, 0);
    execbox_result_free(r);
    assert_int_equal(access(canary, F_OK), 0);
    unlink(canary);
    assert_int_equal(rmdir(canary_dir), 0);
}

static void test_given_workspace(void **state)
{
    (void)state;
    char ws[512];
    snprintf(ws, sizeof(ws), "%s/given-ws", tmpdir);
    assert_int_equal(mkdir(ws, 0700), 0);
    char path[600];
    snprintf(path, sizeof(path), "%s/input.txt", ws);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("from the caller", f);
    fclose(f);
    struct execbox_policy p = quick_policy(5);
    snprintf(p.workspace, sizeof(p.workspace), "%s", ws);
    struct execbox_request req = {
        .code = "import os\nprint(os.getcwd())\nprint(os.environ['HOME'])\n"
                "print(open('input.txt').read())\nopen('output.txt', 'w').write('kept')\n",
        .policy = &p};
    struct execbox_result *r = run_req(&req);
    char want[2048];
    snprintf(want, sizeof(want), "%s\n%s\nfrom the caller\n", ws, ws);
    assert_string_equal(r->stdout_data, want);
    assert_int_equal(r->n_files, 2);
    assert_string_equal(r->files[0].path, "input.txt");
    assert_string_equal(r->files[1].path, "output.txt");
    execbox_result_free(r);
    /* The caller's workspace and what the code left there stay. */
    snprintf(path, sizeof(path), "%s/output.txt", ws);
    assert_true(file_contains(path, "kept"));
    unlink(path);
    snprintf(path, sizeof(path), "%s/input.txt", ws);
    unlink(path);
    assert_int_equal(rmdir(ws), 0);
}

static void test_environment_scrubbed(void **state)
{
    (void)state;
    setenv("EXECBOX_TEST_SECRET", "s3cret", 1);
    struct execbox_result *r =
        run_py("import os\nprint(sorted(k for k in os.environ if 'SECRET' in k))\n"
               "print(os.environ['TMPDIR'])\nprint(os.environ['PATH'])",
               5);
    unsetenv("EXECBOX_TEST_SECRET");
    assert_int_equal(strncmp(r->stdout_data, "[]\n", 3), 0);
    /* The run's own TMPDIR, inside ours. */
    assert_int_equal(strncmp(r->stdout_data + 3, tmpdir, strlen(tmpdir)), 0);
    assert_contains(r->stdout_data, "/execbox-run-");
    assert_contains(r->stdout_data, "\n/usr/local/bin:/usr/bin:/bin\n");
    execbox_result_free(r);
}

static void test_leftover_detector(void **state)
{
    (void)state;
    /* The "nothing left" check itself must see a live process of ours. */
    char m[64];
    marker(m, sizeof(m), "self");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/usr/bin/python3", "python3", "-c", "import time; time.sleep(30)", m, (char *)NULL);
        _exit(127);
    }
    int found = 0;
    for (int i = 0; i < 500 && !found; i++) {
        found = leftovers(m, NULL, false);
        if (!found)
            usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(found, 1);
    assert_int_equal(leftovers(m, NULL, false), 0);
}

/* ---- cancellation, concurrency, live output ------------------------------------------------ */

struct canceller {
    struct execbox_cancel *c;
    int delay_ms;
};

static void *cancel_later(void *arg)
{
    struct canceller *k = arg;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)k->delay_ms * 1000000L};
    nanosleep(&ts, NULL);
    execbox_cancel_fire(k->c);
    return NULL;
}

static void test_cancel(void **state)
{
    (void)state;
    struct execbox_cancel *c = NULL;
    assert_int_equal(execbox_cancel_new(&c, NULL), 0);
    struct execbox_policy p = quick_policy(60);
    char m[64], code[2048];
    marker(m, sizeof(m), "cancel");
    daemon_code(code, sizeof(code), m, true, "time.sleep(100)");
    struct execbox_request req = {.code = code, .policy = &p, .cancel = c};
    struct canceller k = {c, 300};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, cancel_later, &k), 0);
    struct execbox_result *r = run_req(&req);
    pthread_join(t, NULL);
    assert_int_equal(r->killed_reason, EXECBOX_KILLED_CANCELLED);
    assert_int_equal(r->exit_code, 137);
    assert_false(r->timed_out);
    assert_string_equal(r->error_name, "Cancelled");
    assert_true(r->execution_time < 60);
    assert_nothing_left(m);
    execbox_result_free(r);
    /* A token fired before the run cancels it at once. */
    r = run_req(&req);
    assert_int_equal(r->killed_reason, EXECBOX_KILLED_CANCELLED);
    execbox_result_free(r);
    execbox_cancel_free(c);
}

#define N_THREADS 20

struct job {
    int id;
    struct execbox_result *r;
    int rc;
    char code[512];
    char in[64];
};

static void *run_job(void *arg)
{
    struct job *j = arg;
    struct execbox_policy p = quick_policy(60);
    struct execbox_request req = {.code = j->code,
                                  .stdin_data = j->in,
                                  .stdin_len = strlen(j->in),
                                  .policy = &p,
                                  .language = j->id % 3 == 2 ? "bash" : "python"};
    struct execbox_error err = {0, ""};
    j->rc = execbox_executor_run(ex, &req, &j->r, &err);
    return NULL;
}

static void test_concurrent(void **state)
{
    (void)state;
    struct job jobs[N_THREADS];
    pthread_t t[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        memset(&jobs[i], 0, sizeof(jobs[i]));
        jobs[i].id = i;
        snprintf(jobs[i].in, sizeof(jobs[i].in), "stdin-of-%d", i);
        if (i % 3 == 2)
            snprintf(jobs[i].code, sizeof(jobs[i].code),
                     "read x; echo \"job %d $x\"; echo \"err %d\" >&2; echo file > f%d.txt; "
                     "exit %d",
                     i, i, i, i % 7);
        else
            snprintf(jobs[i].code, sizeof(jobs[i].code),
                     "import sys\nx = sys.stdin.read()\nprint('job %d', x)\n"
                     "print('err %d', file=sys.stderr)\nopen('f%d.txt', 'w').write('file')\n"
                     "sys.exit(%d)\n",
                     i, i, i, i % 7);
        assert_int_equal(pthread_create(&t[i], NULL, run_job, &jobs[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < N_THREADS; i++) {
        struct execbox_result *r = jobs[i].r;
        assert_int_equal(jobs[i].rc, 0);
        char want[64], file[32];
        snprintf(want, sizeof(want), "job %d stdin-of-%d\n", i, i);
        assert_string_equal(r->stdout_data, want);
        snprintf(want, sizeof(want), "err %d\n", i);
        assert_string_equal(r->stderr_data, want);
        assert_int_equal(r->exit_code, i % 7);
        assert_int_equal(r->n_files, 1);
        snprintf(file, sizeof(file), "f%d.txt", i);
        assert_string_equal(r->files[0].path, file);
        assert_string_equal(r->language, i % 3 == 2 ? "bash" : "python");
        execbox_result_free(r);
    }
    assert_nothing_left(tmpdir);
    assert_int_equal(temp_dirs(), 0);
}

struct live {
    char *buf;
    size_t len, cap;
    int calls;
    const char *flag; /* created when "first" has been seen */
    bool flagged;
};

static void on_output(void *ud, enum execbox_stream s, const char *data, size_t len)
{
    struct live *l = ud;
    if (s != EXECBOX_STREAM_STDOUT)
        return;
    l->calls++;
    if (l->len + len + 1 > l->cap) {
        l->cap = (l->len + len + 1) * 2;
        l->buf = realloc(l->buf, l->cap);
        assert_non_null(l->buf);
    }
    memcpy(l->buf + l->len, data, len);
    l->len += len;
    l->buf[l->len] = '\0';
    if (!l->flagged && strstr(l->buf, "first\n")) {
        /* The guest waits for this file: it only appears if output arrives live. */
        FILE *f = fopen(l->flag, "w");
        assert_non_null(f);
        fclose(f);
        l->flagged = true;
    }
}

static void test_live_output(void **state)
{
    (void)state;
    char ws[512], flag[600];
    snprintf(ws, sizeof(ws), "%s/live-ws", tmpdir);
    assert_int_equal(mkdir(ws, 0700), 0);
    snprintf(flag, sizeof(flag), "%s/go", ws);
    struct live l = {.flag = flag};
    struct execbox_policy p = quick_policy(20);
    snprintf(p.workspace, sizeof(p.workspace), "%s", ws);
    struct execbox_request req = {.code = "import os, time\nprint('first', flush=True)\n"
                                          "while not os.path.exists('go'): time.sleep(0.01)\n"
                                          "for i in range(20000): print(i)\nprint('last')\n",
                                  .policy = &p,
                                  .on_output = on_output,
                                  .userdata = &l};
    struct execbox_result *r = run_req(&req);
    assert_false(r->timed_out);
    assert_int_equal(r->exit_code, 0);
    assert_true(l.flagged);
    assert_true(l.calls >= 2);
    /* Every byte, in order, the same as the result's stdout. */
    assert_int_equal(l.len, r->stdout_len);
    assert_memory_equal(l.buf, r->stdout_data, l.len);
    assert_int_equal(strncmp(l.buf, "first\n0\n1\n2\n", 12), 0);
    execbox_result_free(r);
    free(l.buf);
    unlink(flag);
    rmdir(ws);
}

/* ---- setup ---------------------------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    struct execbox_executor_options o = {.backend = "subprocess"};
    struct execbox_error err = {0, ""};
    if (execbox_executor_new(&o, &ex, &err) < 0) {
        fprintf(stderr, "executor: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ex = execbox_executor_free(ex);
    return 0;
}

/* More fds to keep than the sweep can hold: it refuses and closes nothing (it used to keep
 * the first EB_KEEP_FDS_MAX and close the rest, silently). Run in a child: a sweep closes. */
static void test_close_all_except_refuses_too_many(void **state)
{
    (void)state;
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        int keep[EB_KEEP_FDS_MAX + 1];
        for (int i = 0; i < EB_KEEP_FDS_MAX + 1; i++)
            keep[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (eb_close_all_except(keep, EB_KEEP_FDS_MAX + 1) != -E2BIG)
            _exit(1);
        if (fcntl(keep[EB_KEEP_FDS_MAX], F_GETFD) < 0 || fcntl(2, F_GETFD) < 0)
            _exit(2); /* something was closed */
        if (eb_close_all_except(keep, EB_KEEP_FDS_MAX) != 0)
            _exit(3);
        if (fcntl(keep[EB_KEEP_FDS_MAX], F_GETFD) >= 0 || fcntl(keep[0], F_GETFD) < 0)
            _exit(4);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* Every wait has a deadline, with or without a pidfd (none can be opened when the fd table is
 * full: the prewarm used to wait forever then), and no status is read from a failed wait. */
static void test_wait_child_deadline(void **state)
{
    (void)state;
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        pid_t sleeper = fork();
        if (sleeper == 0) {
            pause();
            _exit(0);
        }
        struct rlimit rl = {0, 0};
        setrlimit(RLIMIT_NOFILE, &rl); /* no pidfd can be opened now */
        int st = -1;
        uint64_t t0 = eb_now_ns();
        int r = eb_wait_child(sleeper, 200, &st);
        uint64_t ms = (eb_now_ns() - t0) / 1000000U;
        if (r != -ETIMEDOUT || !WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL || ms > 5000)
            _exit(1);
        st = 12345;
        if (eb_wait_child(getppid(), 100, &st) != -ECHILD || st != 12345)
            _exit(2);
        pid_t quick = fork();
        if (quick == 0)
            _exit(7);
        if (eb_wait_child(quick, 5000, &st) != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
            _exit(3);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* A sandbox whose status pipe says EB_MSG_DONE while its output never stops (the pipe made
 * large and fed by several processes, read by a slow on_output, so that a read never finds it
 * empty): the supervision
 * still ends at the run's deadline, timed out, whether the record is believed (done_ok: it
 * drains, but by the deadline) or not (a session's cell wrote it). Before, the drain after the
 * record read on for as long as the writers wrote. */
static void slow_output(void *ud, enum execbox_stream which, const char *data, size_t len)
{
    (void)ud;
    (void)which;
    (void)data;
    (void)len;
    usleep(2000); /* a client that takes its time: the writers keep the pipe full */
}

static void supervise_done_flood(bool done_ok)
{
    int out[2], errp[2], status[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    assert_int_equal(pipe2(errp, O_CLOEXEC), 0);
    assert_int_equal(pipe2(status, O_CLOEXEC), 0);
    (void)fcntl(out[1], F_SETPIPE_SZ, 1 << 20);
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        setpgid(0, 0);
        close(out[0]); /* the writers die of EPIPE if the test itself is gone */
        close(errp[0]);
        close(status[0]);
        static char buf[65536];
        memset(buf, 'x', sizeof(buf));
        for (int i = 0; i < 3; i++)
            if (fork() == 0)
                for (;;)
                    (void)!write(out[1], buf, sizeof(buf));
        for (int i = 0; i < 16; i++)
            (void)!write(out[1], buf, sizeof(buf));
        struct eb_msg m;
        memset(&m, 0, sizeof(m));
        m.type = EB_MSG_DONE;
        (void)!write(status[1], &m, sizeof(m));
        for (;;)
            (void)!write(out[1], buf, sizeof(buf));
    }
    setpgid(p, p);
    close(out[1]);
    close(errp[1]);
    close(status[1]);
    struct eb_child c;
    eb_child_init(&c);
    c.pid = p;
    c.pidfd = (int)syscall(SYS_pidfd_open, p, 0);
    assert_true(c.pidfd >= 0);
    c.out_fd = out[0];
    c.err_fd = errp[0];
    c.status_fd = status[0];
    c.kill_pgid = p;
    c.done_ok = done_ok;
    struct execbox_policy pol;
    memset(&pol, 0, sizeof(pol));
    eb_policy_resolve(&pol);
    pol.timeout = 1;
    /* on_output is called only within the output_limit: a limit the flood cannot reach in the
     * deadline keeps the reader slow for the whole run. */
    pol.output_limit = EB_OUTPUT_LIMIT_MAX;
    struct execbox_request req;
    memset(&req, 0, sizeof(req));
    req.on_output = slow_output;
    struct execbox_result *res = eb_result_new("subprocess", "python");
    assert_non_null(res);
    struct eb_outcome oc;
    struct execbox_error err = {0, ""};
    uint64_t t0 = eb_now_ns();
    int r = eb_supervise(&c, &req, &pol, t0, res, &oc, &err);
    uint64_t ms = (eb_now_ns() - t0) / 1000000U;
    kill(-p, SIGKILL);
    eb_child_close(&c);
    execbox_result_free(res);
    assert_int_equal(r, 0);
    assert_true(ms < 5000);
    assert_true(oc.timed_out);
    assert_int_equal(oc.done, done_ok);
}

static void test_supervise_done_flood_believed(void **state)
{
    (void)state;
    supervise_done_flood(true);
}

static void test_supervise_done_flood_ignored(void **state)
{
    (void)state;
    supervise_done_flood(false);
}

int main(void)
{
    if (access("/usr/bin/python3", X_OK) != 0) {
        printf("skip: /usr/bin/python3 is missing\n");
        return 77;
    }
    /* A private $TMPDIR: its path marks every process of our runs, and we can count the
     * run dirs in it. */
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/execbox-unit-subprocess-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    setenv("TMPDIR", tmpdir, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_close_all_except_refuses_too_many),
        cmocka_unit_test(test_wait_child_deadline),
        cmocka_unit_test(test_supervise_done_flood_believed),
        cmocka_unit_test(test_supervise_done_flood_ignored),
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_signals),
        cmocka_unit_test(test_timeout_busy_loop),
        cmocka_unit_test(test_timeout_sleep),
        cmocka_unit_test(test_timeout_ignores_sigterm),
        cmocka_unit_test(test_timeout_double_fork),
        cmocka_unit_test(test_daemon_after_normal_exit),
        cmocka_unit_test(test_output_capped),
        cmocka_unit_test(test_stdin),
        cmocka_unit_test(test_timeout_message),
        cmocka_unit_test(test_large_program),
        cmocka_unit_test(test_missing_interpreter),
        cmocka_unit_test(test_sandbox_error_bad_workspace),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_traceback),
        cmocka_unit_test(test_workspace_files),
        cmocka_unit_test(test_workspace_limits),
        cmocka_unit_test(test_workspace_swapped_for_link),
        cmocka_unit_test(test_given_workspace),
        cmocka_unit_test(test_environment_scrubbed),
        cmocka_unit_test(test_leftover_detector),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_live_output),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    eb_rm_rf(tmpdir);
    return rc;
}
