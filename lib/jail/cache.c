/* SPDX-License-Identifier: MIT */
/* cache.c - the jail's probe cache (see cache.h): a report kept in the stage directory, keyed to
 * what the probe's answer depends on, so that `execbox run` does not fork a probe child and read
 * a dozen kernel files at every start. `execbox check` always probes live (and refreshes it). */
#include "jail/cache.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

#define PROBE_FILE ".probe"           /* + "-<hash of the key>": one file per key */
#define PROBE_MAGIC "execbox-probe-2" /* bump when the layout or the key changes */
#define KEY_MAX 1024

/* The file: the report first (so that `usable` is at byte 32, which the integration test
 * flips), then what it is valid for. */
struct probe_file {
    struct execbox_check check;
    char magic[16];
    uint64_t made_ns; /* CLOCK_BOOTTIME when it was written */
    uint32_t key_len;
    char key[KEY_MAX];
};

struct build_id_ctx {
    uintptr_t addr;
    char *buf;
    size_t n;
    bool found;
};

static int build_id_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct build_id_ctx *c = arg;
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        mine = ph->p_type == PT_LOAD && c->addr >= lo && c->addr < lo + ph->p_memsz;
    }
    if (!mine)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof(*nh);
            const unsigned char *desc = (const unsigned char *)name + ((nh->n_namesz + 3) & ~3U);
            if ((const char *)desc + nh->n_descsz > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                size_t k = 0;
                for (uint32_t b = 0; b < nh->n_descsz && k + 3 <= c->n; b++, k += 2)
                    snprintf(c->buf + k, 3, "%02x", desc[b]);
                c->found = k > 0;
                return 1;
            }
            p = (const char *)desc + ((nh->n_descsz + 3) & ~3U);
        }
    }
    return 1;
}

void eb_build_id(char *buf, size_t n)
{
    struct build_id_ctx c = {.addr = (uintptr_t)&eb_build_id, .buf = buf, .n = n};
    if (n == 0)
        return;
    buf[0] = '\0';
    dl_iterate_phdr(build_id_cb, &c);
    if (!c.found)
        snprintf(buf, n, "%s", EXECBOX_VERSION);
}

/* A small file's first line, or "-" (absent: the answer the probe gives then too). */
static void read_small(const char *path, char *out, size_t n)
{
    snprintf(out, n, "-");
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t k = eb_read_full(fd, out, n - 1);
    if (k <= 0) {
        snprintf(out, n, "-");
        return;
    }
    out[k] = '\0';
    out[strcspn(out, "\n")] = '\0';
}

static uint64_t fnv1a(const char *s, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
    return h;
}

/* The file a key's report lives in: ".probe-<16 hex digits of the key's hash>". One file per key,
 * so that two builds (or two users of one stage) used in turn do not overwrite each other's
 * report and each probe live after the other's run; the key inside is still compared whole. */
static void probe_name(const char *key, size_t len, char out[40])
{
    snprintf(out, 40, PROBE_FILE "-%016llx",
             (unsigned long long)fnv1a(key, len, 1469598103934665603ULL));
}

/* Everything the jail's probe reads or depends on, now: if any of it differs, so may the
 * report. The probe's answers otherwise depend on the kernel's build and configuration (its
 * release and version string, and the boot: a module or an lsm= parameter changes only with a
 * boot) and on nothing the caller can change without changing one of these. */
static int probe_key(char *key, size_t n)
{
    char bid[80], boot[64], v[3][32];
    eb_build_id(bid, sizeof(bid));
    read_small("/proc/sys/kernel/random/boot_id", boot, sizeof(boot));
    read_small("/proc/sys/user/max_user_namespaces", v[0], sizeof(v[0]));
    read_small("/proc/sys/kernel/unprivileged_userns_clone", v[1], sizeof(v[1]));
    read_small("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", v[2], sizeof(v[2]));
    struct utsname u;
    if (uname(&u) < 0)
        return -errno;
    /* The cgroup answer depends on where we are in the hierarchy. */
    uint64_t cg = 1469598103934665603ULL;
    {
        _cleanup_close_ int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
        char b[4096];
        ssize_t k;
        if (fd < 0)
            return -errno;
        while ((k = read(fd, b, sizeof(b))) > 0)
            cg = fnv1a(b, (size_t)k, cg);
        if (k < 0)
            return -errno;
    }
    /* The privilege probe's answer depends on what we hold: our ids, capabilities (all sets but
     * ambient, which it clears), no_new_privs, a filter already on us (one read of
     * /proc/self/status has them all, where asking one by one took some fifty calls), and the
     * hard limits it lowers. */
    char status[4096], creds[512];
    {
        _cleanup_close_ int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        ssize_t k = eb_read_full(fd, status, sizeof(status) - 1);
        if (k <= 0)
            return k < 0 ? (int)k : -ENODATA;
        status[k] = '\0';
    }
    static const char *const fields[] = {
        "Uid:", "Gid:", "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "NoNewPrivs:", "Seccomp:"};
    size_t used = 0;
    for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
        const char *line = eb_status_line(status, fields[i]);
        size_t l = line ? strcspn(line, "\n") : 0;
        if (used + l + 2 > sizeof(creds))
            return -ENAMETOOLONG;
        memcpy(creds + used, line ? line : "", l);
        used += l;
        creds[used++] = ';';
    }
    creds[used] = '\0';
    static const int res[] = {RLIMIT_CORE, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CPU};
    unsigned long long hard[ARRAY_SIZE(res)];
    for (size_t i = 0; i < ARRAY_SIZE(res); i++) {
        struct rlimit rl;
        if (getrlimit(res[i], &rl) < 0)
            return -errno;
        hard[i] = (unsigned long long)rl.rlim_max;
    }
    struct stat us;
    if (stat("/proc/self/ns/user", &us) < 0)
        us.st_ino = 0;
    int k = snprintf(key, n,
                     "%s %s|%s|%s %s %s|userns %llu|cg %016llx|%s|"
                     "rl %llu %llu %llu %llu|userns sysctls %s %s %s",
                     PROBE_MAGIC, bid, boot, u.release, u.version, u.machine,
                     (unsigned long long)us.st_ino, (unsigned long long)cg, creds, hard[0], hard[1],
                     hard[2], hard[3], v[0], v[1], v[2]);
    return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : k;
}

static uint64_t boottime_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_BOOTTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* The stage directory, if it is ours: a real directory owned by us, writable by nobody else. */
static int open_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
        close(fd);
        return -EPERM;
    }
    return fd;
}

int eb_probe_cache_load(const char *dir, double max_age, struct execbox_check *ret)
{
    _cleanup_close_ int dfd = open_dir(dir);
    if (dfd < 0)
        return dfd;
    _cleanup_free_ char *key = malloc(KEY_MAX);
    if (!key)
        return -ENOMEM;
    int k = probe_key(key, KEY_MAX);
    if (k < 0)
        return k;
    char name[40];
    probe_name(key, (size_t)k, name);
    _cleanup_close_ int fd =
        openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return errno == ELOOP ? -EPERM : -errno;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0600 ||
        st.st_nlink != 1)
        return -EPERM;
    if (st.st_size != (off_t)sizeof(struct probe_file))
        return -EINVAL;
    _cleanup_free_ struct probe_file *f = malloc(sizeof(*f));
    if (!f)
        return -ENOMEM;
    if (eb_read_full(fd, f, sizeof(*f)) != (ssize_t)sizeof(*f))
        return -EINVAL;
    uint64_t now = boottime_ns();
    if (memcmp(f->magic, PROBE_MAGIC, sizeof(PROBE_MAGIC)) != 0 || f->key_len != (uint32_t)k ||
        memcmp(f->key, key, (size_t)k) != 0)
        return -ESTALE;
    if (f->made_ns > now || (double)(now - f->made_ns) > max_age * 1e9)
        return -ESTALE;
    struct execbox_check *c = &f->check;
    if (c->n_walls > EXECBOX_CHECK_MAX_WALLS)
        return -EINVAL;
    c->backend[sizeof(c->backend) - 1] = '\0';
    c->tier[sizeof(c->tier) - 1] = '\0';
    for (size_t i = 0; i < c->n_walls; i++) {
        c->walls[i].name[sizeof(c->walls[i].name) - 1] = '\0';
        c->walls[i].detail[sizeof(c->walls[i].detail) - 1] = '\0';
    }
    *ret = *c;
    return 0;
}

int eb_probe_cache_store(const char *dir, const struct execbox_check *c)
{
    _cleanup_close_ int dfd = open_dir(dir);
    if (dfd < 0)
        return dfd;
    /* Under a file-size limit below the file's size the write would raise SIGXFSZ, whose
     * default kills the process: a cache is not worth that. */
    struct rlimit fl;
    if (getrlimit(RLIMIT_FSIZE, &fl) < 0 ||
        (fl.rlim_cur != RLIM_INFINITY && fl.rlim_cur < sizeof(struct probe_file)))
        return -EFBIG;
    _cleanup_free_ struct probe_file *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->check = *c;
    memcpy(f->magic, PROBE_MAGIC, sizeof(PROBE_MAGIC));
    int k = probe_key(f->key, sizeof(f->key));
    if (k < 0)
        return k;
    f->key_len = (uint32_t)k;
    f->made_ns = boottime_ns();
    /* Unnamed until complete: nothing half-written is ever visible, and nothing is left under
     * a temporary name if we are killed. */
    _cleanup_close_ int fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    if (fchmod(fd, 0600) < 0) /* whatever the umask */
        return -errno;
    int r = eb_write_all(fd, f, sizeof(*f));
    if (r < 0)
        return r;
    char p[64], name[40];
    snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
    probe_name(f->key, (size_t)k, name);
    (void)unlinkat(dfd, name, 0);
    /* EEXIST: another process stored its equally fresh report in between. */
    if (linkat(AT_FDCWD, p, dfd, name, AT_SYMLINK_FOLLOW) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

int eb_probe_cache_sweep(const char *dir, double max_age)
{
    _cleanup_close_ int dfd = open_dir(dir);
    if (dfd < 0)
        return dfd;
    DIR *d = fdopendir(dup(dfd));
    if (!d)
        return -errno;
    int removed = 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, PROBE_FILE, strlen(PROBE_FILE)) != 0)
            continue;
        struct stat st;
        /* Ours and a regular file (never followed); too old to be trusted by anyone. */
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid() || (double)(now.tv_sec - st.st_mtim.tv_sec) <= max_age)
            continue;
        if (unlinkat(dfd, e->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
