/* SPDX-License-Identifier: MIT */
/* test_jail_mntns.c - the prepared mount namespace (lib/jail/mounts.c, eb_mount_ns_*): from an
 * executor's second run on, runs copy one small prepared namespace instead of the host's mount
 * table. Each run still sees exactly the filesystem of a first run (same mounts, read-only root,
 * its own proc, /tmp and /code), nothing of another run, and the runs share the prepared root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "execbox/execbox.h"

static struct execbox_executor *ex;

/* One line: when the root's /dev directory was made (in the root's tmpfs: at each run for a root
 * built by the run, once for the prepared one; a device number would not tell, the kernel
 * reuses a freed one at once), the mount points, what /tmp held, our pid, whether the root and
 * /code refuse writes, and the processes /proc shows. */
static const char probe[] =
    "import os\n"
    "mi = [l.split() for l in open('/proc/self/mountinfo')]\n"
    "root = os.stat('/dev').st_ctime_ns\n"
    "pts = ','.join(sorted(m[4] for m in mi))\n"
    "seen = os.path.exists('/tmp/mark'); open('/tmp/mark', 'w').write('x')\n"
    "def ro(p):\n"
    "    try:\n"
    "        open(p, 'w')\n"
    "        return 'rw'\n"
    "    except OSError:\n"
    "        return 'ro'\n"
    "procs = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
    "print(root, pts, seen, os.getpid(), ro('/x'), ro('/code/x'), procs, "
    "open('/code/main.py').read()[:9])\n";

static char *run_probe(void)
{
    struct execbox_policy pol;
    execbox_policy_init(&pol);
    struct execbox_request req = {.language = "python", .code = probe, .policy = &pol};
    struct execbox_result *res = NULL;
    struct execbox_error err = {0};
    assert_int_equal(execbox_executor_run(ex, &req, &res, &err), 0);
    if (res->exit_code != 0)
        fprintf(stderr, "run failed: %s\n", res->stderr_data);
    assert_int_equal(res->exit_code, 0);
    char *out = strdup(res->stdout_data);
    execbox_result_free(res);
    return out;
}

static void test_runs_after_the_first_use_the_prepared_namespace(void **state)
{
    (void)state;
    char *first = run_probe(), *second = run_probe(), *third = run_probe();
    fprintf(stderr, "  first:  %s  second: %s  third:  %s", first, second, third);
    /* Everything but the root's making time is the same in every run: the mounts, a /tmp of its
     * own, pid 2 under its own init, read-only root and /code, the program in /code. */
    const char *rest1 = strchr(first, ' '), *rest2 = strchr(second, ' '),
               *rest3 = strchr(third, ' ');
    assert_non_null(rest1);
    assert_string_equal(rest1, rest2);
    assert_string_equal(rest2, rest3);
    assert_non_null(strstr(first, " False 2 ro ro [1, 2] import os"));
    assert_non_null(strstr(first, "/,/code,/dev/full,/dev/null,/dev/random,/dev/shm,/dev/urandom,"
                                  "/dev/zero,/etc,/proc,/tmp,/usr,/workspace "));
    /* The first run built its own root; the second and third share the prepared one. */
    assert_true(strncmp(first, second, (size_t)(rest1 - first)) != 0);
    assert_true(strncmp(second, third, (size_t)(rest2 - second)) == 0);
    free(first);
    free(second);
    free(third);
}

int main(void)
{
    if (geteuid() != 0) {
        printf("skip: the prepared mount namespace is root only\n");
        return 77;
    }
    struct execbox_executor_options o = {.backend = "jail"};
    struct execbox_error err = {0};
    if (execbox_executor_new(&o, &ex, &err) < 0) {
        printf("skip: the jail cannot run here: %s\n", err.msg);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_after_the_first_use_the_prepared_namespace),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    execbox_executor_free(ex);
    return r;
}
