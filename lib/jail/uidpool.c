/* SPDX-License-Identifier: MIT */
/* uidpool.c - the host uids execbox owns, one a sandbox, allocated with OFD locks on one byte
 * each of a lock file (see uidpool.h). */
#include "jail/uidpool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"

#define ETC_FILE_MAX (16U << 20) /* /etc/passwd and friends: read at most this much */

struct eb_uid_pool {
    pthread_mutex_t lock;
    int fd;
    struct eb_uid_range r;
    uint32_t next;
    uint8_t *held; /* one bit a slot: this pool's own */
};

/* "BASE:COUNT", decimal or 0x hex, COUNT at least 1. */
static bool parse_range(const char *s, uint32_t *base, uint32_t *count)
{
    char *end;
    errno = 0;
    unsigned long long b = strtoull(s, &end, 0);
    if (errno || end == s || *end != ':')
        return false;
    const char *c = end + 1;
    unsigned long long n = strtoull(c, &end, 0);
    if (errno || end == c || (*end && *end != '\n'))
        return false;
    if (b > UINT32_MAX || n == 0 || n > EB_UIDS_MAX_COUNT)
        return false;
    *base = (uint32_t)b;
    *count = (uint32_t)n;
    return true;
}

/* The "execbox:BASE:COUNT" line of a subid file, if any. */
static bool subid_entry(const char *path, uint32_t *base, uint32_t *count)
{
    char *text = NULL;
    if (eb_read_file(path, ETC_FILE_MAX, &text, NULL) < 0)
        return false;
    bool found = false;
    for (char *line = text; line && *line && !found;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, "execbox:", 8) == 0)
            found = parse_range(line + 8, base, count);
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return found;
}

/* Field k (0-based) of a ':'-separated line, as a number; false when missing or not one. */
static bool field_num(const char *line, int k, unsigned long long *ret)
{
    const char *p = line;
    for (int i = 0; i < k; i++) {
        p = strchr(p, ':');
        if (!p)
            return false;
        p++;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno || end == p || (*end && *end != ':'))
        return false;
    *ret = v;
    return true;
}

/* Whether [a, a+an) and [b, b+bn) meet. */
static bool overlaps(unsigned long long a, unsigned long long an, unsigned long long b,
                     unsigned long long bn)
{
    return a < b + bn && b < a + an;
}

/* Refuses when a line of etc_dir/name overlaps r: an id in one of the n_fields fields id_fields
 * (passwd: uid and gid; group: gid), or (subid files: id_fields NULL) another owner's range. One
 * read of the file for all its fields. A missing file has no lines. */
static int check_file(const struct eb_uid_range *r, const char *etc_dir, const char *name,
                      const int *id_fields, size_t n_fields, struct execbox_error *err)
{
    char path[512], *text = NULL;
    snprintf(path, sizeof(path), "%s/%s", etc_dir, name);
    int rr = eb_read_file(path, ETC_FILE_MAX, &text, NULL);
    if (rr == -ENOENT)
        return 0;
    if (rr < 0)
        return eb_error_set(err, rr, "read %s to check the sandbox uid range: %s", path,
                            execbox_strerror(rr));
    int ret = 0;
    for (char *line = text; line && *line && ret == 0;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        unsigned long long id = 0, n = 1;
        bool hit = false;
        for (size_t f = 0; id_fields && f < n_fields && !hit; f++)
            hit = field_num(line, id_fields[f], &id) && overlaps(r->base, r->count, id, 1);
        if (!id_fields && strncmp(line, "execbox:", 8) != 0 && field_num(line, 1, &id) &&
            field_num(line, 2, &n))
            hit = overlaps(r->base, r->count, id, n);
        if (hit) {
            char who[64];
            const char *colon = strchr(line, ':');
            size_t len = colon ? (size_t)(colon - line) : strlen(line);
            snprintf(who, sizeof(who), "%.*s", (int)(len < 48 ? len : 48), line);
            ret = eb_error_set(err, -EINVAL,
                               "the sandbox uid range %u-%u (%s) overlaps '%s' in %s (id %llu%s): "
                               "set EXECBOX_JAIL_UIDS=BASE:COUNT or an execbox line in "
                               "/etc/subuid to a range no one else uses",
                               r->base, (unsigned)(r->base + r->count - 1), r->source, who, path,
                               id, id_fields ? "" : ", a subordinate range");
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return ret;
}

int eb_uid_range_check(const struct eb_uid_range *r, const char *etc_dir, struct execbox_error *err)
{
    unsigned long long end = (unsigned long long)r->base + r->count;
    if (r->count == 0 || r->count > EB_UIDS_MAX_COUNT || end > 0xffffffffULL)
        return eb_error_set(err, -EINVAL,
                            "the sandbox uid range %u+%u (%s) is empty, too large "
                            "or wraps",
                            r->base, r->count, r->source);
    if (r->base == 0 || overlaps(r->base, r->count, 65534, 1))
        return eb_error_set(err, -EINVAL, "the sandbox uid range %u-%llu (%s) holds root or nobody",
                            r->base, end - 1, r->source);
    static const int passwd_ids[] = {2, 3}, group_ids[] = {2};
    int rr;
    if ((rr = check_file(r, etc_dir, "passwd", passwd_ids, ARRAY_SIZE(passwd_ids), err)) < 0 ||
        (rr = check_file(r, etc_dir, "group", group_ids, ARRAY_SIZE(group_ids), err)) < 0 ||
        (rr = check_file(r, etc_dir, "subuid", NULL, 0, err)) < 0 ||
        (rr = check_file(r, etc_dir, "subgid", NULL, 0, err)) < 0)
        return rr;
    return 0;
}

int eb_uid_range_load(struct eb_uid_range *ret, struct execbox_error *err)
{
    struct eb_uid_range r = {.base = EB_UIDS_DEFAULT_BASE, .count = EB_UIDS_DEFAULT_COUNT};
    snprintf(r.source, sizeof(r.source), "default");
    const char *env = secure_getenv("EXECBOX_JAIL_UIDS");
    uint32_t b, n, gb, gn;
    if (env && *env) {
        if (!parse_range(env, &r.base, &r.count))
            return eb_error_set(err, -EINVAL,
                                "EXECBOX_JAIL_UIDS='%.64s': want BASE:COUNT (COUNT 1..%u)", env,
                                EB_UIDS_MAX_COUNT);
        snprintf(r.source, sizeof(r.source), "EXECBOX_JAIL_UIDS");
    } else if (subid_entry("/etc/subuid", &b, &n)) {
        /* gids are the same numbers as uids: a subgid line, if any, must say the same. */
        if (subid_entry("/etc/subgid", &gb, &gn) && (gb != b || gn != n))
            return eb_error_set(err, -EINVAL,
                                "the execbox lines of /etc/subuid (%u:%u) and /etc/subgid "
                                "(%u:%u) differ: a sandbox's gid is its uid's number",
                                b, n, gb, gn);
        r.base = b;
        r.count = n;
        snprintf(r.source, sizeof(r.source), "/etc/subuid");
    }
    int rr = eb_uid_range_check(&r, "/etc", err);
    if (rr < 0)
        return rr;
    *ret = r;
    return 0;
}

int eb_uid_pool_open(const char *path, const struct eb_uid_range *r, struct eb_uid_pool **ret,
                     struct execbox_error *err)
{
    /* O_NOFOLLOW and the checks below: a file someone else planted is never locked or
     * trusted (only root may write where it lives, but say so if not). */
    _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return eb_error_set(err, -errno, "open the uid slots' lock file %s: %s", path,
                            execbox_strerror(-errno));
    struct stat st;
    if (fstat(fd, &st) < 0)
        return eb_error_set(err, -errno, "stat %s: %s", path, execbox_strerror(-errno));
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1 || (st.st_mode & 0022))
        return eb_error_set(err, -EPERM,
                            "the uid slots' lock file %s is not a regular file of ours that only "
                            "we may write",
                            path);
    struct eb_uid_pool *p = calloc(1, sizeof(*p));
    if (!p || !(p->held = calloc((r->count + 7) / 8, 1))) {
        free(p);
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    pthread_mutex_init(&p->lock, NULL);
    p->r = *r;
    /* A random first slot: two processes starting together rarely try the same ones. */
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
        rnd = (uint32_t)getpid() * 2654435761U;
    p->next = rnd % r->count;
    p->fd = TAKE_FD(fd);
    *ret = p;
    return 0;
}

void eb_uid_pool_free(struct eb_uid_pool *p)
{
    if (!p)
        return;
    eb_close(&p->fd); /* drops every lock this pool still held */
    pthread_mutex_destroy(&p->lock);
    free(p->held);
    free(p);
}

static bool held(const struct eb_uid_pool *p, uint32_t i)
{
    return p->held[i / 8] & (1U << (i % 8));
}

int eb_uid_pool_take(struct eb_uid_pool *p, uint32_t *ret_slot, uint32_t *ret_id,
                     struct execbox_error *err)
{
    pthread_mutex_lock(&p->lock);
    int r = -EAGAIN;
    for (uint32_t k = 0; k < p->r.count; k++) {
        uint32_t i = (p->next + k) % p->r.count;
        if (held(p, i))
            continue;
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = i, .l_len = 1};
        if (fcntl(p->fd, F_OFD_SETLK, &fl) == 0) {
            p->held[i / 8] |= (uint8_t)(1U << (i % 8));
            p->next = (i + 1) % p->r.count;
            *ret_slot = i;
            *ret_id = p->r.base + i;
            r = 0;
            break;
        }
        if (errno != EAGAIN && errno != EACCES && errno != EINTR) {
            r = eb_error_set(err, -errno, "lock a uid slot: %s", execbox_strerror(-errno));
            break;
        }
    }
    pthread_mutex_unlock(&p->lock);
    if (r == -EAGAIN)
        eb_error_set(err, r, "every one of the %u sandbox uids (%u-%u, %s) is in use", p->r.count,
                     p->r.base, (unsigned)(p->r.base + p->r.count - 1), p->r.source);
    return r;
}

void eb_uid_pool_put(struct eb_uid_pool *p, uint32_t slot)
{
    if (!p || slot >= p->r.count)
        return;
    pthread_mutex_lock(&p->lock);
    if (held(p, slot)) {
        struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = slot, .l_len = 1};
        (void)fcntl(p->fd, F_OFD_SETLK, &fl);
        p->held[slot / 8] &= (uint8_t) ~(1U << (slot % 8));
    }
    pthread_mutex_unlock(&p->lock);
}
