/* SPDX-License-Identifier: MIT */
/* test_jail_cgroup.c - cgroup detection and per-run file handling, v2 and v1, against fake
 * cgroup trees in a temp dir (this machine runs v1; v2 is exercised here only at the file
 * level: real v2 enforcement needs a host with a delegated v2 tree). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/util.h"
#include "jail/cgroup.h"

static char root[256];
/* A host without systemd; self is this test process. */
static struct eb_cgroup_host nosd;

static void put(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(eb_write_all(fd, text, strlen(text)), 0);
    close(fd);
}

static void get(const char *rel, char *buf, size_t n)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t k = read(fd, buf, n - 1);
    assert_true(k >= 0);
    buf[k] = '\0';
    close(fd);
}

static void mk(const char *rel)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    assert_int_equal(mkdir(p, 0755), 0);
}

static int setup(void **state)
{
    (void)state;
    nosd.systemd = false;
    nosd.self = getpid();
    snprintf(root, sizeof(root), "/tmp/eb-cgtest-XXXXXX");
    assert_non_null(mkdtemp(root));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    eb_rm_rf(root);
    return 0;
}

/* In a fake tree the kernel does not make a new cgroup's files; pre-create them the way
 * mkdir would on cgroupfs by creating the run's directory first is not possible, so the test
 * checks what eb_cgroup_create wrote through files it created itself. */
static void test_v2_delegated(void **state)
{
    (void)state;
    put("cgroup.controllers", "cpuset cpu io memory pids\n");
    mk("svc");
    put("svc/cgroup.controllers", "cpu memory pids\n");
    put("svc/cgroup.subtree_control", "cpu memory pids\n");
    struct eb_cgroup_root r;
    eb_cgroup_detect(root, "0::/svc\n", &nosd, &r);
    assert_int_equal(r.version, 2);
    assert_true(r.have[EB_CG_MEMORY] && r.have[EB_CG_PIDS] && r.have[EB_CG_CPU]);
    char want[512];
    snprintf(want, sizeof(want), "%s/svc", root);
    assert_string_equal(r.base[0], want);

    struct eb_cgroup cg;
    struct execbox_error err = {0};
    assert_int_equal(eb_cgroup_create(&r, NULL, "execbox-1-0", 64 << 20, 32, 1.5, &cg, &err), 0);
    char buf[64];
    get("svc/execbox-1-0/memory.max", buf, sizeof(buf));
    assert_string_equal(buf, "67108864");
    get("svc/execbox-1-0/memory.swap.max", buf, sizeof(buf));
    assert_string_equal(buf, "0");
    /* No memory.oom.group: an OOM kill must leave the init (and a session's state) alive. */
    snprintf(buf, sizeof(buf), "%s/svc/execbox-1-0/memory.oom.group", root);
    assert_int_equal(access(buf, F_OK), -1);
    get("svc/execbox-1-0/pids.max", buf, sizeof(buf));
    assert_string_equal(buf, "32");
    get("svc/execbox-1-0/cpu.max", buf, sizeof(buf));
    assert_string_equal(buf, "150000 100000");
    assert_true(cg.procs_fd[0] >= 0);
    for (int i = 1; i < EB_CG_N; i++)
        assert_int_equal(cg.procs_fd[i], -1);
    /* Joining writes "0" (the calling process) to cgroup.procs. */
    assert_int_equal(eb_cgroup_join(&cg), 0);
    get("svc/execbox-1-0/cgroup.procs", buf, sizeof(buf));
    assert_string_equal(buf, "0");
    assert_int_equal(cg.procs_fd[0], -1);
    eb_cgroup_kill(&cg);
    get("svc/execbox-1-0/cgroup.kill", buf, sizeof(buf));
    assert_string_equal(buf, "1");
    eb_cgroup_destroy(&cg); /* rmdir fails on a fake tree (files inside); must not crash */
    /* Stale removal only touches our prefix with a dead pid: a live one (ours) stays. */
    char live[64];
    snprintf(live, sizeof(live), "svc/execbox-%d-9", (int)getpid());
    mk(live);
    mk("svc/execbox-999999999-1");
    mk("svc/other-1-1");
    assert_int_equal(eb_cgroup_remove_stale(&r, "execbox-"), 1);
    char p[512];
    /* The stale one was killed (on cgroupfs it is then removed; a fake tree keeps the file). */
    get("svc/execbox-999999999-1/cgroup.kill", buf, sizeof(buf));
    assert_string_equal(buf, "1");
    snprintf(p, sizeof(p), "%s/%s", root, live);
    assert_int_equal(access(p, F_OK), 0);
    snprintf(p, sizeof(p), "%s/svc/other-1-1", root);
    assert_int_equal(access(p, F_OK), 0);
}

static void test_v2_enable_controllers(void **state)
{
    (void)state;
    /* Delegated but not yet enabled: detect writes them to subtree_control. */
    put("cgroup.controllers", "cpu memory pids\n");
    mk("b");
    put("b/cgroup.controllers", "memory pids\n");
    put("b/cgroup.subtree_control", "");
    struct eb_cgroup_root r;
    eb_cgroup_detect(root, "0::/b\n", &nosd, &r);
    assert_int_equal(r.version, 2);
    char buf[64];
    get("b/cgroup.subtree_control", buf, sizeof(buf));
    assert_string_equal(buf, "+memory +pids");
    assert_false(r.have[EB_CG_CPU]);
}

/* An execbox started by one that moved itself into the leaf (or a second executor of the same
 * process) finds the leaf: runs go beside it, and inits leave their run's cgroup into it (the
 * base has controllers, so it may hold no process). */
static void test_v2_in_leaf(void **state)
{
    (void)state;
    put("cgroup.controllers", "cpu memory pids\n");
    mk("svc");
    put("svc/cgroup.controllers", "cpu memory pids\n");
    put("svc/cgroup.subtree_control", "cpu memory pids\n");
    mk("svc/" EB_CG_LEAF);
    put("svc/" EB_CG_LEAF "/cgroup.procs", "");
    struct eb_cgroup_root r;
    eb_cgroup_detect(root, "0::/svc/" EB_CG_LEAF "\n", &nosd, &r);
    assert_int_equal(r.version, 2);
    char want[512];
    snprintf(want, sizeof(want), "%s/svc", root);
    assert_string_equal(r.base[0], want);
    snprintf(want, sizeof(want), "%s/svc/" EB_CG_LEAF, root);
    assert_string_equal(r.leaf, want);
    assert_non_null(strstr(r.place, EB_CG_LEAF));
    struct eb_cgroup cg;
    struct execbox_error err = {0};
    assert_int_equal(eb_cgroup_create(&r, NULL, "execbox-1-1", 64 << 20, 32, 1, &cg, &err), 0);
    assert_true(cg.leave_fd[0] >= 0);
    assert_int_equal(write(cg.leave_fd[0], "0", 1), 1);
    char buf[64];
    get("svc/" EB_CG_LEAF "/cgroup.procs", buf, sizeof(buf));
    assert_string_equal(buf, "0");
    eb_cgroup_destroy(&cg);
    /* The leaf is not a run's cgroup: the stale sweep never takes it. */
    assert_int_equal(eb_cgroup_remove_stale(&r, "execbox-"), 0);
    assert_int_equal(access(want, F_OK), 0);
}

/* A container's processes moved into the leaf at its cgroup namespace's root: a later execbox
 * started from them finds it there too (runs beside it, at the namespace's root). */
static void test_v2_in_leaf_at_ns_root(void **state)
{
    (void)state;
    put("cgroup.controllers", "cpu memory pids\n");
    put("cgroup.subtree_control", "cpu memory pids\n");
    mk(EB_CG_LEAF);
    struct eb_cgroup_root r;
    eb_cgroup_detect(root, "0::/" EB_CG_LEAF "\n", &nosd, &r);
    assert_int_equal(r.version, 2);
    assert_string_equal(r.base[0], root);
    char want[512];
    snprintf(want, sizeof(want), "%s/" EB_CG_LEAF, root);
    assert_string_equal(r.leaf, want);
}

/* The root cgroup may hold processes and still give controllers: no leaf. */
static void test_v2_root_cgroup(void **state)
{
    (void)state;
    put("cgroup.controllers", "cpu memory pids\n");
    put("cgroup.subtree_control", "");
    struct eb_cgroup_root r;
    eb_cgroup_detect(root, "0::/\n", &nosd, &r);
    assert_int_equal(r.version, 2);
    assert_string_equal(r.base[0], root);
    assert_string_equal(r.leaf, "");
    assert_string_equal(r.place, "the root cgroup");
    char buf[64];
    get("cgroup.subtree_control", buf, sizeof(buf));
    assert_string_equal(buf, "+memory +pids +cpu");
}

/* Runs below the cgroup made at the top (no systemd): base, leaf and the top's controllers. */
static void assert_top(const struct eb_cgroup_root *r, const char *why)
{
    assert_int_equal(r->version, 2);
    assert_false(r->need_scope);
    char want[512];
    snprintf(want, sizeof(want), "%s/" EB_CG_TOP, root);
    assert_string_equal(r->base[0], want);
    snprintf(want, sizeof(want), "%s/" EB_CG_TOP "/" EB_CG_LEAF, root);
    assert_string_equal(r->leaf, want);
    assert_int_equal(access(want, F_OK), 0);
    assert_non_null(strstr(r->place, "made at the top"));
    assert_non_null(strstr(r->place, why));
    assert_true(r->have[EB_CG_MEMORY] && r->have[EB_CG_PIDS] && r->have[EB_CG_CPU]);
    char buf[64];
    get("cgroup.subtree_control", buf, sizeof(buf));
    assert_string_equal(buf, "+memory +pids +cpu");
}

/* Controllers that stop above our cgroup: under systemd a scope of our own is asked for, in the
 * slice we are in; without systemd runs go below a cgroup made at the top, as the cgroupfs
 * drivers of container runtimes do. */
static void test_v2_not_given_controllers(void **state)
{
    (void)state;
    put("cgroup.controllers", "cpu memory pids\n");
    put("cgroup.subtree_control", "");
    mk("user.slice");
    mk("user.slice/user-0.slice");
    mk("user.slice/user-0.slice/session-3.scope");
    put("user.slice/user-0.slice/session-3.scope/cgroup.controllers", "\n");
    struct eb_cgroup_host sd = {.systemd = true, .self = getpid()};
    struct eb_cgroup_root r;
    eb_cgroup_detect(root, "0::/user.slice/user-0.slice/session-3.scope\n", &sd, &r);
    assert_int_equal(r.version, 0);
    assert_true(r.need_scope);
    assert_string_equal(r.slice, "user-0.slice");
    assert_non_null(strstr(r.why, "not given the memory and pids controllers"));
    char top[512];
    snprintf(top, sizeof(top), "%s/" EB_CG_TOP, root);
    assert_int_equal(access(top, F_OK), -1); /* systemd's tree: nothing made at the top */
    mk(EB_CG_TOP); /* as the kernel makes it; a fake's subtree_control reads back what the
                    * detection would write, so the controllers are given here */
    put(EB_CG_TOP "/cgroup.subtree_control", "cpu memory pids\n");
    eb_cgroup_detect(root, "0::/user.slice/user-0.slice/session-3.scope\n", &nosd, &r);
    assert_top(&r, "not given the memory and pids controllers");
}

static void test_v2_limits_and_stats(void **state)
{
    (void)state;
    put("cgroup.controllers", "cpu memory pids\n");
    mk("a");
    put("a/cgroup.controllers", "cpu memory pids\n");
    put("a/cgroup.subtree_control", "memory pids cpu\n");
    struct eb_cgroup_root r;
    eb_cgroup_detect(root, "12:pids:/x\n0::/a\n", &nosd, &r);
    assert_int_equal(r.version, 2);
    /* A fake "cgroupfs": make mkdir succeed and the interface files exist by pointing the root
     * at a directory whose run cgroup we fill in before the writes. */
    mk("a/execbox-7-3");
    static const char *const files[] = {"memory.max", "memory.swap.max", "memory.oom.group",
                                        "pids.max",   "cpu.max",         "cgroup.procs",
                                        "cgroup.kill"};
    char p[128];
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(p, sizeof(p), "a/execbox-7-3/%s", files[i]);
        put(p, "");
    }
    /* Rename away and back: eb_cgroup_create mkdirs, so give it a base whose child dir we
     * re-populate through a symlinked base: simplest is to call with a name that exists
     * after moving the prepared dir under the new name. */
    char from[512], to[512];
    snprintf(from, sizeof(from), "%s/a/execbox-7-3", root);
    snprintf(to, sizeof(to), "%s/prepared", root);
    assert_int_equal(rename(from, to), 0);
    struct eb_cgroup cg;
    eb_cgroup_init(&cg);
    cg.root = &r;
    /* Use the prepared directory as the run's cgroup. */
    snprintf(cg.dir[0], sizeof(cg.dir[0]), "%s", to);
    put("prepared/memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n");
    put("prepared/memory.peak", "67108864\n");
    put("prepared/cpu.stat", "usage_usec 250000\nuser_usec 200000\nsystem_usec 50000\n");
    /* The files of the run's tmpfs, for a MemoryLimit message: v2's shmem line (not
     * shmem_thp), what the cap of memory.max covers beside the processes. */
    put("prepared/memory.stat", "anon 52428800\nfile 209715200\nkernel 4096\nshmem_thp 0\n"
                                "shmem 209715200\nfile_mapped 0\n");
    struct eb_cgroup_stats st;
    eb_cgroup_stats(&cg, &st);
    assert_int_equal(st.shmem, 209715200);
    assert_int_equal(st.oom_kills, 1);
    assert_int_equal(st.peak_memory, 67108864);
    assert_int_equal(st.cpu_ns, 250000000);
    assert_int_equal(eb_cgroup_cpu_ns(&cg), 250000000); /* the warm run's CPU base (v2) */
    eb_cgroup_kill(&cg);
    char buf[64];
    get("prepared/cgroup.kill", buf, sizeof(buf));
    assert_string_equal(buf, "1");
    cg.dir[0][0] = '\0';
}

static void test_v2_undelegated_falls_back_to_v1(void **state)
{
    (void)state;
    /* Like this machine: a hybrid tree whose v2 part has only hugetlb. */
    mk("unified");
    put("unified/cgroup.controllers", "hugetlb\n");
    mk("memory");
    mk("memory/api");
    put("memory/api/memory.limit_in_bytes", "");
    put("memory/api/memory.memsw.limit_in_bytes", "");
    mk("pids");
    mk("cpu");
    struct eb_cgroup_root r;
    eb_cgroup_detect(root, "4:memory:/api\n8:pids:/\n1:cpu:/\n0::/\n", &nosd, &r);
    assert_int_equal(r.version, 1);
    assert_true(r.have[EB_CG_MEMORY] && r.have[EB_CG_PIDS] && r.have[EB_CG_CPU]);
    assert_false(r.have[EB_CG_CPUACCT]);
    assert_true(r.memsw);
    assert_non_null(strstr(r.why, "hugetlb"));
    char want[512];
    snprintf(want, sizeof(want), "%s/memory/api", root);
    assert_string_equal(r.base[EB_CG_MEMORY], want);
}

static void test_v1_stats(void **state)
{
    (void)state;
    mk("memory");
    mk("memory/run");
    mk("cpuacct");
    mk("cpuacct/run");
    put("memory/run/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
    put("memory/run/memory.max_usage_in_bytes", "1048576\n");
    put("cpuacct/run/cpuacct.usage", "123456789\n");
    /* A run's cgroup is a leaf: its own shmem (files of its tmpfs) is its total_shmem. */
    put("memory/run/memory.stat", "cache 188743680\nrss 52428800\nrss_huge 0\n"
                                  "shmem 188743680\nmapped_file 0\n"
                                  "hierarchical_memory_limit 268435456\ntotal_cache 188743680\n"
                                  "total_shmem 188743680\n");
    struct eb_cgroup_root r;
    memset(&r, 0, sizeof(r));
    r.version = 1;
    struct eb_cgroup cg;
    eb_cgroup_init(&cg);
    cg.root = &r;
    snprintf(cg.dir[EB_CG_MEMORY], sizeof(cg.dir[0]), "%s/memory/run", root);
    snprintf(cg.dir[EB_CG_CPUACCT], sizeof(cg.dir[0]), "%s/cpuacct/run", root);
    struct eb_cgroup_stats st;
    eb_cgroup_stats(&cg, &st);
    assert_int_equal(st.oom_kills, 2);
    assert_int_equal(st.peak_memory, 1048576);
    assert_int_equal(st.shmem, 188743680);
    assert_int_equal(st.cpu_ns, 123456789);
    assert_int_equal(eb_cgroup_cpu_ns(&cg), 123456789); /* v1: cpuacct */
}

/* A fake v1 tree with memory and cpuacct below root/memory and root/cpuacct. */
static void v1_root(struct eb_cgroup_root *r)
{
    memset(r, 0, sizeof(*r));
    r->version = 1;
    r->have[EB_CG_MEMORY] = r->have[EB_CG_CPU] = r->have[EB_CG_CPUACCT] = true;
    mk("memory");
    mk("cpu");
    mk("cpuacct");
    snprintf(r->base[EB_CG_MEMORY], sizeof(r->base[0]), "%s/memory", root);
    snprintf(r->base[EB_CG_CPU], sizeof(r->base[0]), "%s/cpu", root);
    snprintf(r->base[EB_CG_CPUACCT], sizeof(r->base[0]), "%s/cpuacct", root);
}

/* A fake v1 tree (v1_root) and an empty set of spares for it. */
static struct eb_cgroup_spares *v1_spares(struct eb_cgroup_root *r)
{
    v1_root(r);
    struct eb_cgroup_spares *sp = eb_cgroup_spares_new(r);
    assert_non_null(sp);
    return sp;
}

static bool exists(const char *rel)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    return access(p, F_OK) == 0;
}

static unsigned kept(struct eb_cgroup_spares *sp)
{
    unsigned n;
    uint64_t reused;
    eb_cgroup_spares_count(sp, &n, &reused);
    return n;
}

/* A run's emptied cgroup is kept, reset, and given to the next run: the same directory (no
 * mkdir), its limits rewritten where they differ, its peak reset and its OOM and CPU counters
 * counted from where the last run left them. */
static void test_v1_kept_and_reused(void **state)
{
    (void)state;
    struct eb_cgroup_root r;
    struct eb_cgroup_spares *sp = v1_spares(&r);
    struct execbox_error err = {0, ""};
    struct eb_cgroup cg;
    assert_int_equal(eb_cgroup_create(&r, sp, "execbox-1-a", 64 << 20, 32, 1, &cg, &err), 0);
    char buf[64];
    get("memory/execbox-1-a/memory.limit_in_bytes", buf, sizeof(buf));
    assert_string_equal(buf, "67108864");
    /* What the first run left: two OOM kills, a peak, CPU, a little memory still charged. */
    put("memory/execbox-1-a/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
    put("memory/execbox-1-a/memory.usage_in_bytes", "4096\n");
    put("memory/execbox-1-a/memory.max_usage_in_bytes", "6\n"); /* (a fake file: "0" overwrites) */
    put("cpuacct/execbox-1-a/cpuacct.usage", "5000\n");
    put("cpu/execbox-1-a/cpu.cfs_quota_us", "-"); /* (a fake file: the rewrite overwrites it) */
    eb_cgroup_release(&cg);
    assert_int_equal(kept(sp), 1);
    get("cpu/execbox-1-a/cpu.cfs_quota_us", buf, sizeof(buf));
    assert_string_equal(buf, "100000"); /* written again: the period's bandwidth refilled */
    assert_string_equal(cg.dir[EB_CG_MEMORY], "");
    get("memory/execbox-1-a/memory.max_usage_in_bytes", buf, sizeof(buf));
    assert_string_equal(buf, "0\n"); /* the kernel then starts the peak afresh */
    put("memory/execbox-1-a/memory.max_usage_in_bytes", "4096\n");

    assert_int_equal(eb_cgroup_create(&r, sp, "execbox-1-b", 32 << 20, 32, 1, &cg, &err), 0);
    assert_false(exists("memory/execbox-1-b"));
    assert_int_equal(kept(sp), 0);
    assert_non_null(strstr(cg.dir[EB_CG_MEMORY], "/memory/execbox-1-a"));
    assert_true(cg.procs_fd[EB_CG_MEMORY] >= 0);
    get("memory/execbox-1-a/memory.limit_in_bytes", buf, sizeof(buf));
    assert_string_equal(buf, "33554432");
    struct eb_cgroup_stats st;
    eb_cgroup_stats(&cg, &st);
    assert_int_equal(st.oom_kills, 0);
    assert_int_equal(st.cpu_ns, 0);
    assert_int_equal(st.peak_memory, 4096);
    put("memory/execbox-1-a/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
    put("cpuacct/execbox-1-a/cpuacct.usage", "7000\n");
    eb_cgroup_stats(&cg, &st);
    assert_int_equal(st.oom_kills, 1);
    assert_int_equal(st.cpu_ns, 2000);
    assert_int_equal(eb_cgroup_cpu_ns(&cg), 2000);
    unsigned n;
    uint64_t reused;
    eb_cgroup_spares_count(sp, &n, &reused);
    assert_int_equal(reused, 1);
    eb_cgroup_destroy(&cg);
    eb_cgroup_spares_free(sp);
}

/* The host side's procs files, by which each run's init leaves its cgroup, are the same for
 * every run: a set of spares opens them once and lends them to each cgroup made with it, which
 * never closes them; without a set each cgroup opens its own. */
static void test_v1_leave_files_shared_with_spares(void **state)
{
    (void)state;
    struct eb_cgroup_root r;
    v1_root(&r);
    put("memory/tasks", "");
    put("cpu/tasks", "");
    put("cpuacct/tasks", "");
    struct eb_cgroup_spares *sp = eb_cgroup_spares_new(&r);
    assert_non_null(sp);
    struct execbox_error err = {0, ""};
    struct eb_cgroup a, b, c;
    assert_int_equal(eb_cgroup_create(&r, sp, "execbox-1-a", 64 << 20, 32, 1, &a, &err), 0);
    assert_int_equal(eb_cgroup_create(&r, sp, "execbox-1-b", 64 << 20, 32, 1, &b, &err), 0);
    assert_true(a.leave_shared && b.leave_shared);
    for (int k = 0; k < EB_CG_N; k++)
        assert_int_equal(a.leave_fd[k], b.leave_fd[k]);
    assert_true(a.leave_fd[EB_CG_MEMORY] >= 0 && a.leave_fd[EB_CG_PIDS] < 0);
    int lent = a.leave_fd[EB_CG_CPU];
    eb_cgroup_destroy(&a);
    assert_true(fcntl(lent, F_GETFD) >= 0); /* still the set's, and b's */
    assert_int_equal(eb_cgroup_create(&r, NULL, "execbox-1-c", 64 << 20, 32, 1, &c, &err), 0);
    assert_false(c.leave_shared);
    assert_true(c.leave_fd[EB_CG_CPU] >= 0 && c.leave_fd[EB_CG_CPU] != lent);
    eb_cgroup_destroy(&c);
    eb_cgroup_destroy(&b);
    eb_cgroup_spares_free(sp);
    assert_true(fcntl(lent, F_GETFD) < 0); /* closed with the set */
}

/* Not kept (removed as before): a process still listed, a child cgroup, more than
 * EB_CG_REUSE_LEFT still charged, or a peak that cannot be reset. */
static void test_v1_not_kept(void **state)
{
    (void)state;
    struct eb_cgroup_root r;
    struct eb_cgroup_spares *sp = v1_spares(&r);
    struct execbox_error err = {0, ""};
    static const char *const names[] = {"execbox-1-p", "execbox-1-c", "execbox-1-m", "execbox-1-r"};
    for (int i = 0; i < 4; i++) {
        struct eb_cgroup cg;
        assert_int_equal(eb_cgroup_create(&r, sp, names[i], 64 << 20, 32, 1, &cg, &err), 0);
        char p[128], big[32];
        snprintf(p, sizeof(p), "memory/%s/memory.usage_in_bytes", names[i]);
        snprintf(big, sizeof(big), "%u\n", EB_CG_REUSE_LEFT + 1);
        put(p, i == 2 ? big : "0\n");
        if (i == 0) {
            snprintf(p, sizeof(p), "cpuacct/%s/tasks", names[i]);
            put(p, "4242\n");
        } else if (i == 1) {
            snprintf(p, sizeof(p), "memory/%s/child", names[i]);
            mk(p);
        } else if (i == 3) { /* the reset's file cannot be written */
            snprintf(p, sizeof(p), "memory/%s/memory.max_usage_in_bytes", names[i]);
            mk(p);
        }
        eb_cgroup_release(&cg);
        assert_int_equal(kept(sp), 0);
        assert_string_equal(cg.dir[EB_CG_MEMORY], "");
    }
    eb_cgroup_spares_free(sp);
}

/* v2 before Linux 6.12: memory.peak cannot be written, so its reset cannot be had and nothing
 * is ever kept: each run makes its own cgroup, as without spares. */
static void test_v2_without_peak_reset_keeps_nothing(void **state)
{
    (void)state;
    struct eb_cgroup_root r;
    memset(&r, 0, sizeof(r));
    r.version = 2;
    r.have[EB_CG_MEMORY] = r.have[EB_CG_PIDS] = true;
    mk("a");
    snprintf(r.base[0], sizeof(r.base[0]), "%s/a", root);
    struct eb_cgroup_spares *sp = eb_cgroup_spares_new(&r);
    assert_non_null(sp);
    struct execbox_error err = {0, ""};
    struct eb_cgroup cg;
    assert_int_equal(eb_cgroup_create(&r, sp, "execbox-1-a", 64 << 20, 32, 1, &cg, &err), 0);
    assert_null(cg.spares);
    assert_int_equal(cg.file_fd[EB_CGF_PEAK], -1); /* no memory.peak to reset */
    put("a/execbox-1-a/cgroup.events", "populated 0\nfrozen 0\n");
    put("a/execbox-1-a/memory.current", "0\n");
    eb_cgroup_release(&cg);
    assert_int_equal(kept(sp), 0);
    assert_int_equal(eb_cgroup_create(&r, sp, "execbox-1-b", 64 << 20, 32, 1, &cg, &err), 0);
    assert_true(exists("a/execbox-1-b"));
    eb_cgroup_destroy(&cg);
    eb_cgroup_spares_free(sp);
}

static void test_nothing_usable(void **state)
{
    (void)state;
    struct eb_cgroup_root r;
    eb_cgroup_detect(root, "0::/nope\n", &nosd, &r);
    assert_int_equal(r.version, 0);
    assert_true(r.why[0] != '\0');
    struct eb_cgroup cg;
    struct execbox_error err = {0};
    assert_int_equal(eb_cgroup_create(&r, NULL, "x", 1, 1, 1, &cg, &err), 0);
    eb_cgroup_destroy(&cg);
}

static pid_t sleeper(void)
{
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        for (;;)
            pause();
    }
    return p;
}

static bool alive(pid_t p)
{
    int st;
    return waitpid(p, &st, WNOHANG) == 0;
}

static void reap(pid_t p)
{
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
}

static struct eb_cgroup v1_run(struct eb_cgroup_root *r, const char *procs)
{
    mk("pids");
    mk("pids/execbox-1-run");
    put("pids/execbox-1-run/cgroup.procs", procs);
    memset(r, 0, sizeof(*r));
    r->version = 1;
    struct eb_cgroup cg;
    eb_cgroup_init(&cg);
    cg.root = r;
    snprintf(cg.dir[EB_CG_PIDS], sizeof(cg.dir[0]), "%s/pids/execbox-1-run", root);
    return cg;
}

/* A task list longer than any fixed buffer: the number cut off at the buffer's end must never
 * be taken as a pid (it used to be: the cut-off prefix here is a live process of ours). */
static void test_v1_kill_never_takes_a_cut_off_number(void **state)
{
    (void)state;
    pid_t victim = sleeper();
    char num[16];
    int nl = snprintf(num, sizeof(num), "%d", (int)victim);
    static char procs[16384];
    size_t off = 0, cut = 8191 - (size_t)nl; /* where the old 8 KiB read stopped */
    while (off + 9 <= cut - 9) {
        memcpy(procs + off, "99999999\n", 9); /* above pid_max: no such process */
        off += 9;
    }
    size_t pad = cut - off; /* one more filler line of exactly the remaining length */
    memset(procs + off, '0', pad - 9);
    memcpy(procs + off + pad - 9, "99999999\n", 9);
    off += pad;
    off += (size_t)snprintf(procs + off, sizeof(procs) - off, "%s9999999\n", num);
    struct eb_cgroup_root r;
    struct eb_cgroup cg = v1_run(&r, procs);
    eb_cgroup_kill(&cg);
    bool ok = alive(victim);
    reap(victim);
    assert_true(ok);
}

/* A listed pid that is not (or no longer) in the run's cgroup, as after it exited and its
 * number went to a host process, is never killed. */
static void test_v1_kill_only_members(void **state)
{
    (void)state;
    pid_t other = sleeper();
    char procs[64];
    snprintf(procs, sizeof(procs), "%d\n", (int)other);
    struct eb_cgroup_root r;
    struct eb_cgroup cg = v1_run(&r, procs);
    eb_cgroup_kill(&cg);
    bool ok = alive(other);
    reap(other);
    assert_true(ok);
}

static int collect(pid_t pid, void *arg)
{
    long *sum = arg;
    sum[0]++;
    sum[1] += pid;
    return 0;
}

/* The list reader: to EOF across its small reads, complete numbers only. */
static void test_read_pids(void **state)
{
    (void)state;
    char p[512];
    snprintf(p, sizeof(p), "%s/list", root);
    static char text[65536];
    size_t off = 0;
    long want = 0;
    for (int i = 1; i <= 5000; i++) {
        off += (size_t)snprintf(text + off, sizeof(text) - off, "%d%s", 100000 + i,
                                i % 2 ? "\n" : " ");
        want += 100000 + i;
    }
    off += (size_t)snprintf(text + off, sizeof(text) - off, "12a 0 1234567890 777");
    put("list", text);
    int fd = open(p, O_RDONLY);
    long sum[2] = {0, 0};
    assert_int_equal(eb_read_pids(fd, 100000, collect, sum), 5001);
    assert_int_equal(sum[0], 5001);
    assert_int_equal(sum[1], want + 777);
    close(fd);
    fd = open(p, O_RDONLY);
    assert_int_equal(eb_read_pids(fd, 10, collect, sum), -E2BIG);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_v2_delegated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_enable_controllers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_in_leaf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_in_leaf_at_ns_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_root_cgroup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_not_given_controllers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_limits_and_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_undelegated_falls_back_to_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_kept_and_reused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_leave_files_shared_with_spares, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_not_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_without_peak_reset_keeps_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_kill_never_takes_a_cut_off_number, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_kill_only_members, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_pids, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
