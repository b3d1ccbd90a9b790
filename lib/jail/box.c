/* SPDX-License-Identifier: MIT */
/* box.c - a jail sandbox's life cycle short of its assembly (box.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "jail/box.h"
#include "jail/reaper.h"

void eb_box_kill_all(void *ctx)
{
    struct killer *k = ctx;
    /* SIGKILL of a pid namespace's init kills every process in it; the cgroup kill is the
     * belt to those braces (and the only way to reach a task mid-exit of the namespace). */
    if (k->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, k->pidfd, SIGKILL, NULL, 0);
    if (k->cg)
        eb_cgroup_kill(k->cg);
}

int eb_go_channel(int fds[2], bool session)
{
    if (session)
        return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0 ? -errno : 0;
    return pipe2(fds, O_CLOEXEC) < 0 ? -errno : 0;
}

void eb_box_init(struct eb_box *sb, struct jail *j, const struct execbox_policy *pol,
                 const struct eb_language *lang)
{
    memset(sb, 0, sizeof(*sb));
    sb->j = j;
    sb->policy = *pol;
    sb->lang = lang;
    eb_cgroup_init(&sb->cg);
    eb_child_init(&sb->child);
    sb->k.pidfd = -1;
    eb_host_ws_init(&sb->host);
    sb->ws_fd = sb->stage_fd = sb->alive_w = sb->code_fd = sb->go_fd = -1;
    sb->userns = j->userns;
    sb->uid_slot = -1;
}

int eb_box_take_uid(struct eb_box *sb, struct execbox_error *err)
{
    if (!sb->j->uids)
        return 0;
    uint32_t slot, id;
    int r = eb_uid_pool_take(sb->j->uids, &slot, &id, err);
    if (r < 0)
        return r;
    sb->uid_slot = slot;
    eb_userns_prepare(&sb->userns, id);
    return 0;
}

int eb_box_cgroup(struct eb_box *sb, struct execbox_error *err)
{
    struct jail *j = sb->j;
    if (!j->cg.version)
        return 0;
    char name[64];
    snprintf(name, sizeof(name), EB_JAIL_CG_PREFIX "%d-%08x-%u", (int)getpid(), j->id,
             atomic_fetch_add(&j->seq, 1));
    return eb_cgroup_create(&j->cg, j->cg_spares, name, sb->policy.memory, sb->policy.pids,
                            sb->policy.cpus, &sb->cg, err);
}

void eb_box_destroy(struct eb_box *sb)
{
    bool cg = false;
    for (int i = 0; i < EB_CG_N; i++)
        cg |= sb->cg.dir[i][0] != '\0';
    if (sb->tpl && sb->child.pid < 0 && sb->child.pidfd >= 0 && cg)
        (void)eb_grave_add(&sb->cg, &sb->child.pidfd); /* else removed below */
    if (sb->child.pid > 0) {
        eb_box_kill_all(&sb->k);
        if (sb->child.not_ours) {
            /* A template's run: its init is the template's child. Its exit (the pidfd turns
             * readable) comes after every process of its pid namespace is gone. */
            struct pollfd p = {.fd = sb->child.pidfd, .events = POLLIN};
            while (poll(&p, 1, EB_KILL_WAIT_MS) < 0 && errno == EINTR)
                ;
        } else {
            siginfo_t si;
            syscall(SYS_waitid, P_PIDFD, sb->child.pidfd, &si, WEXITED, NULL);
        }
        sb->child.pid = -1;
    }
    eb_proxy_stop(sb->proxy, NULL);
    sb->proxy = NULL;
    eb_cgroup_release(&sb->cg);
    eb_close(&sb->go_fd);
    eb_close(&sb->code_fd);
    eb_close(&sb->alive_w);
    eb_close(&sb->ws_fd);
    eb_child_close(&sb->child);
    eb_host_ws_close(&sb->host);
    eb_close(&sb->stage_fd);
    if (!sb->policy.workspace[0] && sb->host.path[0])
        eb_rm_rf(sb->host.path);
    sb->host.path[0] = '\0';
    /* Its processes are gone (killed and reaped above, or, a run whose init left its empty
     * cgroup, only that init is still exiting): its uid may serve another sandbox. */
    if (sb->uid_slot >= 0)
        eb_uid_pool_put(sb->j->uids, (uint32_t)sb->uid_slot);
    sb->uid_slot = -1;
}

/* What the sandbox's tmpfs hold (charged to its memory cgroup), for a MemoryLimit message:
 * ret_ws what a fresh /workspace holds (statfs of our own fd of it: exact, and alive as long as
 * the box is, whatever the sandbox's processes did); ret_tmp /tmp and /dev/shm, mounted in the
 * sandbox's namespace where the host holds no fd: the larger of what the run's init measured
 * when the program ended (tmp_seen, its exit message: a one-shot run's namespace, and with it
 * those pages, is gone soon after, so the cgroup's shmem read now may already miss them) and
 * the rest of the cgroup's shmem now (a session's or a live box's, its namespace alive). */
void eb_box_files(const struct eb_box *sb, const struct eb_cgroup_stats *st, uint64_t tmp_seen,
                  uint64_t *ret_tmp, uint64_t *ret_ws)
{
    uint64_t ws = 0;
    struct statfs fs;
    if (sb->ws_fd >= 0 && !sb->policy.workspace[0] && fstatfs(sb->ws_fd, &fs) == 0)
        ws = (uint64_t)(fs.f_blocks - fs.f_bfree) * (uint64_t)fs.f_bsize;
    *ret_ws = ws;
    uint64_t tmp = st->shmem > ws ? st->shmem - ws : 0;
    *ret_tmp = tmp_seen > tmp ? tmp_seen : tmp;
}
