/* SPDX-License-Identifier: MIT */
/* check.c - `execbox check`: which walls work here, and the isolation tier that results. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "common/cliopts.h"
#include "execbox/execbox.h"

static void help(FILE *f)
{
    fprintf(f,
            "Usage: execbox check [-b BACKEND] [--all]\n\n"
            "Reports each isolation wall of a backend (default: %s): works, or missing and "
            "why.\nExit status 0 when the backend can run with every required wall, 1 "
            "otherwise.\n  -b, --backend NAME   the backend to check\n"
            "      --all            check every compiled-in backend\n"
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
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct execbox_executor_options o = {0};
    bool all = false;
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
        case 'h': help(stdout); return 0;
        default: help(stderr); return 2;
        }
    }
    if (!all)
        return report(o.backend, &o) == 0 ? 0 : 1;
    int worst = 0;
    for (const char *const *b = execbox_backends(); *b; b++) {
        int r = report(*b, &o);
        if (r != 0)
            worst = 1;
        if (b[1])
            printf("\n");
    }
    return worst;
}
