/* SPDX-License-Identifier: MIT */
/* tenants.c - the tenants file, token matching by SHA-256, and per-tenant quotas (tenants.h). */
#include "tenants.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/io.h"

#define HASH_LEN 32

struct entry {
    struct tenant t;
    unsigned char hash[HASH_LEN];
};

/* What a tenant holds, by name: kept across reloads. */
struct usage {
    char name[TENANT_NAME_MAX + 1];
    uint64_t runs, rejected;
    unsigned running;
};

struct tenants {
    pthread_mutex_t mu;
    char path[PATH_MAX]; /* "" for tenants_single */
    struct execbox_policy server;
    struct entry *e;
    size_t n;
    struct usage *u;
    size_t nu, cap_u;
};

static int fail(struct execbox_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct execbox_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

static int sha256(const void *data, size_t len, unsigned char out[HASH_LEN])
{
    return gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, out) < 0 ? -EIO : 0;
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > TENANT_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
            return false;
    return true;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* A token field: "sha256:" and 64 hex digits, or the token itself. */
static int token_hash(const char *tok, unsigned char out[HASH_LEN], const char **why)
{
    if (strncmp(tok, "sha256:", 7) == 0) {
        const char *h = tok + 7;
        if (strlen(h) != 2 * HASH_LEN) {
            *why = "a sha256: token needs 64 hex digits";
            return -EINVAL;
        }
        for (size_t i = 0; i < HASH_LEN; i++) {
            int a = hexval(h[2 * i]), b = hexval(h[2 * i + 1]);
            if (a < 0 || b < 0) {
                *why = "a sha256: token needs 64 hex digits";
                return -EINVAL;
            }
            out[i] = (unsigned char)(a << 4 | b);
        }
        return 0;
    }
    size_t n = strlen(tok);
    if (n < TENANT_TOKEN_MIN || n > TENANT_TOKEN_MAX) {
        *why = "a token is 16 to 256 characters (or sha256:HEX of one)";
        return -EINVAL;
    }
    return sha256(tok, n, out);
}

static int parse_uint(const char *v, unsigned *ret)
{
    char *end;
    errno = 0;
    unsigned long x = strtoul(v, &end, 10);
    if (errno || end == v || *end || x > 1000000 || v[0] == '-')
        return -EINVAL;
    *ret = (unsigned)x;
    return 0;
}

/* One tenant's line: NAME TOKEN [key=value ...]. */
static int parse_line(char *line, unsigned lineno, const struct execbox_policy *server,
                      struct entry *ret, struct execbox_error *err)
{
    char *save = NULL;
    char *name = strtok_r(line, " \t", &save), *tok = strtok_r(NULL, " \t", &save);
    if (!tok)
        return fail(err, -EINVAL, "line %u: expected a tenant name and a token", lineno);
    if (!name_ok(name))
        return fail(err, -EINVAL,
                    "line %u: the tenant name is 1 to %d letters, digits, '_', '-' or '.'", lineno,
                    TENANT_NAME_MAX);
    memset(ret, 0, sizeof(*ret));
    snprintf(ret->t.name, sizeof(ret->t.name), "%s", name);
    const char *why = NULL;
    if (token_hash(tok, ret->hash, &why) < 0)
        return fail(err, -EINVAL, "line %u: tenant %s: %s", lineno, name,
                    why ? why : "cannot hash the token");
    ret->t.ceiling = *server;
    for (char *kv; (kv = strtok_r(NULL, " \t", &save));) {
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv)
            return fail(err, -EINVAL, "line %u: tenant %s: '%.64s' is not key=value", lineno, name,
                        kv);
        *eq = '\0';
        const char *v = eq + 1;
        if (strcmp(kv, "max_sessions") == 0 || strcmp(kv, "max_runs") == 0) {
            unsigned *dst = kv[4] == 's' ? &ret->t.max_sessions : &ret->t.max_runs;
            if (parse_uint(v, dst) < 0)
                return fail(err, -EINVAL, "line %u: tenant %s: %s: expected a whole number", lineno,
                            name, kv);
            continue;
        }
        if (strcmp(kv, "workspace") == 0 || strcmp(kv, "rootfs") == 0)
            return fail(err, -EINVAL, "line %u: tenant %s: %s is the server's, not a tenant's",
                        lineno, name, kv);
        struct execbox_error perr = {0, ""};
        if (execbox_policy_set(&ret->t.ceiling, kv, v, &perr) < 0)
            return fail(err, -EINVAL, "line %u: tenant %s: %s", lineno, name, perr.msg);
    }
    struct execbox_error perr = {0, ""};
    if (execbox_policy_check_within(&ret->t.ceiling, server, &perr) < 0)
        return fail(err, -EINVAL, "line %u: tenant %s: above the server's own limits: %s", lineno,
                    name, perr.msg);
    return 0;
}

/* Reads the whole file (bounded) and parses every line into a new array. */
static int read_entries(const char *path, const struct execbox_policy *server, struct entry **ret,
                        size_t *ret_n, struct execbox_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return fail(err, -errno, "tokens file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, -EINVAL, "tokens file %s: not a regular file", path);
    }
    /* The file holds tokens: refuse one that others than its owner may read. */
    if (st.st_mode & 0077) {
        close(fd);
        return fail(err, -EPERM,
                    "tokens file %s: readable by others (mode %03o): chmod 600 it, it holds "
                    "tokens",
                    path, (unsigned)(st.st_mode & 0777));
    }
    char *buf = NULL;
    size_t len = 0;
    int rr = cli_read_fd(fd, TENANTS_FILE_MAX, &buf, &len);
    close(fd);
    if (rr == -EFBIG)
        return fail(err, rr, "tokens file %s: larger than %d bytes", path, TENANTS_FILE_MAX);
    if (rr < 0)
        return fail(err, rr, "tokens file %s: %s", path, strerror(-rr));
    if (memchr(buf, '\0', len)) {
        free(buf);
        return fail(err, -EINVAL, "tokens file %s: holds a NUL byte", path);
    }
    struct entry *e = calloc(TENANTS_MAX, sizeof(*e));
    if (!e) {
        free(buf);
        return fail(err, -ENOMEM, "out of memory");
    }
    size_t n = 0;
    unsigned lineno = 0;
    int r = 0;
    char *save = NULL;
    for (char *line = buf; line && r == 0; line = save) {
        lineno++;
        char *nl = strchr(line, '\n');
        save = nl ? nl + 1 : NULL;
        if (nl)
            *nl = '\0';
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *p = line;
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        size_t l = strlen(p);
        while (l && (p[l - 1] == ' ' || p[l - 1] == '\t' || p[l - 1] == '\r'))
            p[--l] = '\0';
        if (!*p)
            continue;
        if (n == TENANTS_MAX) {
            r = fail(err, -E2BIG, "line %u: more than %d tenants", lineno, TENANTS_MAX);
            break;
        }
        r = parse_line(p, lineno, server, &e[n], err);
        for (size_t i = 0; r == 0 && i < n; i++) {
            if (strcmp(e[i].t.name, e[n].t.name) == 0)
                r = fail(err, -EINVAL, "line %u: tenant %s is named twice", lineno, e[n].t.name);
            else if (memcmp(e[i].hash, e[n].hash, HASH_LEN) == 0)
                r = fail(err, -EINVAL, "line %u: tenant %s has the token of tenant %s", lineno,
                         e[n].t.name, e[i].t.name);
        }
        if (r == 0)
            n++;
    }
    free(buf);
    if (r == 0 && n == 0)
        r = fail(err, -EINVAL, "tokens file %s: names no tenant", path);
    if (r < 0) {
        explicit_bzero(e, TENANTS_MAX * sizeof(*e));
        free(e);
        return r;
    }
    *ret = e;
    *ret_n = n;
    return 0;
}

static struct tenants *alloc_tenants(const struct execbox_policy *server)
{
    struct tenants *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    pthread_mutex_init(&t->mu, NULL);
    t->server = *server;
    return t;
}

int tenants_load(const char *path, const struct execbox_policy *server, struct tenants **ret,
                 struct execbox_error *err)
{
    if (strlen(path) >= PATH_MAX)
        return fail(err, -ENAMETOOLONG, "tokens file path too long");
    struct tenants *t = alloc_tenants(server);
    if (!t)
        return fail(err, -ENOMEM, "out of memory");
    snprintf(t->path, sizeof(t->path), "%s", path);
    int r = read_entries(path, server, &t->e, &t->n, err);
    if (r < 0) {
        tenants_free(t);
        return r;
    }
    *ret = t;
    return 0;
}

int tenants_single(const char *token, const struct execbox_policy *server, struct tenants **ret,
                   struct execbox_error *err)
{
    struct tenants *t = alloc_tenants(server);
    if (t)
        t->e = calloc(1, sizeof(*t->e));
    if (!t || !t->e) {
        tenants_free(t);
        return fail(err, -ENOMEM, "out of memory");
    }
    t->n = 1;
    snprintf(t->e[0].t.name, sizeof(t->e[0].t.name), "default");
    t->e[0].t.ceiling = *server;
    if (sha256(token, strlen(token), t->e[0].hash) < 0) {
        tenants_free(t);
        return fail(err, -EIO, "cannot hash the token");
    }
    *ret = t;
    return 0;
}

int tenants_reload(struct tenants *t, struct execbox_error *err)
{
    if (!t->path[0])
        return fail(err, -ENOTSUP, "a single --token has no file to read again");
    struct entry *e = NULL;
    size_t n = 0;
    int r = read_entries(t->path, &t->server, &e, &n, err);
    if (r < 0)
        return r;
    pthread_mutex_lock(&t->mu);
    struct entry *old = t->e;
    t->e = e;
    t->n = n;
    pthread_mutex_unlock(&t->mu);
    explicit_bzero(old, TENANTS_MAX * sizeof(*old));
    free(old);
    return 0;
}

void tenants_free(struct tenants *t)
{
    if (!t)
        return;
    if (t->e)
        explicit_bzero(t->e, t->n * sizeof(*t->e));
    free(t->e);
    free(t->u);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

bool tenants_auth(struct tenants *t, const char *presented, struct tenant *ret)
{
    if (!presented)
        return false;
    size_t len = strlen(presented);
    if (len == 0 || len > TENANT_TOKEN_MAX)
        return false;
    unsigned char h[HASH_LEN];
    if (sha256(presented, len, h) < 0)
        return false;
    pthread_mutex_lock(&t->mu);
    /* Every tenant's hash is compared whole, whichever matches. */
    size_t found = SIZE_MAX;
    for (size_t i = 0; i < t->n; i++) {
        volatile unsigned char diff = 0;
        for (size_t k = 0; k < HASH_LEN; k++)
            diff |= (unsigned char)(h[k] ^ t->e[i].hash[k]);
        if (diff == 0)
            found = i;
    }
    if (found != SIZE_MAX)
        *ret = t->e[found].t;
    pthread_mutex_unlock(&t->mu);
    return found != SIZE_MAX;
}

/* The usage record of name, or NULL. Called with the lock held. */
static struct usage *usage_find(struct tenants *t, const char *name)
{
    for (size_t i = 0; i < t->nu; i++)
        if (strcmp(t->u[i].name, name) == 0)
            return &t->u[i];
    return NULL;
}

/* The usage record of name, made when new; NULL on no memory. Called with the lock held. */
static struct usage *usage_of(struct tenants *t, const char *name)
{
    struct usage *found = usage_find(t, name);
    if (found)
        return found;
    if (t->nu == t->cap_u) {
        size_t cap = t->cap_u ? t->cap_u * 2 : 16;
        struct usage *u = realloc(t->u, cap * sizeof(*u));
        if (!u)
            return NULL;
        t->u = u;
        t->cap_u = cap;
    }
    struct usage *u = &t->u[t->nu++];
    memset(u, 0, sizeof(*u));
    snprintf(u->name, sizeof(u->name), "%s", name);
    return u;
}

int tenants_run_begin(struct tenants *t, const struct tenant *who, const char **quota)
{
    pthread_mutex_lock(&t->mu);
    struct usage *u = usage_of(t, who->name);
    int r = 0;
    if (!u) {
        r = -ENOMEM;
    } else if (who->max_runs && u->running >= who->max_runs) {
        *quota = "max_runs";
        u->rejected++;
        r = -EDQUOT;
    } else {
        u->running++;
        u->runs++;
    }
    pthread_mutex_unlock(&t->mu);
    return r;
}

void tenants_run_end(struct tenants *t, const char *name)
{
    pthread_mutex_lock(&t->mu);
    struct usage *u = usage_find(t, name);
    if (u && u->running)
        u->running--;
    pthread_mutex_unlock(&t->mu);
}

void tenants_rejected(struct tenants *t, const char *name)
{
    pthread_mutex_lock(&t->mu);
    struct usage *u = usage_of(t, name);
    if (u)
        u->rejected++;
    pthread_mutex_unlock(&t->mu);
}

size_t tenants_stats(struct tenants *t, struct tenant_stats *ret, size_t n)
{
    size_t k = 0;
    pthread_mutex_lock(&t->mu);
    /* Every tenant of the file, then names that hold something but left the file. */
    for (size_t i = 0; i < t->n && k < n; i++) {
        const struct usage *u = usage_find(t, t->e[i].t.name);
        memset(&ret[k], 0, sizeof(ret[k]));
        snprintf(ret[k].name, sizeof(ret[k].name), "%s", t->e[i].t.name);
        if (u) {
            ret[k].runs = u->runs;
            ret[k].rejected = u->rejected;
            ret[k].running = u->running;
        }
        k++;
    }
    for (size_t i = 0; i < t->nu && k < n; i++) {
        bool listed = false;
        for (size_t j = 0; j < t->n && !listed; j++)
            listed = strcmp(t->e[j].t.name, t->u[i].name) == 0;
        if (listed)
            continue;
        memset(&ret[k], 0, sizeof(ret[k]));
        snprintf(ret[k].name, sizeof(ret[k].name), "%s", t->u[i].name);
        ret[k].runs = t->u[i].runs;
        ret[k].rejected = t->u[i].rejected;
        ret[k].running = t->u[i].running;
        k++;
    }
    pthread_mutex_unlock(&t->mu);
    return k;
}
