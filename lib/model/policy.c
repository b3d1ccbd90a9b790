/* SPDX-License-Identifier: MIT */
/* policy.c - the security policy: defaults, parsing from text and JSON, comparison. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "model/hostrule.h"
#include "model/policy.h"

void execbox_policy_init(struct execbox_policy *p)
{
    memset(p, 0, sizeof(*p));
    eb_policy_resolve(p);
}

void eb_policy_resolve(struct execbox_policy *p)
{
    if (p->timeout <= 0)
        p->timeout = EXECBOX_DEFAULT_TIMEOUT;
    if (p->memory == 0)
        p->memory = EXECBOX_DEFAULT_MEMORY;
    if (p->cpus <= 0)
        p->cpus = EXECBOX_DEFAULT_CPUS;
    if (p->pids == 0)
        p->pids = EXECBOX_DEFAULT_PIDS;
    if (p->tmpfs == 0)
        p->tmpfs = EXECBOX_DEFAULT_TMPFS;
    if (p->workspace_size == 0)
        p->workspace_size = EXECBOX_DEFAULT_WORKSPACE_SIZE;
    if (p->output_limit == 0)
        p->output_limit = EXECBOX_DEFAULT_OUTPUT_LIMIT;
    if (p->file_size == 0)
        p->file_size = EXECBOX_DEFAULT_FILE_SIZE;
}

int execbox_parse_size(const char *s, uint64_t *ret_bytes, struct execbox_error *err)
{
    if (!s)
        return eb_error_set(err, -EINVAL, "size missing");
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p) && *p != '.')
        return eb_error_set(err, -EINVAL, "bad size '%s': expected a number such as 256M", s);
    errno = 0;
    char *end;
    double v = strtod(p, &end);
    if (errno || end == p || !isfinite(v) || v < 0)
        return eb_error_set(err, -EINVAL, "bad size '%s'", s);
    double mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        mul = 1024.0;
        end++;
        break;
    case 'M':
        mul = 1024.0 * 1024;
        end++;
        break;
    case 'G':
        mul = 1024.0 * 1024 * 1024;
        end++;
        break;
    case 'T':
        mul = 1024.0 * 1024 * 1024 * 1024;
        end++;
        break;
    case 'B': break;
    case '\0': break;
    default: return eb_error_set(err, -EINVAL, "bad size '%s': unknown unit (use K, M, G or T)", s);
    }
    if (mul > 1 && (end[0] == 'i' || end[0] == 'I') && (end[1] == 'B' || end[1] == 'b'))
        end += 2;
    else if (end[0] == 'B' || end[0] == 'b')
        end++;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return eb_error_set(err, -EINVAL, "bad size '%s': trailing '%s'", s, end);
    double bytes = v * mul;
    if (bytes > (double)EB_SIZE_MAX)
        return eb_error_set(err, -ERANGE, "size '%s' is too large", s);
    if (mul == 1 && v != floor(v))
        return eb_error_set(err, -EINVAL, "bad size '%s': a byte count must be whole", s);
    *ret_bytes = (uint64_t)llround(bytes);
    return 0;
}

/* A decimal number from text (the whole text, spaces after it allowed). */
static int parse_double(const char *key, const char *s, double *ret, struct execbox_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (end && isspace((unsigned char)*end))
        end++;
    if (!*s || errno || *end || !isfinite(v))
        return eb_error_set(err, -EINVAL, "%s: '%s' is not a number", key, s);
    *ret = v;
    return 0;
}

enum kind { K_SECONDS, K_SIZE, K_CPUS, K_COUNT, K_NETWORK, K_PATH, K_HOSTS, K_HOST, K_PORTS };

static const struct field {
    const char *name;
    enum kind kind;
    size_t off;
    uint64_t min;
} fields[] = {
    {"timeout", K_SECONDS, offsetof(struct execbox_policy, timeout), 0},
    {"memory", K_SIZE, offsetof(struct execbox_policy, memory), EB_MEMORY_MIN},
    {"cpus", K_CPUS, offsetof(struct execbox_policy, cpus), 0},
    {"pids", K_COUNT, offsetof(struct execbox_policy, pids), 1},
    {"network", K_NETWORK, offsetof(struct execbox_policy, network), 0},
    {"tmpfs", K_SIZE, offsetof(struct execbox_policy, tmpfs), 4096},
    {"workspace", K_PATH, offsetof(struct execbox_policy, workspace), 0},
    {"workspace_size", K_SIZE, offsetof(struct execbox_policy, workspace_size), 4096},
    {"output_limit", K_SIZE, offsetof(struct execbox_policy, output_limit), EB_OUTPUT_LIMIT_MIN},
    {"file_size", K_SIZE, offsetof(struct execbox_policy, file_size), 1},
    {"rootfs", K_PATH, offsetof(struct execbox_policy, rootfs), 0},
    {"allow_hosts", K_HOSTS, offsetof(struct execbox_policy, allow_hosts), 0},
    {"allow_host", K_HOST, offsetof(struct execbox_policy, allow_hosts), 0},
    {"allow_ports", K_PORTS, offsetof(struct execbox_policy, allow_ports), 0},
};

static const struct field *find_field(const char *key)
{
    char norm[32];
    size_t i = 0;
    for (; key[i] && i < sizeof(norm) - 1; i++)
        norm[i] = key[i] == '-' ? '_' : key[i];
    norm[i] = '\0';
    if (key[i])
        return NULL;
    for (size_t f = 0; f < ARRAY_SIZE(fields); f++)
        if (strcmp(fields[f].name, norm) == 0)
            return &fields[f];
    return NULL;
}

/* Appends one allow_hosts entry in its canonical form (a repeat is not added twice). */
static int add_host(struct execbox_policy *p, const char *entry, struct execbox_error *err)
{
    struct eb_host_rule rule;
    int r = eb_host_rule_parse(entry, &rule, err);
    if (r < 0)
        return r;
    char canon[EXECBOX_ALLOW_HOST_LEN];
    eb_host_rule_format(&rule, canon, sizeof(canon));
    size_t i = 0;
    for (; i < EXECBOX_ALLOW_HOSTS_MAX && p->allow_hosts[i][0]; i++)
        if (strcmp(p->allow_hosts[i], canon) == 0)
            return 0;
    if (i == EXECBOX_ALLOW_HOSTS_MAX)
        return eb_error_set(err, -E2BIG, "allow_hosts: more than %d entries",
                            EXECBOX_ALLOW_HOSTS_MAX);
    snprintf(p->allow_hosts[i], sizeof(p->allow_hosts[i]), "%s", canon);
    return 0;
}

/* Appends one allow_ports entry (a repeat is not added twice); shown is v as the caller wrote
 * it, for the message. */
static int add_port_number(struct execbox_policy *p, int64_t v, const char *shown,
                           struct execbox_error *err)
{
    if (v <= 0 || v > 65535)
        return eb_error_set(err, -EINVAL, "allow_ports: '%.16s' is not a port (1 to 65535)", shown);
    size_t i = 0;
    for (; i < EXECBOX_ALLOW_PORTS_MAX && p->allow_ports[i]; i++)
        if (p->allow_ports[i] == v)
            return 0;
    if (i == EXECBOX_ALLOW_PORTS_MAX)
        return eb_error_set(err, -E2BIG, "allow_ports: more than %d ports",
                            EXECBOX_ALLOW_PORTS_MAX);
    p->allow_ports[i] = (uint16_t)v;
    return 0;
}

static int add_port(struct execbox_policy *p, const char *text, struct execbox_error *err)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (!isdigit((unsigned char)text[0]) || errno || *end || v > 65535)
        return eb_error_set(err, -EINVAL, "allow_ports: '%.16s' is not a port (1 to 65535)", text);
    return add_port_number(p, (int64_t)v, text, err);
}

/* Calls fn for each item of a comma-separated list (spaces around items ignored). */
static int for_each_item(const char *list, struct execbox_policy *p,
                         int (*fn)(struct execbox_policy *, const char *, struct execbox_error *),
                         struct execbox_error *err)
{
    const char *s = list;
    while (*s) {
        while (*s == ' ' || *s == ',')
            s++;
        size_t n = strcspn(s, ", ");
        if (n == 0)
            break;
        char item[EXECBOX_ALLOW_HOST_LEN];
        if (n >= sizeof(item))
            return eb_error_set(err, -EINVAL, "'%.64s...' is too long", s);
        memcpy(item, s, n);
        item[n] = '\0';
        int r = fn(p, item, err);
        if (r < 0)
            return r;
        s += n;
    }
    return 0;
}

/* ---- the typed core: text, JSON and the typed setters all end in these two ---- */

/* Stores seconds (timeout) or cores (cpus) after the range check. shown is the value as the
 * caller wrote it, for the message. */
static int put_real(struct execbox_policy *p, const struct field *f, double v, const char *shown,
                    struct execbox_error *err)
{
    double min = f->kind == K_SECONDS ? EB_TIMEOUT_MIN : 0.01;
    double max = f->kind == K_SECONDS ? EB_TIMEOUT_MAX : EB_CPUS_MAX;
    if (!isfinite(v))
        return eb_error_set(err, -EINVAL, "%s: '%s' is not a number", f->name, shown);
    if (v < min || v > max) {
        eb_error_set(err, -EINVAL, "%s: %s is out of range (%g to %g)", f->name, shown, min, max);
        return eb_error_about(err, -EINVAL,
                              v > max ? EXECBOX_ERROR_OVER_MAXIMUM : EXECBOX_ERROR_INVALID_VALUE,
                              f->name);
    }
    *(double *)((char *)p + f->off) = v;
    return 0;
}

/* Stores a size in bytes or a count (pids) after its range check; shown as for put_real. */
static int put_uint(struct execbox_policy *p, const struct field *f, uint64_t v, const char *shown,
                    struct execbox_error *err)
{
    char *base = (char *)p;
    if (f->kind == K_SIZE) {
        if (v > EB_SIZE_MAX)
            return eb_error_set(err, -ERANGE, "%s: size '%s' is too large", f->name, shown);
        if (v < f->min)
            return eb_error_set(err, -EINVAL, "%s: '%s' is below the minimum of %" PRIu64 " bytes",
                                f->name, shown, f->min);
        if (f->off == offsetof(struct execbox_policy, output_limit) && v > EB_OUTPUT_LIMIT_MAX) {
            eb_error_set(err, -EINVAL, "output_limit: '%s' is above the maximum 1G", shown);
            return eb_error_about(err, -EINVAL, EXECBOX_ERROR_OVER_MAXIMUM, f->name);
        }
        *(uint64_t *)(base + f->off) = v;
        return 0;
    }
    if (v < f->min || v > EB_PIDS_MAX) {
        eb_error_set(err, -EINVAL, "%s: %s is out of range (1 to %u)", f->name, shown, EB_PIDS_MAX);
        return eb_error_about(
            err, -EINVAL,
            v > EB_PIDS_MAX ? EXECBOX_ERROR_OVER_MAXIMUM : EXECBOX_ERROR_INVALID_VALUE, f->name);
    }
    *(uint32_t *)(base + f->off) = (uint32_t)v;
    return 0;
}

/* Fields whose value is a number (a JSON number; text parsed as one). */
static bool is_number_kind(const struct field *f)
{
    return f->kind == K_SECONDS || f->kind == K_CPUS || f->kind == K_SIZE || f->kind == K_COUNT;
}

static int set_field_text(struct execbox_policy *p, const struct field *f, const char *value,
                          struct execbox_error *err)
{
    char *base = (char *)p;
    int r;
    switch (f->kind) {
    case K_SECONDS:
    case K_CPUS: {
        double v = 0;
        r = parse_double(f->name, value, &v, err);
        return r < 0 ? r : put_real(p, f, v, value, err);
    }
    case K_SIZE: {
        uint64_t v = 0;
        r = execbox_parse_size(value, &v, err);
        if (r < 0)
            return eb_error_prefix(err, r, "%s", f->name);
        return put_uint(p, f, v, value, err);
    }
    case K_COUNT: {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(value, &end, 10);
        if (!isdigit((unsigned char)value[0]) || errno || *end)
            return eb_error_set(err, -EINVAL, "%s: '%s' is not a whole number", f->name, value);
        return put_uint(p, f, v, value, err);
    }
    case K_NETWORK:
        if (strcmp(value, "none") == 0)
            p->network = EXECBOX_NETWORK_NONE;
        else if (strcmp(value, "allow") == 0)
            p->network = EXECBOX_NETWORK_ALLOW;
        else
            return eb_error_set(err, -EINVAL,
                                "network: '%.64s' is not one of 'none' (no network) or 'allow' "
                                "(the hosts of allow_hosts, through execbox's proxy)",
                                value);
        return 0;
    case K_HOST: return add_host(p, value, err);
    case K_HOSTS: {
        /* A comma-separated list replaces the whole list. */
        struct execbox_policy tmp = *p;
        memset(tmp.allow_hosts, 0, sizeof(tmp.allow_hosts));
        if ((r = for_each_item(value, &tmp, add_host, err)) < 0)
            return r;
        memcpy(p->allow_hosts, tmp.allow_hosts, sizeof(p->allow_hosts));
        return 0;
    }
    case K_PORTS: {
        struct execbox_policy tmp = *p;
        memset(tmp.allow_ports, 0, sizeof(tmp.allow_ports));
        if ((r = for_each_item(value, &tmp, add_port, err)) < 0)
            return r;
        memcpy(p->allow_ports, tmp.allow_ports, sizeof(p->allow_ports));
        return 0;
    }
    case K_PATH: {
        size_t n = strlen(value);
        if (n >= EXECBOX_PATH_MAX)
            return eb_error_set(err, -ENAMETOOLONG, "%s: path too long", f->name);
        if (n && value[0] != '/') {
            /* Relative paths are resolved now so that a policy means the same everywhere. */
            char *abs = realpath(value, NULL);
            if (!abs)
                return eb_error_set(err, -errno, "%s: '%s': %s", f->name, value,
                                    execbox_strerror(-errno));
            if (strlen(abs) >= EXECBOX_PATH_MAX) {
                free(abs);
                return eb_error_set(err, -ENAMETOOLONG, "%s: path too long", f->name);
            }
            memcpy(base + f->off, abs, strlen(abs) + 1); /* length checked just above */
            free(abs);
            return 0;
        }
        memcpy(base + f->off, value, n + 1);
        return 0;
    }
    }
    return -EINVAL;
}

/* Sets one field from its text; an error says which field, and whether the value was over
 * the maximum or otherwise invalid. */
static int set_field(struct execbox_policy *p, const struct field *f, const char *value,
                     struct execbox_error *err)
{
    int r = set_field_text(p, f, value, err);
    return r < 0 ? eb_error_about(err, r, EXECBOX_ERROR_INVALID_VALUE, f->name) : r;
}

/* The error for a field name that does not exist. */
static int unknown_field(const char *key, struct execbox_error *err)
{
    eb_error_set(err, -EINVAL, "unknown policy field '%s'", key);
    return eb_error_about(err, -EINVAL, EXECBOX_ERROR_UNKNOWN_FIELD, key);
}

int execbox_policy_set(struct execbox_policy *p, const char *key, const char *value,
                       struct execbox_error *err)
{
    if (!p || !key || !value)
        return eb_error_set(err, -EINVAL, "policy field or value missing");
    const struct field *f = find_field(key);
    if (!f)
        return unknown_field(key, err);
    return set_field(p, f, value, err);
}

int execbox_policy_merge_json(struct execbox_policy *p, const char *json, size_t len,
                              struct execbox_error *err)
{
    if (!json)
        return eb_error_set(err, -EINVAL, "policy JSON missing");
    if (len == 0)
        len = strlen(json);
    if (len > EB_POLICY_FILE_MAX)
        return eb_error_set(err, -EFBIG, "policy JSON larger than %u bytes", EB_POLICY_FILE_MAX);
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        /* In our words: the JSON library's own wording (and its option names) stays out. */
        enum json_error_code c = json_error_code(&je);
        eb_error_set(err, -EINVAL, "policy JSON: %s at line %d, column %d",
                     c == json_error_duplicate_key            ? "duplicate field"
                     : c == json_error_null_character         ? "a string holds a NUL character"
                     : c == json_error_invalid_utf8           ? "not valid UTF-8"
                     : c == json_error_stack_overflow         ? "nested too deeply"
                     : c == json_error_premature_end_of_input ? "it ends too early"
                                                              : "not valid JSON",
                     je.line, je.column);
        return eb_error_about(err, -EINVAL, EXECBOX_ERROR_MALFORMED, NULL);
    }
    int r = eb_policy_merge_object(p, root, err);
    json_decref(root);
    return r;
}

int eb_policy_merge_object(struct execbox_policy *p, const json_t *obj, struct execbox_error *err)
{
    if (!json_is_object(obj)) {
        eb_error_set(err, -EINVAL, "policy must be a JSON object");
        return eb_error_about(err, -EINVAL, EXECBOX_ERROR_MALFORMED, NULL);
    }
    struct execbox_policy tmp = *p;
    const char *key;
    json_t *v;
    json_object_foreach ((json_t *)obj, key, v) {
        int r = execbox_policy_set_json(&tmp, key, v, err);
        if (r < 0)
            return r;
    }
    *p = tmp;
    return 0;
}

/* The error for a value of a type the field does not take (as a JSON policy words it). */
static int wrong_type(const struct field *f, struct execbox_error *err)
{
    if (f->kind == K_HOSTS || f->kind == K_PORTS)
        return eb_error_set(err, -EINVAL, "%s: expected an array of %s", f->name,
                            f->kind == K_HOSTS ? "strings" : "port numbers");
    if (!is_number_kind(f))
        return eb_error_set(err, -EINVAL, "%s: expected a string", f->name);
    return eb_error_set(err, -EINVAL, "%s: expected a %s", f->name,
                        f->kind == K_SIZE ? "size (number of bytes or \"256M\")" : "number");
}

/* The typed setters without the field lookup and the error's field. */
static int set_int(struct execbox_policy *p, const struct field *f, int64_t v,
                   struct execbox_error *err)
{
    if (!is_number_kind(f))
        return wrong_type(f, err);
    char shown[32];
    snprintf(shown, sizeof(shown), "%" PRId64, v);
    if (v < 0)
        return eb_error_set(err, -EINVAL, "%s: %s is negative", f->name, shown);
    if (f->kind == K_SECONDS || f->kind == K_CPUS)
        return put_real(p, f, (double)v, shown, err);
    return put_uint(p, f, (uint64_t)v, shown, err);
}

static int set_real(struct execbox_policy *p, const struct field *f, double v,
                    struct execbox_error *err)
{
    if (!is_number_kind(f))
        return wrong_type(f, err);
    char shown[32];
    snprintf(shown, sizeof(shown), "%g", v);
    if (f->kind == K_SECONDS || f->kind == K_CPUS)
        return put_real(p, f, v, shown, err);
    if (!isfinite(v) || v != floor(v))
        return eb_error_set(err, -EINVAL, "%s: %s is not a whole number", f->name, shown);
    if (v < 0)
        return eb_error_set(err, -EINVAL, "%s: %s is negative", f->name, shown);
    /* 2^64 and above: past every maximum, which put_uint then names. */
    return put_uint(p, f, v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v, shown, err);
}

static int set_string(struct execbox_policy *p, const struct field *f, const char *v,
                      struct execbox_error *err)
{
    if (!v)
        return eb_error_set(err, -EINVAL, "%s: value missing", f->name);
    if (f->kind == K_SECONDS || f->kind == K_CPUS || f->kind == K_COUNT)
        return eb_error_set(err, -EINVAL, "%s: expected a number, got a string", f->name);
    return set_field_text(p, f, v, err);
}

/* A JSON array for allow_hosts (strings) or allow_ports (integers): replaces the list. */
static int set_json_list(struct execbox_policy *p, const struct field *f, const json_t *v,
                         struct execbox_error *err)
{
    struct execbox_policy tmp = *p;
    if (f->kind == K_HOSTS)
        memset(tmp.allow_hosts, 0, sizeof(tmp.allow_hosts));
    else
        memset(tmp.allow_ports, 0, sizeof(tmp.allow_ports));
    size_t i;
    json_t *item;
    json_array_foreach ((json_t *)v, i, item) {
        int r;
        if (f->kind == K_HOSTS && json_is_string(item)) {
            r = add_host(&tmp, json_string_value(item), err);
        } else if (f->kind == K_PORTS && json_is_integer(item)) {
            char shown[32];
            snprintf(shown, sizeof(shown), "%" JSON_INTEGER_FORMAT, json_integer_value(item));
            r = add_port_number(&tmp, json_integer_value(item), shown, err);
        } else {
            r = eb_error_set(err, -EINVAL, "%s: item %zu is not a %s", f->name, i,
                             f->kind == K_HOSTS ? "string" : "port number");
        }
        if (r < 0)
            return r;
    }
    *p = tmp;
    return 0;
}

/* One field from a JSON value, by its type: straight to the typed setters, no text between. */
static int set_json(struct execbox_policy *p, const struct field *f, const json_t *v,
                    struct execbox_error *err)
{
    switch (json_typeof(v)) {
    case JSON_STRING: return set_string(p, f, json_string_value(v), err);
    case JSON_INTEGER: return set_int(p, f, json_integer_value(v), err);
    case JSON_REAL: return set_real(p, f, json_real_value(v), err);
    case JSON_ARRAY:
        return f->kind == K_HOSTS || f->kind == K_PORTS ? set_json_list(p, f, v, err)
                                                        : wrong_type(f, err);
    case JSON_NULL:
        if (f->kind == K_PATH) {
            /* null is "unset", as execbox_policy_to_json writes it: the round trip must hold. */
            ((char *)p)[f->off] = '\0';
            return 0;
        }
        return wrong_type(f, err);
    default: return wrong_type(f, err);
    }
}

/* Looks key up and runs one typed setter on a copy of *p, kept only on success; the error names
 * the field. */
#define SET_TYPED(p, key, err, call)                                                               \
    do {                                                                                           \
        if (!(p) || !(key))                                                                        \
            return eb_error_set(err, -EINVAL, "policy field or value missing");                    \
        const struct field *f = find_field(key);                                                   \
        if (!f)                                                                                    \
            return unknown_field(key, err);                                                        \
        struct execbox_policy tmp = *(p);                                                          \
        int r_ = call;                                                                             \
        if (r_ < 0)                                                                                \
            return eb_error_about(err, r_, EXECBOX_ERROR_INVALID_VALUE, f->name);                  \
        *(p) = tmp;                                                                                \
        return 0;                                                                                  \
    } while (0)

int execbox_policy_set_int(struct execbox_policy *p, const char *key, int64_t value,
                           struct execbox_error *err)
{
    SET_TYPED(p, key, err, set_int(&tmp, f, value, err));
}

int execbox_policy_set_real(struct execbox_policy *p, const char *key, double value,
                            struct execbox_error *err)
{
    SET_TYPED(p, key, err, set_real(&tmp, f, value, err));
}

int execbox_policy_set_string(struct execbox_policy *p, const char *key, const char *value,
                              struct execbox_error *err)
{
    SET_TYPED(p, key, err, set_string(&tmp, f, value, err));
}

int execbox_policy_set_json(struct execbox_policy *p, const char *key, const struct json_t *value,
                            struct execbox_error *err)
{
    if (!value)
        return eb_error_set(err, -EINVAL, "policy field or value missing");
    SET_TYPED(p, key, err, set_json(&tmp, f, value, err));
}

int execbox_policy_load_file(struct execbox_policy *p, const char *path, struct execbox_error *err)
{
    _cleanup_free_ char *buf = NULL;
    size_t len;
    int r = eb_read_file(path, EB_POLICY_FILE_MAX, &buf, &len);
    if (r < 0)
        return eb_error_set(err, r, "policy file '%s': %s", path, execbox_strerror(r));
    r = execbox_policy_merge_json(p, buf, len, err);
    if (r < 0)
        return eb_error_prefix(err, r, "policy file '%s'", path);
    return 0;
}

/* The network part of execbox_policy_check_within: a per-call list only narrows. */
static int network_within(const struct execbox_policy *a, const struct execbox_policy *b,
                          struct execbox_error *err)
{
    if (a->network == EXECBOX_NETWORK_NONE)
        return 0;
    if (b->network == EXECBOX_NETWORK_NONE) {
        eb_error_set(err, -EPERM, "network 'allow' exceeds the host's 'none'");
        return eb_error_about(err, -EPERM, EXECBOX_ERROR_INVALID_VALUE, "network");
    }
    for (size_t i = 0; i < EXECBOX_ALLOW_HOSTS_MAX && a->allow_hosts[i][0]; i++) {
        struct eb_host_rule in;
        if (eb_host_rule_parse(a->allow_hosts[i], &in, err) < 0)
            return eb_error_prefix(err, -EINVAL, "allow_hosts");
        bool ok = false;
        for (size_t k = 0; !ok && k < EXECBOX_ALLOW_HOSTS_MAX && b->allow_hosts[k][0]; k++) {
            struct eb_host_rule out;
            ok = eb_host_rule_parse(b->allow_hosts[k], &out, NULL) == 0 &&
                 eb_host_rule_within(&in, a->allow_ports, &out, b->allow_ports);
        }
        if (!ok) {
            eb_error_set(err, -EPERM,
                         "allow_hosts '%.64s' (on its ports) is not within the host's allow-list",
                         a->allow_hosts[i]);
            return eb_error_about(err, -EPERM, EXECBOX_ERROR_INVALID_VALUE, "allow_hosts");
        }
    }
    return 0;
}

int execbox_policy_check_within(const struct execbox_policy *req, const struct execbox_policy *max,
                                struct execbox_error *err)
{
    struct execbox_policy a = *req, b = *max;
    eb_policy_resolve(&a);
    eb_policy_resolve(&b);
    if (a.timeout > b.timeout) {
        eb_error_set(err, -EPERM, "timeout %gs exceeds the maximum of %gs", a.timeout, b.timeout);
        return eb_error_about(err, -EPERM, EXECBOX_ERROR_OVER_MAXIMUM, "timeout");
    }
    if (a.cpus > b.cpus) {
        eb_error_set(err, -EPERM, "cpus %g exceeds the maximum of %g", a.cpus, b.cpus);
        return eb_error_about(err, -EPERM, EXECBOX_ERROR_OVER_MAXIMUM, "cpus");
    }
    if (a.pids > b.pids) {
        eb_error_set(err, -EPERM, "pids %u exceeds the maximum of %u", a.pids, b.pids);
        return eb_error_about(err, -EPERM, EXECBOX_ERROR_OVER_MAXIMUM, "pids");
    }
    static const struct {
        const char *name;
        size_t off;
    } sizes[] = {
        {"memory", offsetof(struct execbox_policy, memory)},
        {"tmpfs", offsetof(struct execbox_policy, tmpfs)},
        {"workspace_size", offsetof(struct execbox_policy, workspace_size)},
        {"output_limit", offsetof(struct execbox_policy, output_limit)},
        {"file_size", offsetof(struct execbox_policy, file_size)},
    };
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        uint64_t x = *(const uint64_t *)((const char *)&a + sizes[i].off);
        uint64_t y = *(const uint64_t *)((const char *)&b + sizes[i].off);
        if (x > y) {
            eb_error_set(err, -EPERM, "%s %" PRIu64 " exceeds the maximum of %" PRIu64,
                         sizes[i].name, x, y);
            return eb_error_about(err, -EPERM, EXECBOX_ERROR_OVER_MAXIMUM, sizes[i].name);
        }
    }
    if (strcmp(a.workspace, b.workspace) != 0) {
        eb_error_set(err, -EPERM, "workspace may not be changed from the host's setting");
        return eb_error_about(err, -EPERM, EXECBOX_ERROR_INVALID_VALUE, "workspace");
    }
    if (strcmp(a.rootfs, b.rootfs) != 0) {
        eb_error_set(err, -EPERM, "rootfs may not be changed from the host's setting");
        return eb_error_about(err, -EPERM, EXECBOX_ERROR_INVALID_VALUE, "rootfs");
    }
    return network_within(&a, &b, err);
}

void execbox_policy_cap(struct execbox_policy *p, const struct execbox_policy *max)
{
    struct execbox_policy b = *max;
    eb_policy_resolve(p);
    eb_policy_resolve(&b);
    if (p->timeout > b.timeout)
        p->timeout = b.timeout;
    if (p->cpus > b.cpus)
        p->cpus = b.cpus;
    if (p->pids > b.pids)
        p->pids = b.pids;
    static const size_t sizes[] = {
        offsetof(struct execbox_policy, memory),
        offsetof(struct execbox_policy, tmpfs),
        offsetof(struct execbox_policy, workspace_size),
        offsetof(struct execbox_policy, output_limit),
        offsetof(struct execbox_policy, file_size),
    };
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        uint64_t *x = (uint64_t *)((char *)p + sizes[i]);
        uint64_t y = *(const uint64_t *)((const char *)&b + sizes[i]);
        if (*x > y)
            *x = y;
    }
}

void execbox_policy_network_text(const struct execbox_policy *p, char *buf, size_t size)
{
    if (!buf || size == 0)
        return;
    if (!p || p->network != EXECBOX_NETWORK_ALLOW) {
        snprintf(buf, size, "There is no network access (no pip install, no downloads).");
        return;
    }
    size_t o = (size_t)snprintf(buf, size,
                                "Network: only HTTP and HTTPS, through a proxy (HTTP_PROXY and "
                                "HTTPS_PROXY are set; there is no DNS), to ");
    if (!p->allow_hosts[0][0] && o < size)
        o += (size_t)snprintf(buf + o, size - o, "no host at all");
    for (size_t i = 0; i < EXECBOX_ALLOW_HOSTS_MAX && p->allow_hosts[i][0] && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? ", " : "", p->allow_hosts[i]);
    if (o < size) {
        char ports[96] = "80, 443";
        size_t k = 0;
        for (size_t i = 0; i < EXECBOX_ALLOW_PORTS_MAX && p->allow_ports[i] && k < sizeof(ports);
             i++)
            k += (size_t)snprintf(ports + k, sizeof(ports) - k, "%s%u", i ? ", " : "",
                                  (unsigned)p->allow_ports[i]);
        snprintf(buf + o, size - o,
                 " (ports %s unless an entry names one); everything else is "
                 "refused.",
                 ports);
    }
}

json_t *eb_policy_to_object(const struct execbox_policy *in)
{
    struct execbox_policy p = *in;
    eb_policy_resolve(&p);
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "timeout", json_real(p.timeout));
    json_object_set_new(o, "memory", json_integer((json_int_t)p.memory));
    json_object_set_new(o, "cpus", json_real(p.cpus));
    json_object_set_new(o, "pids", json_integer(p.pids));
    json_object_set_new(o, "network",
                        json_string(p.network == EXECBOX_NETWORK_ALLOW ? "allow" : "none"));
    if (p.network == EXECBOX_NETWORK_ALLOW) {
        json_t *h = json_array();
        for (size_t i = 0; h && i < EXECBOX_ALLOW_HOSTS_MAX && p.allow_hosts[i][0]; i++)
            json_array_append_new(h, json_string(p.allow_hosts[i]));
        json_object_set_new(o, "allow_hosts", h);
        if (p.allow_ports[0]) { /* else the default, 80 and 443 */
            json_t *ports = json_array();
            for (size_t i = 0; ports && i < EXECBOX_ALLOW_PORTS_MAX && p.allow_ports[i]; i++)
                json_array_append_new(ports, json_integer(p.allow_ports[i]));
            json_object_set_new(o, "allow_ports", ports);
        }
    }
    json_object_set_new(o, "tmpfs", json_integer((json_int_t)p.tmpfs));
    json_object_set_new(o, "workspace", p.workspace[0] ? json_string(p.workspace) : json_null());
    json_object_set_new(o, "workspace_size", json_integer((json_int_t)p.workspace_size));
    json_object_set_new(o, "output_limit", json_integer((json_int_t)p.output_limit));
    json_object_set_new(o, "file_size", json_integer((json_int_t)p.file_size));
    json_object_set_new(o, "rootfs", p.rootfs[0] ? json_string(p.rootfs) : json_null());
    return o;
}

int execbox_policy_to_json(const struct execbox_policy *p, char **ret_json,
                           struct execbox_error *err)
{
    json_t *o = eb_policy_to_object(p);
    if (!o)
        return eb_error_set(err, -ENOMEM, "out of memory");
    char *s = json_dumps(o, JSON_SORT_KEYS | JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS));
    json_decref(o);
    if (!s)
        return eb_error_set(err, -ENOMEM, "out of memory");
    *ret_json = s;
    return 0;
}

/* The allow-list (network "allow" only: it means nothing otherwise): a warm sandbox's proxy
 * enforces the list of the policy it was made for, so only that list may take it. */
static bool allow_list_equal(const struct execbox_policy *a, const struct execbox_policy *b)
{
    if (a->network != EXECBOX_NETWORK_ALLOW)
        return true;
    for (size_t i = 0; i < EXECBOX_ALLOW_HOSTS_MAX; i++) {
        if (strcmp(a->allow_hosts[i], b->allow_hosts[i]) != 0)
            return false;
        if (!a->allow_hosts[i][0])
            break;
    }
    for (size_t i = 0; i < EXECBOX_ALLOW_PORTS_MAX; i++) {
        if (a->allow_ports[i] != b->allow_ports[i])
            return false;
        if (!a->allow_ports[i])
            break;
    }
    return true;
}

bool eb_policy_equal(const struct execbox_policy *a, const struct execbox_policy *b)
{
    return a->timeout == b->timeout && a->memory == b->memory && a->cpus == b->cpus &&
           a->pids == b->pids && a->network == b->network && a->tmpfs == b->tmpfs &&
           a->workspace_size == b->workspace_size && a->output_limit == b->output_limit &&
           a->file_size == b->file_size && strcmp(a->workspace, b->workspace) == 0 &&
           strcmp(a->rootfs, b->rootfs) == 0 && allow_list_equal(a, b);
}
