/* SPDX-License-Identifier: MIT */
/* prewarm.c - building matplotlib's font list once per /etc stage (see prewarm.h). */
#include "jail/prewarm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

#define PREWARM_TIMEOUT_MS 10000
#define FONTLIST_MAX (1U << 20)

int eb_prewarm_stage(const char *stage_dir)
{
    char dir[4200], env_mpl[4300], env_home[4300];
    snprintf(dir, sizeof(dir), "%s/mpl", stage_dir);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return -errno;
    if (access("/usr/bin/python3", X_OK) < 0)
        return -ENOENT;
    snprintf(env_mpl, sizeof(env_mpl), "MPLCONFIGDIR=%s", dir);
    snprintf(env_home, sizeof(env_home), "HOME=%s", dir);
    /* The host's own interpreter and matplotlib (system packages), nothing of any run. */
    char *const argv[] = {"/usr/bin/python3", "-B", "-c",
                          "try:\n import matplotlib.font_manager\nexcept ImportError:\n pass\n",
                          NULL};
    char *const envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", env_mpl, env_home, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0)
        return -r;
    /* Every wait has a deadline (with or without a pidfd), and a status is read only when
     * waitpid gave one. */
    int st = 0;
    r = eb_wait_child(pid, PREWARM_TIMEOUT_MS, &st);
    if (r < 0)
        return r;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

int eb_prewarm_load(const char *stage_dir, char name[64], char **ret_data, size_t *ret_len)
{
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/mpl", stage_dir);
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    struct dirent *e;
    int r = -ENOENT;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "fontlist-", 9) != 0 || n < 5 || n >= 64 ||
            strcmp(e->d_name + n - 5, ".json") != 0)
            continue;
        char p[4300];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        r = eb_read_file(p, FONTLIST_MAX, ret_data, ret_len);
        if (r == 0)
            memcpy(name, e->d_name, n + 1);
        break;
    }
    closedir(d);
    return r;
}
