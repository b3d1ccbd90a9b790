/* SPDX-License-Identifier: MIT */
/* stage.c - the stage directory, its sweep and the workspace-root journal (stage.h). */
#include <dirent.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "jail/cache.h"
#include "jail/mntpin.h"
#include "jail/mounts.h"
#include "jail/prewarm.h"
#include "jail/stage.h"

#define STAGE_VERSION "execbox-stage-3\n" /* bump when the staged files change */

void eb_stage_path(char *buf, size_t n)
{
    if (geteuid() == 0)
        snprintf(buf, n, "/run/execbox/jail");
    else
        snprintf(buf, n, "%s/execbox-jail-%u", eb_tmp_dir(), (unsigned)geteuid());
}

/* Is "<pid>-..." the name of something made by an execbox that is gone? */
static bool owner_dead(const char *s)
{
    char *end;
    long pid = strtol(s, &end, 10);
    return pid > 0 && *end == '-' && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* A directory entry of ours: a real directory (not a symlink), owned by us, with exactly the
 * mode we make it with. In a world-writable $TMPDIR a name proves nothing; this does (no other
 * user can make a directory owned by us). */
static bool our_dir(int dfd, const char *name, mode_t mode)
{
    struct stat st;
    return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == geteuid() && (st.st_mode & 07777) == mode;
}

/* The journal of a caller's workspace root in flight (root mode): "<dev> <ino> <mode> <uid>
 * <gid>\n<path>", written before the run and removed after it. If execbox is killed in
 * between, the sweep puts the directory's owner and mode back, by inode: a path that now names
 * another directory is left alone. */
#define WS_JOURNAL "wsroot."

static void replay_journal(int dfd, const char *name)
{
    _cleanup_close_ int jfd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    char text[EXECBOX_PATH_MAX + 128];
    ssize_t n = jfd < 0 ? -1 : eb_read_full(jfd, text, sizeof(text) - 1);
    if (n > 0) {
        text[n] = '\0';
        unsigned long long dev, ino;
        unsigned mode, uid, gid;
        int used = 0;
        if (sscanf(text, "%llu %llu %o %u %u\n%n", &dev, &ino, &mode, &uid, &gid, &used) == 5 &&
            used > 0 && text[used] == '/') {
            _cleanup_close_ int wfd =
                open(text + used, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
            struct stat now;
            if (wfd >= 0 && fstat(wfd, &now) == 0 && now.st_dev == (dev_t)dev &&
                now.st_ino == (ino_t)ino) {
                struct stat before = now;
                before.st_mode = (now.st_mode & ~07777U) | (mode & 07777U);
                before.st_uid = uid;
                before.st_gid = gid;
                eb_ws_root_restore(wfd, &before);
            }
        }
    }
    (void)unlinkat(dfd, name, 0);
}

/* At most once per EB_SWEEP_INTERVAL seconds per host and sweep scope: the stamp's mtime says
 * when the last sweep began. A sweep sees only the cgroups below its process's own cgroup and
 * its own $TMPDIR, so processes with other ones keep other stamps (named by a hash of both): a
 * sweep elsewhere must not stand in for ours. */
static bool sweep_due(const struct eb_cgroup_root *cg, const char *cache)
{
    uint32_t h = 2166136261U; /* FNV-1a */
    const char *parts[EB_CG_N + 1];
    for (int c = 0; c < EB_CG_N; c++)
        parts[c] = cg->base[c];
    parts[EB_CG_N] = eb_tmp_dir();
    for (int i = 0; i <= EB_CG_N; i++)
        for (const char *q = parts[i]; q && *q; q++)
            h = (h ^ (uint8_t)*q) * 16777619U;
    char p[EXECBOX_PATH_MAX + 32];
    snprintf(p, sizeof(p), "%s/.swept-%08x", cache, h);
    _cleanup_close_ int fd =
        open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return true;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (st.st_size > 0 && now.tv_sec >= st.st_mtim.tv_sec &&
        now.tv_sec - st.st_mtim.tv_sec < EB_SWEEP_INTERVAL)
        return false;
    (void)!write(fd, "x", st.st_size > 0 ? 0 : 1);
    (void)futimens(fd, NULL);
    return true;
}

/* Removes what execbox processes killed before their teardown left behind: run cgroups
 * "execbox-<pid>-<executor>-<n>", unprivileged workspaces "<tmp>/execbox-ws-<pid>-*" that are
 * our own 0700 directories, /etc stages "<cache>.<pid>-*" (swapped out or half-built) that are
 * ours and that no sandbox holds (each run keeps a shared lock on the stage its /etc is bound
 * from), and it replays the workspace-root journals of dead runs. Only names whose pid is
 * dead; every delete relative to a directory fd, never following a symlink (eb_rm_rf_at).
 * (Mounts and processes need no sweep: they live in namespaces that died with the run.) */
void eb_stage_sweep(const struct eb_cgroup_root *cg, const char *cg_prefix, const char *cache,
                    bool root_mode, bool force)
{
    bool due = sweep_due(cg, cache); /* restamps when due */
    if (!due && !force)
        return;
    eb_cgroup_remove_stale(cg, cg_prefix);
    (void)eb_probe_cache_sweep(cache, 2 * EB_PROBE_CACHE_TTL);
    if (root_mode)
        eb_mntns_pin_sweep(EB_MNTNS_PIN_DIR, EB_MNTNS_PIN_MAX_AGE);
    DIR *d = opendir(eb_tmp_dir());
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strncmp(e->d_name, "execbox-ws-", 11) == 0 && owner_dead(e->d_name + 11) &&
                our_dir(dirfd(d), e->d_name, 0700))
                (void)eb_rm_rf_at(dirfd(d), e->d_name);
        closedir(d);
    }
    char parent[EXECBOX_PATH_MAX];
    snprintf(parent, sizeof(parent), "%s", cache);
    char *slash = strrchr(parent, '/');
    if (!slash)
        return;
    char base[256];
    snprintf(base, sizeof(base), "%s", slash + 1);
    size_t blen = strlen(base);
    *slash = '\0';
    d = opendir(parent[0] ? parent : "/");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (root_mode && strncmp(e->d_name, WS_JOURNAL, strlen(WS_JOURNAL)) == 0 &&
            owner_dead(e->d_name + strlen(WS_JOURNAL))) {
            replay_journal(dirfd(d), e->d_name);
            continue;
        }
        if (strncmp(e->d_name, base, blen) != 0 || e->d_name[blen] != '.' ||
            !owner_dead(e->d_name + blen + 1) || !our_dir(dirfd(d), e->d_name, 0755))
            continue;
        /* In use as some live run's /etc? Its lock says so. */
        _cleanup_close_ int sfd =
            openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sfd >= 0 && flock(sfd, LOCK_EX | LOCK_NB) == 0)
            (void)eb_rm_rf_at(dirfd(d), e->d_name);
    }
    closedir(d);
}

/* The /etc staging and root mount point live in a directory of ours that persists between
 * execbox processes (re-staged when its marker is older than a staged source), so a cold run
 * does not copy /etc each time. It must be owned by us and writable by nobody else. */
int eb_stage_prepare(char *cache, size_t cache_size, struct execbox_error *err)
{
    if (geteuid() == 0 && mkdir("/run/execbox", 0755) < 0 && errno != EEXIST)
        return eb_error_set(err, -errno, "mkdir /run/execbox: %s", execbox_strerror(-errno));
    eb_stage_path(cache, cache_size);
    struct stat st;
    char marker[EXECBOX_PATH_MAX + 16];
    snprintf(marker, sizeof(marker), "%s/.staged", cache);
    bool fresh = false;
    if (lstat(cache, &st) == 0) {
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
            return eb_error_set(err, -EPERM, "%s is not a private directory of ours", cache);
        struct stat ms;
        /* The marker names the stage's layout: a newer execbox re-stages. */
        char *v = NULL;
        fresh = stat(marker, &ms) == 0 && eb_read_file(marker, 64, &v, NULL) == 0 &&
                strcmp(v, STAGE_VERSION) == 0;
        free(v);
        static const char *const src[] = {"/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime",
                                          "/etc/python3", "/etc/matplotlibrc"};
        for (size_t i = 0; fresh && i < ARRAY_SIZE(src); i++) {
            struct stat s2;
            if (lstat(src[i], &s2) == 0 && (s2.st_mtim.tv_sec > ms.st_mtim.tv_sec ||
                                            (s2.st_mtim.tv_sec == ms.st_mtim.tv_sec &&
                                             s2.st_mtim.tv_nsec > ms.st_mtim.tv_nsec)))
                fresh = false;
        }
    }
    if (!fresh) {
        /* Build in a new directory and rename it over the old one: concurrent execbox
         * processes never see a half-staged /etc. */
        char build[EXECBOX_PATH_MAX + 16], p[EXECBOX_PATH_MAX + 32];
        snprintf(build, sizeof(build), "%s.%d-XXXXXX", cache, (int)getpid());
        if (!mkdtemp(build))
            return eb_error_set(err, -errno, "mkdtemp %s: %s", build, execbox_strerror(-errno));
        if (chmod(build, 0755) < 0) {
            int e = eb_error_set(err, -errno, "chmod %s: %s", build, execbox_strerror(-errno));
            eb_rm_rf(build);
            return e;
        }
        int r = eb_stage_etc(build, err);
        if (r == 0)
            (void)eb_prewarm_stage(build); /* best effort: without it matplotlib builds its own */
        snprintf(p, sizeof(p), "%s/root", build);
        if (r == 0 && mkdir(p, 0755) < 0)
            r = eb_error_set(err, -errno, "mkdir %s", p);
        snprintf(p, sizeof(p), "%s/.staged", build);
        if (r == 0 && (r = eb_write_file(p, STAGE_VERSION, strlen(STAGE_VERSION), 0644)) < 0)
            eb_error_set(err, r, "write %s", p);
        if (r == 0) {
            /* Swap the new stage in atomically: the path never disappears, so runs of other
             * execbox processes starting now find either stage. The old one is left under our
             * build name (with our pid) and swept by a later open once we are gone, since a
             * run in flight may still have it mounted as its /etc. */
            if (syscall(SYS_renameat2, AT_FDCWD, build, AT_FDCWD, cache, RENAME_EXCHANGE) < 0) {
                if (errno != ENOENT || (syscall(SYS_renameat2, AT_FDCWD, build, AT_FDCWD, cache,
                                                RENAME_NOREPLACE) < 0 &&
                                        errno != EEXIST))
                    r = eb_error_set(err, -errno, "install %s: %s", cache,
                                     execbox_strerror(-errno));
                else
                    build[0] = '\0';
            }
        }
        if (r < 0 && build[0])
            eb_rm_rf(build);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Written next to the stage (see replay_journal): if we are killed during the run, the next
 * start puts the directory's owner and mode back. */
int eb_ws_journal_write(const char *cache, unsigned id, const char *host, const struct stat *st,
                        char *ret_path, size_t ret_size, struct execbox_error *err)
{
    static atomic_uint seq;
    char dir[EXECBOX_PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", cache);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    char text[EXECBOX_PATH_MAX + 128];
    int n = snprintf(text, sizeof(text), "%llu %llu %o %u %u\n%s", (unsigned long long)st->st_dev,
                     (unsigned long long)st->st_ino, (unsigned)(st->st_mode & 07777),
                     (unsigned)st->st_uid, (unsigned)st->st_gid, host);
    if (n < 0 || n >= (int)sizeof(text))
        return eb_error_set(err, -ENAMETOOLONG, "workspace path too long");
    char p[EXECBOX_PATH_MAX + 64];
    if (snprintf(p, sizeof(p), "%s/" WS_JOURNAL "%d-%08x-%u", dir, (int)getpid(), id,
                 atomic_fetch_add(&seq, 1)) >= (int)sizeof(p) ||
        strlen(p) >= ret_size)
        return eb_error_set(err, -ENAMETOOLONG, "journal path too long");
    int r = eb_write_file(p, text, (size_t)n, 0600);
    if (r < 0)
        return eb_error_set(err, r, "write %s: %s", p, execbox_strerror(r));
    snprintf(ret_path, ret_size, "%s", p);
    return 0;
}

/* Through the fd that pinned the directory: the code, seen as its owner through the mount, may
 * have changed its mode. (Never a setuid or setgid bit: the syscall filter refuses those
 * modes.) */
void eb_ws_root_restore(int fd, const struct stat *before)
{
    struct stat now;
    if (fstat(fd, &now) < 0)
        return;
    if ((now.st_uid != before->st_uid || now.st_gid != before->st_gid) &&
        fchown(fd, before->st_uid, before->st_gid) < 0)
        return;
    if ((now.st_mode & 07777) != (before->st_mode & 07777))
        (void)fchmod(fd, before->st_mode & 07777);
}
