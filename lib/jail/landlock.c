/* SPDX-License-Identifier: MIT */
/* landlock.c - writes confined beneath a few directories with Landlock (see landlock.h).
 *
 * Only write-side rights are "handled" by the ruleset, so reading and executing stay allowed
 * everywhere without a rule for "/". Each ABI version adds rights; we hand the kernel only the
 * ones its ABI knows (an unknown bit is EINVAL), and define the constants ourselves because the
 * build machine's <linux/landlock.h> may be older than the kernel the program runs on. */
#include "jail/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/error.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/* Access rights by the ABI that introduced them (uapi values, stable). */
#define LL_WRITE_FILE (1ULL << 1)
#define LL_REMOVE_DIR (1ULL << 4)
#define LL_REMOVE_FILE (1ULL << 5)
#define LL_MAKE_CHAR (1ULL << 6)
#define LL_MAKE_DIR (1ULL << 7)
#define LL_MAKE_REG (1ULL << 8)
#define LL_MAKE_SOCK (1ULL << 9)
#define LL_MAKE_FIFO (1ULL << 10)
#define LL_MAKE_BLOCK (1ULL << 11)
#define LL_MAKE_SYM (1ULL << 12)
#define LL_REFER (1ULL << 13)    /* ABI 2: link or rename across directories */
#define LL_TRUNCATE (1ULL << 14) /* ABI 3: truncate(2), ftruncate, open(O_TRUNC) */
#define LL_WRITE_V1                                                                                \
    (LL_WRITE_FILE | LL_REMOVE_DIR | LL_REMOVE_FILE | LL_MAKE_CHAR | LL_MAKE_DIR | LL_MAKE_REG |   \
     LL_MAKE_SOCK | LL_MAKE_FIFO | LL_MAKE_BLOCK | LL_MAKE_SYM)
/* ABI 6: the domain may not signal, or connect to abstract unix sockets of, processes outside
 * it (the jail's own helpers, anything on the host that shares a namespace by mistake). */
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

/* The ruleset attribute as of ABI 6; older kernels get a prefix of it (its size says which). */
struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4 */
    uint64_t scoped;             /* ABI 6 */
};

/* Character devices that are safe to open for writing (the sinks and the entropy pool). */
static const char *const writable_devices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                               "/dev/urandom"};

static int ll_abi_raw(void)
{
    return (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
}

int eb_landlock_abi(void)
{
    int abi = ll_abi_raw();
    return abi < 0 ? 0 : abi;
}

static uint64_t write_rights(int abi)
{
    uint64_t r = LL_WRITE_V1;
    if (abi >= 2)
        r |= LL_REFER;
    if (abi >= 3)
        r |= LL_TRUNCATE;
    return r;
}

/* Adds a path-beneath rule for path with the given rights. 0, -ENOENT when path is missing,
 * -EINVAL when want_chr and path is not a character device, or -errno. */
static int add_path(int ruleset, const char *path, uint64_t access, bool want_chr)
{
    int fd = open(path, O_PATH | O_CLOEXEC | (want_chr ? 0 : O_DIRECTORY));
    if (fd < 0)
        return -errno;
    if (want_chr) {
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode)) {
            close(fd);
            return -EINVAL;
        }
    }
    struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
    int r = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
    int e = errno;
    close(fd);
    return r < 0 ? -e : 0;
}

int eb_landlock_apply(const char *const *writable_dirs, struct execbox_error *err)
{
    int abi = ll_abi_raw();
    if (abi <= 0) {
        eb_error_set_raw(err, -EOPNOTSUPP, "landlock: not available in this kernel");
        return -EOPNOTSUPP;
    }
    size_t n_dirs = 0;
    while (writable_dirs && writable_dirs[n_dirs])
        n_dirs++;
    if (n_dirs > EB_LANDLOCK_MAX_DIRS) {
        eb_error_set_raw(err, -E2BIG, "landlock: too many writable directories");
        return -E2BIG;
    }

    uint64_t rw = write_rights(abi);
    struct ll_ruleset_attr attr = {.handled_access_fs = rw};
    size_t attr_size = sizeof(attr.handled_access_fs);
    if (abi >= 4)
        attr_size = offsetof(struct ll_ruleset_attr, scoped);
    if (abi >= 6) {
        attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
        attr_size = sizeof(attr);
    }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
    if (ruleset < 0) {
        int e = -errno;
        eb_error_set_raw(err, e, "landlock: creating the ruleset");
        return e;
    }

    int r = 0;
    for (size_t i = 0; i < n_dirs; i++) {
        r = add_path(ruleset, writable_dirs[i], rw, false);
        if (r < 0) {
            eb_error_set_raw(err, r, "landlock: adding a writable directory");
            goto out;
        }
    }
    /* Opening the sinks for writing (shell redirections use O_TRUNC, hence TRUNCATE). Missing
     * devices are skipped; a path that is not a character device gets nothing. */
    uint64_t dev_rights = LL_WRITE_FILE | (abi >= 3 ? LL_TRUNCATE : 0);
    for (size_t i = 0; i < sizeof(writable_devices) / sizeof(writable_devices[0]); i++) {
        r = add_path(ruleset, writable_devices[i], dev_rights, true);
        if (r == -ENOENT || r == -EINVAL || r == -EACCES)
            r = 0;
        if (r < 0) {
            eb_error_set_raw(err, r, "landlock: adding a writable device");
            goto out;
        }
    }
    /* no_new_privs: required by landlock_restrict_self without CAP_SYS_ADMIN, and wanted. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        r = -errno;
        eb_error_set_raw(err, r, "landlock: PR_SET_NO_NEW_PRIVS");
        goto out;
    }
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0) {
        r = -errno;
        eb_error_set_raw(err, r, "landlock: restricting the process");
        goto out;
    }
out:
    close(ruleset);
    return r;
}

int eb_landlock_probe(char *detail, size_t n)
{
    int abi = ll_abi_raw();
    if (abi <= 0) {
        int e = errno;
        snprintf(detail, n, "%s",
                 e == ENOSYS ? "kernel built without Landlock (CONFIG_SECURITY_LANDLOCK)"
                 : e == EOPNOTSUPP
                     ? "Landlock disabled at boot (add 'landlock' to the lsm= parameter)"
                     : "Landlock unavailable");
        return -EOPNOTSUPP;
    }
    snprintf(detail, n, "ABI %d: writes only beneath /tmp, /workspace and /dev/shm%s%s%s", abi,
             abi >= 2 ? ", rename/link confined" : "", abi >= 3 ? ", truncate confined" : "",
             abi >= 6 ? ", signals and abstract sockets scoped" : "");
    return 0;
}
