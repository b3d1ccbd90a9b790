/* SPDX-License-Identifier: MIT */
/*
 * fail_cgroup.c - an LD_PRELOAD shim for tests: while the file named by EB_TEST_CGROUP_FAIL
 * exists, every mkdir of an execbox cgroup (a path under /sys/fs/cgroup whose last part starts
 * with "execbox-") fails with EACCES, as on a host whose cgroup tree refuses us. Everything else
 * goes to libc's mkdir.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mkdir(const char *path, mode_t mode)
{
    static int (*real)(const char *, mode_t);
    if (!real)
        real = (int (*)(const char *, mode_t))dlsym(RTLD_NEXT, "mkdir");
    const char *flag = getenv("EB_TEST_CGROUP_FAIL");
    const char *last = strrchr(path, '/');
    if (flag && *flag && strncmp(path, "/sys/fs/cgroup/", 15) == 0 && last &&
        strncmp(last + 1, "execbox-", 8) == 0 && access(flag, F_OK) == 0) {
        errno = EACCES;
        return -1;
    }
    return real(path, mode);
}
