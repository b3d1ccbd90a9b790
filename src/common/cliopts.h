/* SPDX-License-Identifier: MIT */
/* cliopts.h - the backend and policy flags shared by run, mcp, serve and agent. Layering:
 * defaults <- --policy FILE <- individual flags (whatever their order on the command line). */
#ifndef EBCLI_CLIOPTS_H
#define EBCLI_CLIOPTS_H

#include <getopt.h>
#include <stdbool.h>

#include "execbox/execbox.h"

enum {
    CLI_OPT_CPUS = 0x1000,
    CLI_OPT_PIDS,
    CLI_OPT_NETWORK,
    CLI_OPT_OUTPUT_LIMIT,
    CLI_OPT_TMPFS,
    CLI_OPT_FILE_SIZE,
    CLI_OPT_WORKSPACE_SIZE,
    CLI_OPT_ROOTFS,
    CLI_OPT_POLICY,
    CLI_OPT_ALLOW_DEGRADED,
    CLI_OPT_DOCKER_HOST,
    CLI_OPT_IMAGE,
    CLI_OPT_RUNTIME,
    CLI_OPT_PULL,
    CLI_OPT_POOL,
    CLI_OPT_PRELOAD,
    CLI_OPT_POOL_IDLE,
    CLI_OPT_REMOTE,
    CLI_OPT_REMOTE_TOKEN,
    CLI_OPT_E2B_TEMPLATE,
    CLI_OPT_ALLOW_HOST,
    CLI_OPT_GVISOR_PLATFORM,
    CLI_OPT_TEMPLATE_RUNS,
    CLI_OPT_TEMPLATE_AGE,
    CLI_OPT_NO_TEMPLATES,
    CLI_OPT__LAST,
};

/* Warm-pool flags, for the long-running surfaces (mcp, serve): handled by
 * cli_sandbox_option() like the others. */
#define CLI_POOL_LONGOPTS                                                                          \
    {"pool", required_argument, NULL, CLI_OPT_POOL},                                               \
        {"preload", required_argument, NULL, CLI_OPT_PRELOAD},                                     \
        {"pool-idle", required_argument, NULL, CLI_OPT_POOL_IDLE},                                 \
        {"template-runs", required_argument, NULL, CLI_OPT_TEMPLATE_RUNS},                         \
        {"template-age", required_argument, NULL, CLI_OPT_TEMPLATE_AGE},                           \
    {                                                                                              \
        "no-templates", no_argument, NULL, CLI_OPT_NO_TEMPLATES                                    \
    }

#define CLI_POOL_HELP                                                                              \
    "Warm pool (each sandbox still serves exactly one run):\n"                                     \
    "      --pool N             keep N sandboxes ready per policy and language (default 0)\n"      \
    "      --preload MODULES    import these ahead of time, e.g. numpy,pandas\n"                   \
    "      --pool-idle SECONDS  destroy warm sandboxes unused this long (default 300)\n"           \
    "      --template-runs N    replace a template after N runs (default 1000)\n"                  \
    "      --template-age SECONDS  ... or after this long (default 600)\n"                         \
    "      --no-templates       start each warm sandbox from nothing (no template)\n"

/* getopt_long entries; spliced into each command's table. */
#define CLI_SANDBOX_LONGOPTS                                                                       \
    {"backend", required_argument, NULL, 'b'}, {"timeout", required_argument, NULL, 't'},          \
        {"memory", required_argument, NULL, 'm'}, {"workspace", required_argument, NULL, 'w'},     \
        {"cpus", required_argument, NULL, CLI_OPT_CPUS},                                           \
        {"pids", required_argument, NULL, CLI_OPT_PIDS},                                           \
        {"network", required_argument, NULL, CLI_OPT_NETWORK},                                     \
        {"allow-host", required_argument, NULL, CLI_OPT_ALLOW_HOST},                               \
        {"output-limit", required_argument, NULL, CLI_OPT_OUTPUT_LIMIT},                           \
        {"tmpfs", required_argument, NULL, CLI_OPT_TMPFS},                                         \
        {"file-size", required_argument, NULL, CLI_OPT_FILE_SIZE},                                 \
        {"workspace-size", required_argument, NULL, CLI_OPT_WORKSPACE_SIZE},                       \
        {"rootfs", required_argument, NULL, CLI_OPT_ROOTFS},                                       \
        {"policy", required_argument, NULL, CLI_OPT_POLICY},                                       \
        {"allow-degraded", no_argument, NULL, CLI_OPT_ALLOW_DEGRADED},                             \
        {"docker-host", required_argument, NULL, CLI_OPT_DOCKER_HOST},                             \
        {"image", required_argument, NULL, CLI_OPT_IMAGE},                                         \
        {"runtime", required_argument, NULL, CLI_OPT_RUNTIME},                                     \
        {"remote", required_argument, NULL, CLI_OPT_REMOTE},                                       \
        {"remote-token", required_argument, NULL, CLI_OPT_REMOTE_TOKEN},                           \
        {"e2b-template", required_argument, NULL, CLI_OPT_E2B_TEMPLATE},                           \
        {"gvisor-platform", required_argument, NULL, CLI_OPT_GVISOR_PLATFORM},                     \
    {                                                                                              \
        "pull", required_argument, NULL, CLI_OPT_PULL                                              \
    }

/* Short options handled here: -b -t -m -w. */
#define CLI_SANDBOX_SHORTOPTS "b:t:m:w:"

/* Help text for the shared flags, in parts so that a command taking only some of them (repl)
 * lists exactly those. */
#define CLI_SANDBOX_HELP_LIMITS                                                                    \
    "  -t, --timeout SECONDS    wall-clock limit (default 10)\n"                                   \
    "  -m, --memory SIZE        memory cap, e.g. 256M, 1.5G (default 256M)\n"                      \
    "      --cpus N             CPU share, 1 = one core (default 1)\n"                             \
    "      --pids N             max processes and threads (default 64)\n"

#define CLI_SANDBOX_HELP_NETWORK                                                                   \
    "      --network none|allow no network (default), or only the --allow-host hosts\n"            \
    "      --allow-host ENTRY   with --network allow: a name, *.domain, address or CIDR,\n"        \
    "                           optionally :PORT (else ports 80, 443); repeatable\n"               \
    "  -w, --workspace DIR      host dir mounted read-write at /workspace (default: fresh)\n"

#define CLI_SANDBOX_HELP_FILES                                                                     \
    "      --workspace-size SIZE  cap of a fresh workspace (default 256M)\n"                       \
    "      --tmpfs SIZE         size of /tmp (default 64M)\n"                                      \
    "      --output-limit SIZE  bytes kept per stream (default 1M)\n"                              \
    "      --file-size SIZE     largest file the code may write (default 64M)\n"                   \
    "      --rootfs DIR         read-only root (default: the host's system dirs)\n"                \
    "      --policy FILE        JSON policy with the same field names; flags override it\n"        \
    "      --allow-degraded     jail: run even if a wall is missing (the result says which)\n"

#define CLI_SANDBOX_HELP                                                                           \
    "Sandbox options:\n"                                                                           \
    "  -b, --backend NAME       jail | subprocess | docker | remote | e2b | pyodide | gvisor "     \
    "(default: " EXECBOX_DEFAULT_BACKEND                                                           \
    ")\n" CLI_SANDBOX_HELP_LIMITS CLI_SANDBOX_HELP_NETWORK CLI_SANDBOX_HELP_FILES                  \
    "      --docker-host URL, --image NAME, --runtime NAME, --pull never|missing  (docker)\n"      \
    "      --remote URL[,URL...]  other `execbox serve` instances; --remote-token T (default\n"    \
    "                           $EXECBOX_REMOTE_TOKEN)  (remote)\n"                                \
    "      --e2b-template NAME  (e2b; E2B_API_KEY from the environment)\n"                         \
    "      --gvisor-platform ptrace|kvm|systrap  (gvisor; default ptrace)\n"

#define CLI_MAX_POLICY_FLAGS 64

struct cli_sandbox {
    struct execbox_executor_options exec;
    const char *policy_file;
    struct {
        const char *key;
        const char *value;
    } flags[CLI_MAX_POLICY_FLAGS];
    int n_flags;
};

void cli_sandbox_init(struct cli_sandbox *s);

/* Handles one getopt result. 1 if it was a sandbox option, 0 if not, -1 on a bad value
 * (message printed to stderr). */
int cli_sandbox_option(struct cli_sandbox *s, int opt, const char *arg);

/* Builds the policy: defaults, then the file, then the flags. -1 with a message on error. A
 * policy file's "tokens" field (serve's tenants file) is refused here: only serve reads it. */
int cli_sandbox_policy(const struct cli_sandbox *s, struct execbox_policy *ret);

/* As cli_sandbox_policy, for serve: a policy file may also name the tenants file with
 * "tokens": "PATH" (relative to the policy file's directory). *ret_tokens is that path
 * (malloc'd, the caller frees) or NULL when the file names none. */
int cli_sandbox_policy_tokens(const struct cli_sandbox *s, struct execbox_policy *ret,
                              char **ret_tokens);

/* Opens the executor and warns once when the backend isolates nothing. -1 with a message. */
int cli_sandbox_executor(const struct cli_sandbox *s, struct execbox_executor **ret);

/* Prints "execbox: <what>: <msg>" to stderr. */
void cli_error(const char *what, const struct execbox_error *err);

#endif
