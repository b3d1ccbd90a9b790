/* SPDX-License-Identifier: MIT */
/* child.c - the sandbox's init and the guest's last steps before exec (child.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "jail/cgroup.h"
#include "jail/child.h"
#include "jail/landlock.h"
#include "jail/mounts.h"
#include "jail/seccomp.h"

void eb_jail_child_keep(struct eb_jail_child *c, int fd)
{
    if (fd < 0)
        return;
    if (c->n_keep < EB_KEEP_FDS_MAX)
        c->keep_fds[c->n_keep] = fd;
    c->n_keep++;
}

int eb_host_cmdline(char **ret, size_t *ret_len)
{
    *ret = NULL;
    *ret_len = 0;
    char buf[2048];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = eb_read_full(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return n < 0 ? (int)n : -ENODATA;
    buf[n] = '\0';
    /* After the command name's closing parenthesis (a name may hold anything, ')' too), the
     * fields from the 3rd on; arg_start and arg_end are the 48th and 49th (proc(5)). */
    char *p = strrchr(buf, ')');
    if (!p)
        return -EBADMSG;
    p++;
    unsigned long long start = 0, end = 0;
    for (int field = 3; field <= 49; field++) {
        while (*p == ' ')
            p++;
        if (!*p)
            return -EBADMSG;
        char *next;
        unsigned long long v = strtoull(p, &next, 10);
        if (field == 48)
            start = v;
        else if (field == 49)
            end = v;
        p = next;
        while (*p && *p != ' ')
            p++;
    }
    if (!start || end <= start || end - start > (1ULL << 24))
        return -EBADMSG;
    *ret = (char *)(uintptr_t)start;
    *ret_len = (size_t)(end - start);
    return 0;
}

__attribute__((noreturn)) static void child_fail(const struct eb_jail_child *c, int code,
                                                 const char *what)
{
    struct eb_msg m;
    memset(&m, 0, sizeof(m));
    m.type = EB_MSG_ERROR;
    eb_error_set_raw(&m.err, code, what);
    (void)eb_write_all(c->init.status_fd, &m, sizeof(m));
    _exit(127);
}

static bool parent_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR));
}

int eb_jail_guest_setup(void *arg, struct execbox_error *err)
{
    const struct eb_jail_child *c = arg;
    if (!c->landlock)
        return 0;
    int r = eb_landlock_apply(c->writable, err);
    return r == -EOPNOTSUPP ? 0 : r;
}

int eb_jail_tpl_guest_setup(void *arg, struct execbox_error *err)
{
    (void)arg;
    const int caps[] = {CAP_SYS_ADMIN, CAP_SETPCAP};
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof(d));
    for (size_t i = 0; i < ARRAY_SIZE(caps); i++) {
        d[caps[i] / 32].effective |= 1U << (caps[i] % 32);
        d[caps[i] / 32].permitted |= 1U << (caps[i] % 32);
        d[caps[i] / 32].inheritable |= 1U << (caps[i] % 32);
    }
    if (syscall(SYS_capset, &h, d) < 0) {
        int e = -errno;
        eb_error_set_raw(err, e, "capset for the template");
        return e;
    }
    for (size_t i = 0; i < ARRAY_SIZE(caps); i++)
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, caps[i], 0, 0) < 0) {
            int e = -errno;
            eb_error_set_raw(err, e, "raise the template's ambient capabilities");
            return e;
        }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        int e = -errno;
        eb_error_set_raw(err, e, "no_new_privs for the template");
        return e;
    }
    return 0;
}

int eb_jail_guest_pre_exec(void *arg, struct execbox_error *err)
{
    const struct eb_jail_child *c = arg;
    if (!c->seccomp)
        return 0;
    return eb_seccomp_apply(c->seccomp, err);
}

/* Async-signal-safe calls only. */
void eb_jail_child_main(struct eb_jail_child *c)
{
    /* Die with the thread that cloned us; if it is already gone, stop here. Without the
     * death signal a sandbox could outlive us: fail rather than run so. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        child_fail(c, -errno, "set the parent-death signal");
    if (parent_gone(c->alive_fd))
        _exit(1);
    /* Close every fd but ours: in a threaded host the table holds the host's sockets and other
     * runs' pipes too; an init that kept another run's pipe (cloned while that run was between
     * pipe2 and its own clone) would delay that run's EOF until this one ends. */
    int r = eb_close_all_except(c->keep_fds, c->n_keep);
    if (r < 0)
        child_fail(c, r, "close the host's fds");
    if (!c->root_mode) {
        /* Unprivileged: the user namespace came with clone3; map ourselves to 1000 first so
         * that the files we create in the new root have an owner. */
        if ((r = eb_userns_map_self(c->userns)) < 0)
            child_fail(c, r, "write the user namespace maps");
    }
    /* Limits before anything else can allocate or fork. */
    if (c->cg && (r = eb_cgroup_join(c->cg)) < 0)
        child_fail(c, r, "join the run's cgroup");
    if (unshare(CLONE_NEWCGROUP) < 0)
        child_fail(c, -errno, "unshare the cgroup namespace");
    if (c->netns_fd >= 0) {
        /* A pre-made empty network namespace, used by this run only. */
        if (setns(c->netns_fd, CLONE_NEWNET) < 0)
            child_fail(c, -errno, "join the network namespace");
        close(c->netns_fd);
    }
    const char *step = "";
    if (c->mntns_fd >= 0) {
        if ((r = eb_mount_ns_enter(c->mntns_fd, c->plans, c->nplans, &step)) < 0)
            child_fail(c, r, step);
        close(c->mntns_fd);
    } else if ((r = eb_mount_run(c->rootdir, c->plans, c->nplans, &step)) < 0) {
        child_fail(c, r, step);
    }
    if (c->etc_fd >= 0)
        close(c->etc_fd); /* attached now */
    if (c->ws_fd >= 0)
        close(c->ws_fd); /* attached now; init keeps no handle on it */
    if (sethostname("execbox", 7) < 0)
        child_fail(c, -errno, "sethostname");
    if (c->root_mode && (r = eb_userns_enter(c->userns)) < 0)
        child_fail(c, r, "enter the user namespace");
    /* Changing ids cleared the parent-death signal: set it again, and check again. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        child_fail(c, -errno, "set the parent-death signal again");
    if (parent_gone(c->alive_fd))
        _exit(1);
    close(c->alive_fd);
    /* A template's init keeps its capabilities in the template's user namespace (which owns
     * nothing yet): its only child, the interpreter, needs them to make runs. */
    if (!c->tpl && (r = eb_drop_privileges()) < 0)
        child_fail(c, r, "drop capabilities");
    /* Not ptrace-able or dumpable by the guest, even at the same uid. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        child_fail(c, -errno, "make the sandbox non-dumpable");
    /* A new session: no controlling terminal to inject into (TIOCSTI) or signal. */
    if (setsid() < 0)
        child_fail(c, -errno, "start a new session");
    /* Last, as nothing the set-up above reads may live there: the host's command line, our
     * copy of it, blanked (child.h says why), and the host's name off the init's. */
    if (c->host_cmdline && c->host_cmdline_len) {
        static const char name[] = "execbox-init";
        size_t k =
            c->host_cmdline_len - 1 < sizeof(name) - 1 ? c->host_cmdline_len - 1 : sizeof(name) - 1;
        memset(c->host_cmdline, 0, c->host_cmdline_len);
        memcpy(c->host_cmdline, name, k);
    }
    if (prctl(PR_SET_NAME, "execbox-init", 0, 0, 0) < 0)
        child_fail(c, -errno, "name the init");
    eb_init_main(&c->init);
}
