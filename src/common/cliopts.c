/* SPDX-License-Identifier: MIT */
/* cliopts.c - shared backend and policy flags. */
#include "cliopts.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"

void cli_sandbox_init(struct cli_sandbox *s)
{
    memset(s, 0, sizeof(*s));
}

void cli_error(const char *what, const struct execbox_error *err)
{
    fprintf(stderr, "execbox: %s: %s\n", what, err && err->msg[0] ? err->msg : "failed");
}

static int add_flag(struct cli_sandbox *s, const char *key, const char *value)
{
    if (s->n_flags >= CLI_MAX_POLICY_FLAGS) {
        fprintf(stderr, "execbox: too many policy flags\n");
        return -1;
    }
    /* Validate now so the error names the flag as typed. */
    struct execbox_policy scratch;
    execbox_policy_init(&scratch);
    struct execbox_error err = {0};
    if (execbox_policy_set(&scratch, key, value, &err) < 0) {
        fprintf(stderr, "execbox: --%s: %s\n", key, err.msg);
        return -1;
    }
    s->flags[s->n_flags].key = key;
    s->flags[s->n_flags].value = value;
    s->n_flags++;
    return 1;
}

int cli_sandbox_option(struct cli_sandbox *s, int opt, const char *arg)
{
    switch (opt) {
    case 'b': s->exec.backend = arg; return 1;
    case 't': return add_flag(s, "timeout", arg);
    case 'm': return add_flag(s, "memory", arg);
    case 'w': return add_flag(s, "workspace", arg);
    case CLI_OPT_CPUS: return add_flag(s, "cpus", arg);
    case CLI_OPT_PIDS: return add_flag(s, "pids", arg);
    case CLI_OPT_NETWORK: return add_flag(s, "network", arg);
    case CLI_OPT_ALLOW_HOST: return add_flag(s, "allow-host", arg);
    case CLI_OPT_OUTPUT_LIMIT: return add_flag(s, "output-limit", arg);
    case CLI_OPT_TMPFS: return add_flag(s, "tmpfs", arg);
    case CLI_OPT_FILE_SIZE: return add_flag(s, "file-size", arg);
    case CLI_OPT_WORKSPACE_SIZE: return add_flag(s, "workspace-size", arg);
    case CLI_OPT_ROOTFS: return add_flag(s, "rootfs", arg);
    case CLI_OPT_POLICY: s->policy_file = arg; return 1;
    case CLI_OPT_ALLOW_DEGRADED: s->exec.allow_degraded = true; return 1;
    case CLI_OPT_DOCKER_HOST: s->exec.docker_host = arg; return 1;
    case CLI_OPT_IMAGE: s->exec.docker_image = arg; return 1;
    case CLI_OPT_RUNTIME: s->exec.docker_runtime = arg; return 1;
    case CLI_OPT_REMOTE: s->exec.remote_urls = arg; return 1;
    case CLI_OPT_REMOTE_TOKEN: s->exec.remote_token = arg; return 1;
    case CLI_OPT_E2B_TEMPLATE: s->exec.e2b_template = arg; return 1;
    case CLI_OPT_GVISOR_PLATFORM: s->exec.gvisor_platform = arg; return 1;
    case CLI_OPT_PULL:
        if (strcmp(arg, "never") == 0)
            s->exec.docker_pull = 0;
        else if (strcmp(arg, "missing") == 0 || strcmp(arg, "if-missing") == 0)
            s->exec.docker_pull = 1;
        else {
            fprintf(stderr, "execbox: --pull: '%s' is not one of never, missing\n", arg);
            return -1;
        }
        return 1;
    case CLI_OPT_POOL: {
        char *end;
        unsigned long n = strtoul(arg, &end, 10);
        if (!*arg || *end || n > 64) {
            fprintf(stderr, "execbox: --pool: '%s' is not a whole number from 0 to 64\n", arg);
            return -1;
        }
        s->exec.pool_size = (unsigned)n;
        return 1;
    }
    case CLI_OPT_PRELOAD: s->exec.pool_preload = arg; return 1;
    case CLI_OPT_POOL_IDLE: {
        char *end;
        double v = strtod(arg, &end);
        if (!*arg || *end || !(v > 0) || v > 86400) {
            fprintf(stderr, "execbox: --pool-idle: '%s' is not a number of seconds (0 to 86400]\n",
                    arg);
            return -1;
        }
        s->exec.pool_idle = v;
        return 1;
    }
    case CLI_OPT_TEMPLATE_RUNS: {
        char *end;
        unsigned long n = strtoul(arg, &end, 10);
        if (!*arg || *end || n < 1 || n > 1000000) {
            fprintf(stderr,
                    "execbox: --template-runs: '%s' is not a whole number from 1 to 1000000\n",
                    arg);
            return -1;
        }
        s->exec.template_max_runs = (unsigned)n;
        return 1;
    }
    case CLI_OPT_TEMPLATE_AGE: {
        char *end;
        double v = strtod(arg, &end);
        if (!*arg || *end || !(v > 0) || v > 86400) {
            fprintf(stderr,
                    "execbox: --template-age: '%s' is not a number of seconds (0 to 86400]\n", arg);
            return -1;
        }
        s->exec.template_max_age = v;
        return 1;
    }
    case CLI_OPT_NO_TEMPLATES: s->exec.no_templates = true; return 1;
    default: return 0;
    }
}

/* A policy file's "tokens" taken out of its JSON (a path made relative to the file's directory)
 * and the rest merged by the library, which names any other field at fault. */
static int load_with_tokens(const char *path, json_t *doc, struct execbox_policy *ret,
                            char **ret_tokens)
{
    json_t *v = json_object_get(doc, "tokens");
    const char *t = json_string_value(v);
    if (!ret_tokens) {
        fprintf(stderr,
                "execbox: policy file '%s': tokens: only 'execbox serve' reads a tokens "
                "file\n",
                path);
        return -1;
    }
    if (!t || !*t || strlen(t) >= PATH_MAX || memchr(t, '\0', json_string_length(v))) {
        fprintf(stderr,
                "execbox: policy file '%s': tokens: must be the path of the tokens "
                "file, a string\n",
                path);
        return -1;
    }
    const char *slash = strrchr(path, '/');
    int dir = t[0] == '/' || !slash ? 0 : (int)(slash - path + 1);
    if (asprintf(ret_tokens, "%.*s%s", dir, path, t) < 0) {
        *ret_tokens = NULL;
        fprintf(stderr, "execbox: out of memory\n");
        return -1;
    }
    if (strlen(*ret_tokens) >= PATH_MAX) {
        fprintf(stderr, "execbox: policy file '%s': tokens: the path is too long\n", path);
        free(*ret_tokens);
        *ret_tokens = NULL;
        return -1;
    }
    json_object_del(doc, "tokens");
    /* The other fields straight from the parsed file, on a copy kept only when all are good. */
    struct execbox_policy tmp = *ret;
    struct execbox_error err = {0};
    const char *key;
    json_t *fv;
    json_object_foreach (doc, key, fv) {
        if (execbox_policy_set_json(&tmp, key, fv, &err) < 0) {
            fprintf(stderr, "execbox: policy file '%s': %s\n", path, err.msg);
            free(*ret_tokens);
            *ret_tokens = NULL;
            return -1;
        }
    }
    *ret = tmp;
    return 0;
}

/* The library's limit on a policy file (docs/policy.md: at most 1 MiB). */
#define CLI_POLICY_FILE_MAX (1U << 20)

/* The policy file into ret: through the library, unless its JSON names "tokens". */
static int load_policy_file(const char *path, struct execbox_policy *ret, char **ret_tokens)
{
    char *text = NULL;
    size_t len = 0;
    json_t *doc = NULL;
    int r = -1;
    /* A file that cannot be read or parsed here goes to the library, which says why. */
    if (strcmp(path, "-") != 0 && cli_read_path(path, CLI_POLICY_FILE_MAX, &text, &len) == 0)
        doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    if (json_is_object(doc) && json_object_get(doc, "tokens")) {
        r = load_with_tokens(path, doc, ret, ret_tokens);
    } else {
        struct execbox_error err = {0};
        r = execbox_policy_load_file(ret, path, &err);
        if (r < 0)
            fprintf(stderr, "execbox: %s\n", err.msg);
    }
    json_decref(doc);
    free(text);
    return r < 0 ? -1 : 0;
}

static int sandbox_policy(const struct cli_sandbox *s, struct execbox_policy *ret,
                          char **ret_tokens)
{
    struct execbox_error err = {0};
    execbox_policy_init(ret);
    if (s->policy_file && load_policy_file(s->policy_file, ret, ret_tokens) < 0)
        return -1;
    for (int i = 0; i < s->n_flags; i++)
        if (execbox_policy_set(ret, s->flags[i].key, s->flags[i].value, &err) < 0) {
            fprintf(stderr, "execbox: --%s: %s\n", s->flags[i].key, err.msg);
            return -1;
        }
    /* A missing or unfit workspace is refused now, not at each run of a long-lived server. */
    if (execbox_policy_check_host(ret, &err) < 0) {
        fprintf(stderr, "execbox: --%s: %s\n", err.field[0] ? err.field : "workspace", err.msg);
        return -1;
    }
    return 0;
}

int cli_sandbox_policy(const struct cli_sandbox *s, struct execbox_policy *ret)
{
    return sandbox_policy(s, ret, NULL);
}

int cli_sandbox_policy_tokens(const struct cli_sandbox *s, struct execbox_policy *ret,
                              char **ret_tokens)
{
    *ret_tokens = NULL;
    int r = sandbox_policy(s, ret, ret_tokens);
    if (r < 0) {
        free(*ret_tokens);
        *ret_tokens = NULL;
    }
    return r;
}

int cli_sandbox_executor(const struct cli_sandbox *s, struct execbox_executor **ret)
{
    struct execbox_error err = {0};
    if (execbox_executor_new(&s->exec, ret, &err) < 0) {
        fprintf(stderr, "execbox: %s\n", err.msg);
        return -1;
    }
    if (strcmp(execbox_executor_backend(*ret), "subprocess") == 0)
        fprintf(stderr, "execbox: warning: the 'subprocess' backend isolates nothing: the code "
                        "runs as you, on this host, with its files and network; use it only "
                        "for trusted code\n");
    return 0;
}
