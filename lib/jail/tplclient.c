/* SPDX-License-Identifier: MIT */
/* tplclient.c - the jail's templates, the library's side (tplclient.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "jail/tmpfs.h"
#include "jail/tpl_blobs.h"
#include "jail/tpl_proto.h"
#include "jail/tplclient.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#define EB_TPL_START_TIMEOUT_MS 60000 /* the interpreter imports the preload */
#define EB_TPL_FORK_TIMEOUT_MS 10000

/* A sealed memfd holding len bytes of data. */
static int sealed_memfd(const char *name, const void *data, size_t len, struct execbox_error *err)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
    if (fd < 0 && errno == EINVAL) /* a kernel older than 6.3 knows no MFD_EXEC */
        fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return eb_error_set(err, -errno, "memfd_create %s: %s", name, execbox_strerror(-errno));
    int r = len ? eb_write_all(fd, data, len) : 0;
    if (r == 0 &&
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
        r = -errno;
    if (r < 0) {
        close(fd);
        return eb_error_set(err, r, "fill memfd %s: %s", name, execbox_strerror(r));
    }
    return fd;
}

/* The four memfds every template is handed, made once per executor (j->tpl_blob_fds) under
 * j->tpl_start_lock: the core starts one template at a time per executor today, but the backend
 * does not count on it (two first starts would each make a set and leak one). */
static int tpl_blobs_locked(struct jail *j, struct execbox_error *err)
{
    if (j->tpl_blob_fds[0] >= 0)
        return 0;
    const struct {
        const char *name;
        const void *data;
        size_t len;
    } b[4] = {
        {"execbox-tpl-helper", eb_tpl_helper_blob,
         (size_t)(eb_tpl_helper_blob_end - eb_tpl_helper_blob)},
        {"execbox-init", eb_tpl_init_blob, (size_t)(eb_tpl_init_blob_end - eb_tpl_init_blob)},
        {"execbox-seccomp", j->seccomp_ok ? (const void *)j->seccomp.insns : "",
         j->seccomp_ok ? j->seccomp.prog.len * sizeof(struct sock_filter) : 0},
        {"execbox-fontlist", j->mpl_data ? j->mpl_data : "", j->mpl_data ? j->mpl_len : 0},
    };
    int fds[4];
    for (int i = 0; i < 4; i++) {
        fds[i] = sealed_memfd(b[i].name, b[i].data, b[i].len, err);
        if (fds[i] < 0) {
            for (int k = 0; k < i; k++)
                close(fds[k]);
            return fds[i];
        }
    }
    memcpy(j->tpl_blob_fds, fds, sizeof(fds));
    return 0;
}

static int tpl_blobs(struct jail *j, struct execbox_error *err)
{
    pthread_mutex_lock(&j->tpl_start_lock);
    int r = tpl_blobs_locked(j, err);
    pthread_mutex_unlock(&j->tpl_start_lock);
    return r;
}

/* Waits up to timeout_ms for one answer from t (and its pidfd when ret_fd), 0 or -errno. */
static int tpl_recv(struct eb_tplproc *t, struct eb_tpl_resp *resp, int *ret_fd, int timeout_ms,
                    struct execbox_error *err)
{
    struct pollfd p = {.fd = t->sock, .events = POLLIN};
    uint64_t end = eb_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
    for (;;) {
        uint64_t now = eb_now_ns();
        if (now >= end)
            return eb_error_set(err, -ETIMEDOUT, "the template did not answer in %d ms",
                                timeout_ms);
        int n = poll(&p, 1, (int)((end - now) / 1000000ULL) + 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return eb_error_set(err, -errno, "poll the template: %s", execbox_strerror(-errno));
        if (n > 0)
            break;
    }
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = resp, .iov_len = sizeof(*resp)};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n = recvmsg(t->sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n <= 0)
        return eb_error_set(err, n == 0 ? -EPIPE : -errno, "the template is gone");
    int fd = -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int)))
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
    if ((size_t)n != sizeof(*resp) || resp->magic != EB_TPL_MAGIC ||
        (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        if (fd >= 0)
            close(fd);
        return eb_error_set(err, -EBADMSG, "a malformed answer from the template");
    }
    resp->msg[sizeof(resp->msg) - 1] = '\0';
    if (ret_fd)
        *ret_fd = fd;
    else if (fd >= 0)
        close(fd);
    return 0;
}

void eb_tpl_free(struct eb_tplproc *t)
{
    eb_box_destroy(&t->sb); /* its init's death ends its pid namespace, the interpreter too */
    eb_close(&t->sock);
    pthread_mutex_destroy(&t->io);
    free(t);
}

int eb_tpl_new(struct jail *j, const struct execbox_policy *policy, const struct eb_language *lang,
               const char *preload, struct eb_tplproc **ret, int fds[5], struct execbox_error *err)
{
    int r = tpl_blobs(j, err);
    if (r < 0)
        return r;
    struct eb_tplproc *t = calloc(1, sizeof(*t));
    if (!t)
        return eb_error_set(err, -ENOMEM, "out of memory");
    pthread_mutex_init(&t->io, NULL);
    t->sock = -1;
    t->policy = *policy;
    t->lang = lang;
    snprintf(t->preload, sizeof(t->preload), "%s", preload ? preload : "");
    eb_box_init(&t->sb, j, policy, lang);
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
        r = eb_error_set(err, -errno, "socketpair: %s", execbox_strerror(-errno));
        eb_tpl_free(t);
        return r;
    }
    t->sock = sp[0];
    fds[0] = sp[1];
    for (int i = 0; i < 4; i++)
        fds[i + 1] = j->tpl_blob_fds[i];
    *ret = t;
    return 0;
}

int eb_tpl_ready(struct eb_tplproc *t, struct execbox_error *err)
{
    struct eb_tpl_resp resp;
    int r = tpl_recv(t, &resp, NULL, EB_TPL_START_TIMEOUT_MS, err);
    if (r == -EPIPE && t->sb.child.status_fd >= 0) {
        /* It died before it was ready: its init may have said why. */
        struct eb_msg m;
        if (read(t->sb.child.status_fd, &m, sizeof(m)) == (ssize_t)sizeof(m) &&
            m.type == EB_MSG_ERROR) {
            m.err.msg[sizeof(m.err.msg) - 1] = '\0';
            r = eb_error_set(err, m.err.code ? m.err.code : -EIO, "template: %s", m.err.msg);
        }
    }
    if (r == 0 && resp.code != 0)
        r = eb_error_set(err, resp.code, "template: %s", resp.msg);
    return r;
}

/* Sends req and its n fds to t, and waits for the answer and the run's pidfd (*ret_pidfd, or
 * -1). A failure to speak with t marks it broken. 0 or -errno with err set. */
static int tpl_request(struct eb_tplproc *t, const struct eb_tpl_req *req, const int *fds, int n,
                       struct eb_tpl_resp *resp, int *ret_pidfd, struct execbox_error *err)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * EB_TPL_FDS_MAX)];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof(u));
    struct iovec iov = {.iov_base = (void *)req, .iov_len = sizeof(*req)};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = u.buf,
                        .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
    int r;
    pthread_mutex_lock(&t->io);
    ssize_t sent;
    do
        sent = sendmsg(t->sock, &mh, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent < 0)
        r = eb_error_set(err, errno == EPIPE || errno == ECONNRESET ? -EPIPE : -errno,
                         "hand a run to the template: %s", execbox_strerror(-errno));
    else
        r = tpl_recv(t, resp, ret_pidfd, EB_TPL_FORK_TIMEOUT_MS, err);
    pthread_mutex_unlock(&t->io);
    if (r < 0)
        atomic_store(&t->broken, true); /* gone, or no longer in step with us */
    return r;
}

int eb_tpl_fork(struct jail *j, struct eb_tplproc *t, const struct execbox_policy *pol,
                bool session, struct eb_box **ret, struct execbox_error *err)
{
    struct eb_box *sb = malloc(sizeof(*sb));
    if (!sb)
        return eb_error_set(err, -ENOMEM, "out of memory");
    eb_box_init(sb, j, pol, t->lang);
    sb->tpl = t;
    sb->session = session;
    /* A fork's user namespace is a child of its template's that maps the template's ids to
     * themselves (tpl_helper.c, r_userns): its guest has the template's host uid (see
     * docs/threat-model.md, "Per-user kernel counts"). */
    sb->userns = t->sb.userns;
    int fds[10] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1}; /* out, err, status, ctl, go */
    _cleanup_close_ int code_ro = -1;
    int pidfd = -1, r = 0;
    sb->ws_fd = eb_tmpfs_workspace(&sb->userns, pol->workspace_size, err);
    if (sb->ws_fd < 0) {
        r = sb->ws_fd;
        goto out;
    }
    /* As a cold run: the files its tmpfs hold count against its memory cap. */
    if ((r = eb_box_cgroup(sb, err)) < 0)
        goto out;
    bool cover;
    if ((r = eb_tmpfs_code(&sb->code_fd, &code_ro, &cover, err)) < 0)
        goto out;
    for (int i = 0; i < 10; i += 2)
        if ((i == 8 ? eb_go_channel(&fds[i], session) : pipe2(&fds[i], O_CLOEXEC)) < 0) {
            r = eb_error_set(err, -errno, "pipe: %s", execbox_strerror(-errno));
            goto out;
        }
    struct eb_tpl_req req = {
        .magic = EB_TPL_MAGIC,
        .tmpfs = pol->tmpfs,
        .shm = EB_JAIL_SHM_SIZE,
        .file_size = pol->file_size,
        .memory = pol->memory,
        .cpu_seconds = (uint64_t)ceil(pol->timeout * pol->cpus) + 1,
        .memory_rlimit = j->cg.version && j->cg.have[EB_CG_MEMORY] ? -1 : t->lang->memory_rlimit,
        .code_cover = cover,
    };
    int send_fds[EB_TPL_FDS_MAX] = {fds[1], fds[3], fds[5], fds[6], fds[8], sb->ws_fd, code_ro};
    int n = EB_TPL_FD_CG0;
    for (int i = 0; i < EB_CG_N && n < EB_TPL_FD_CG0 + 4; i++)
        if (sb->cg.procs_fd[i] >= 0)
            send_fds[n++] = sb->cg.procs_fd[i];
    /* The init's way out of the run's cgroup once the run is over (as a cold init has it): the
     * result then waits neither for its exit nor for its namespaces' teardown. */
    for (int i = 0; i < EB_CG_N && n < EB_TPL_FDS_MAX; i++)
        if (sb->cg.leave_fd[i] >= 0) {
            send_fds[n++] = sb->cg.leave_fd[i];
            req.n_leave++;
        }
    req.n_fds = (uint32_t)n;
    struct eb_tpl_resp resp;
    if ((r = tpl_request(t, &req, send_fds, n, &resp, &pidfd, err)) < 0)
        goto out;
    if (resp.code != 0 || pidfd < 0) {
        r = eb_error_set(err, resp.code ? resp.code : -EIO, "fork a run from the template: %s",
                         resp.msg);
        goto out;
    }
    sb->k.cg = j->cg.version ? &sb->cg : NULL;
    sb->child.pid = resp.pid > 0 ? resp.pid : 1;
    sb->child.pidfd = TAKE_FD(pidfd);
    sb->child.not_ours = true;
    sb->k.pidfd = sb->child.pidfd;
    sb->child.out_fd = TAKE_FD(fds[0]);
    sb->child.err_fd = TAKE_FD(fds[2]);
    sb->child.status_fd = TAKE_FD(fds[4]);
    sb->child.ctl_fd = TAKE_FD(fds[7]);
    sb->child.kill_all = eb_box_kill_all;
    sb->child.ctx = &sb->k;
    sb->child.exit_msg_ends = req.n_leave > 0;
    /* A run's init reports EB_MSG_DONE, and its guest holds no copy of the status pipe
     * (tpl_helper.c closes it before the guest's code); a session's cells hold theirs. */
    sb->child.done_ok = !session;
    sb->go_fd = TAKE_FD(fds[9]);
out:
    for (int i = 0; i < 10; i++)
        eb_close(&fds[i]);
    if (pidfd >= 0)
        close(pidfd);
    if (r < 0) {
        eb_box_destroy(sb);
        free(sb);
        return r;
    }
    *ret = sb;
    return 0;
}

bool eb_tpl_alive(struct eb_tplproc *t)
{
    if (atomic_load(&t->broken))
        return false;
    struct pollfd p = {.fd = t->sb.child.pidfd, .events = POLLIN};
    return t->sb.child.pidfd >= 0 && poll(&p, 1, 0) == 0; /* its init still runs */
}

uint64_t eb_tpl_memory(struct eb_tplproc *t)
{
    struct eb_cgroup_stats st;
    eb_cgroup_stats(&t->sb.cg, &st);
    return st.peak_memory;
}
