/* SPDX-License-Identifier: MIT */
/* check.c - `execbox check`: which walls work here, and the isolation tier that results. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "common/cliopts.h"
#include "execbox/execbox.h"

static void help(FILE *f)
{
    fprintf(f,
            "Usage: execbox check [-b BACKEND] [--all] [--preload MODULES]\n\n"
            "Reports each isolation wall of a backend (default: %s): works, or missing and "
            "why.\nExit status 0 when the backend can run with every required wall, 1 "
            "otherwise.\n  -b, --backend NAME   the backend to check\n"
            "      --all            check every compiled-in backend (firecracker, designed but\n"
            "                       not built, only with -b firecracker)\n"
            "      --preload MODULES   also start a Python template importing MODULES (comma-\n"
            "                       separated) and report its memory and a run forked from it\n"
            "      --docker-host URL, --image NAME, --runtime NAME   (docker)\n"
            "      --remote URL[,URL...], --remote-token T   (remote: probes each /v1/health)\n"
            "      --e2b-template NAME   (e2b)\n"
            "      --gvisor-platform NAME   (gvisor)\n",
            EXECBOX_DEFAULT_BACKEND);
}

static int report(const char *backend, const struct execbox_executor_options *o)
{
    struct execbox_check c;
    struct execbox_error err = {0};
    if (execbox_check_backend(backend, o, &c, &err) < 0) {
        cli_error("check", &err);
        return -1;
    }
    bool complete = c.usable;
    printf("backend %s\n", c.backend);
    for (size_t i = 0; i < c.n_walls; i++) {
        const struct execbox_wall *w = &c.walls[i];
        printf("  %-4s %-22s %s%s\n", w->ok ? "ok" : "MISS", w->name, w->detail,
               !w->ok && w->required ? " [required]" : "");
        if (!w->ok && w->required)
            complete = false;
    }
    printf("  tier: %s\n", c.tier);
    printf("  status: %s\n", !c.usable ? "unusable" : complete ? "ready" : "degraded");
    return complete ? 0 : 1;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Starts the template for (default policy, python, preload) the way serve --pool does, and
 * reports what it holds once (its cgroup's peak) and what one run forked from it costs. */
static int report_template(const struct execbox_executor_options *base, const char *preload)
{
    struct execbox_executor_options o = *base;
    o.pool_size = 1;
    o.pool_preload = preload;
    struct execbox_executor *ex = NULL;
    struct execbox_error err = {0};
    if (execbox_executor_new(&o, &ex, &err) < 0) {
        cli_error("check", &err);
        return -1;
    }
    int rc = -1;
    double t0 = now_s();
    if (execbox_executor_prewarm(ex, NULL, "python", &err) < 0) {
        cli_error("check", &err);
        goto out;
    }
    struct execbox_pool_stats st;
    for (;;) {
        execbox_executor_pool_stats(ex, &st);
        if (st.ready > 0)
            break;
        if (now_s() - t0 > 120) {
            fprintf(stderr, "execbox check: no template after 120 s (%llu warm starts failed)\n",
                    (unsigned long long)st.failed);
            goto out;
        }
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    double ready = now_s() - t0;
    struct execbox_request req = {.code = "pass", .language = "python"};
    struct execbox_result *res = NULL;
    if (execbox_executor_run(ex, &req, &res, &err) < 0) {
        cli_error("check", &err);
        goto out;
    }
    printf("template python [%s]\n", preload[0] ? preload : "no preload");
    if (st.templates)
        printf("  ready in %.2f s; holds %.1f MiB once (its cgroup's peak), shared by every run "
               "it forks\n",
               ready, (double)st.template_memory_bytes / (1 << 20));
    else
        printf("  none: the %s backend starts each warm sandbox from nothing (ready in %.2f s)\n",
               execbox_executor_backend(ex), ready);
    printf("  %s: exit %d in %.1f ms, %.1f MiB of its own (peak)\n",
           st.templates ? "a run forked from it" : "a warm run", res->exit_code,
           res->execution_time * 1e3, (double)res->peak_memory_bytes / (1 << 20));
    rc = res->exit_code == 0 ? 0 : -1;
    execbox_result_free(res);
out:
    execbox_executor_free(ex);
    return rc;
}

int cmd_check(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"backend", required_argument, NULL, 'b'},
        {"all", no_argument, NULL, 'a'},
        {"docker-host", required_argument, NULL, CLI_OPT_DOCKER_HOST},
        {"image", required_argument, NULL, CLI_OPT_IMAGE},
        {"runtime", required_argument, NULL, CLI_OPT_RUNTIME},
        {"remote", required_argument, NULL, CLI_OPT_REMOTE},
        {"remote-token", required_argument, NULL, CLI_OPT_REMOTE_TOKEN},
        {"e2b-template", required_argument, NULL, CLI_OPT_E2B_TEMPLATE},
        {"gvisor-platform", required_argument, NULL, CLI_OPT_GVISOR_PLATFORM},
        {"preload", required_argument, NULL, CLI_OPT_PRELOAD},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct execbox_executor_options o = {0};
    bool all = false;
    const char *preload = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "b:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': o.backend = optarg; break;
        case 'a': all = true; break;
        case CLI_OPT_DOCKER_HOST: o.docker_host = optarg; break;
        case CLI_OPT_IMAGE: o.docker_image = optarg; break;
        case CLI_OPT_RUNTIME: o.docker_runtime = optarg; break;
        case CLI_OPT_REMOTE: o.remote_urls = optarg; break;
        case CLI_OPT_REMOTE_TOKEN: o.remote_token = optarg; break;
        case CLI_OPT_E2B_TEMPLATE: o.e2b_template = optarg; break;
        case CLI_OPT_GVISOR_PLATFORM: o.gvisor_platform = optarg; break;
        case CLI_OPT_PRELOAD: preload = optarg; break;
        case 'h': help(stdout); return 0;
        default: help(stderr); return 2;
        }
    }
    if (!all) {
        int r = report(o.backend, &o);
        if (r == 0 && preload) {
            printf("\n");
            r = report_template(&o, preload);
        }
        return r == 0 ? 0 : 1;
    }
    int worst = 0;
    for (const char *const *b = execbox_backends(); *b; b++) {
        int r = report(*b, &o);
        if (r != 0)
            worst = 1;
        if (b[1])
            printf("\n");
    }
    printf("\n(firecracker: designed, not built; `execbox check -b firecracker` says what it "
           "would need here)\n");
    return worst;
}
