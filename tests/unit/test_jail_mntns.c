/* SPDX-License-Identifier: MIT */
/* test_jail_mntns.c - the prepared mount namespace (lib/jail/mounts.c, eb_mount_ns_*) and its
 * pin on the host (lib/jail/mntpin.c): every run, an executor's first included, copies one small
 * prepared namespace instead of the host's mount table. Each run still sees exactly the
 * filesystem of a root built the direct way (same mounts, read-only root, its own proc, /tmp and
 * /code), nothing of another run, and the runs of every executor share the pinned root; the
 * pins are bounded in number and age, and a stale one is replaced. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "execbox/execbox.h"
#include "jail/mntpin.h"

#define PIN_DIR "/run/execbox/mntns"

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

/* The mount points of the pins, and whether the pins' tmpfs is mounted. */
static int count_pins(bool *ret_dir)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    assert_non_null(f);
    char line[1024];
    int n = 0;
    *ret_dir = false;
    while (fgets(line, sizeof(line), f)) {
        char mp[512], fstype[64];
        const char *dash = strstr(line, " - ");
        assert_non_null(dash);
        assert_int_equal(sscanf(line, "%*s %*s %*s %*s %511s", mp), 1);
        assert_int_equal(sscanf(dash + 3, "%63s", fstype), 1);
        if (strcmp(mp, PIN_DIR) == 0)
            *ret_dir = strcmp(fstype, "tmpfs") == 0;
        else if (strncmp(mp, PIN_DIR "/", strlen(PIN_DIR) + 1) == 0) {
            assert_string_equal(fstype, "nsfs");
            n++;
        }
    }
    fclose(f);
    return n;
}

static void test_every_run_uses_the_pinned_namespace(void **state)
{
    (void)state;
    /* From nothing: the first run makes the pin (preparing the namespace once). */
    assert_int_equal(eb_mntns_pin_remove_all(PIN_DIR), 0);
    bool dir;
    assert_int_equal(count_pins(&dir), 0);
    assert_false(dir);
    char *first = run_probe(), *second = run_probe(), *third = run_probe();
    fprintf(stderr, "  first:  %s  second: %s  third:  %s", first, second, third);
    assert_int_equal(count_pins(&dir), 1);
    assert_true(dir);
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
    /* All three share the prepared root, the first run included. */
    assert_true(strncmp(first, second, (size_t)(rest1 - first)) == 0);
    assert_true(strncmp(second, third, (size_t)(rest2 - second)) == 0);
    /* So does another executor (another process, as a one-shot `execbox run` is) from its first
     * run on: the pin, not this executor's fd. */
    struct execbox_executor *mine = ex;
    struct execbox_executor_options o = {.backend = "jail"};
    struct execbox_error err = {0};
    assert_int_equal(execbox_executor_new(&o, &ex, &err), 0);
    char *other = run_probe();
    execbox_executor_free(ex);
    ex = mine;
    assert_true(strncmp(first, other, (size_t)(rest1 - first)) == 0);
    assert_string_equal(rest1, strchr(other, ' '));
    assert_int_equal(count_pins(&dir), 1);
    free(first);
    free(second);
    free(third);
    free(other);
}

/* The same root as the test's executor's, built with an extra bind: another key. */
static void pin_other(unsigned i, double max_age)
{
    struct eb_mount_plan p;
    eb_plan_init(&p);
    struct execbox_error err = {0};
    assert_int_equal(eb_plan_system(&p, NULL, "", &err), 0);
    char dst[32];
    snprintf(dst, sizeof(dst), "opt%u", i);
    eb_plan_add(&p, EB_MOP_DIR, NULL, dst, NULL, 0, -1);
    const struct eb_mount_plan *plans[] = {&p};
    int fd = -1;
    bool pinned = false;
    assert_int_equal(
        eb_mntns_pin_open(PIN_DIR, "/run/execbox/jail/root", plans, 1, max_age, &fd, &pinned, &err),
        0);
    assert_true(fd >= 0);
    assert_true(pinned);
    close(fd);
}

static void test_pins_are_bounded_and_replaced_when_stale(void **state)
{
    (void)state;
    bool dir;
    /* Many plans: never more than EB_MNTNS_PINS_MAX pins, the oldest go. */
    for (unsigned i = 0; i < EB_MNTNS_PINS_MAX + 3; i++)
        pin_other(i, 600);
    assert_int_equal(count_pins(&dir), EB_MNTNS_PINS_MAX);
    /* A stale pin is not used: asking with a max age they all exceed makes a new one, and every
     * stale one goes. */
    sleep(1);
    pin_other(EB_MNTNS_PINS_MAX + 2, 0.5);
    assert_int_equal(count_pins(&dir), 1);
    /* The sweep drops every pin older than its max age, and mount points that are not pins. */
    FILE *junk = fopen(PIN_DIR "/0123456789abcdef.1", "w");
    assert_non_null(junk);
    fclose(junk);
    sleep(1);
    eb_mntns_pin_sweep(PIN_DIR, 0.5);
    assert_int_equal(count_pins(&dir), 0);
    DIR *d = opendir(PIN_DIR);
    assert_non_null(d);
    struct dirent *e;
    int names = 0;
    while ((e = readdir(d)))
        names += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(names, 0);
    /* And everything can go: nothing of ours left mounted. */
    assert_int_equal(eb_mntns_pin_remove_all(PIN_DIR), 0);
    assert_int_equal(count_pins(&dir), 0);
    assert_false(dir);
    /* The first run of an executor after that makes it again (an executor keeps the namespace
     * it opened at its first run: the test's own does not ask again). */
    struct execbox_executor *mine = ex;
    struct execbox_executor_options o = {.backend = "jail"};
    struct execbox_error err = {0};
    assert_int_equal(execbox_executor_new(&o, &ex, &err), 0);
    free(run_probe());
    execbox_executor_free(ex);
    ex = mine;
    assert_int_equal(count_pins(&dir), 1);
    free(run_probe());
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
        cmocka_unit_test(test_every_run_uses_the_pinned_namespace),
        cmocka_unit_test(test_pins_are_bounded_and_replaced_when_stale),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    execbox_executor_free(ex);
    return r;
}
