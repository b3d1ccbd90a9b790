/* SPDX-License-Identifier: MIT */
/* proxyrun.c - a run's network "allow" wiring (proxyrun.h). */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "jail/netns.h"
#include "jail/proxyrun.h"

/* The proxy's address, as the guest's HTTP clients look for it (curl, pip, requests, node's
 * undici with a global agent read one case or the other). NO_PROXY empty: loopback inside is
 * the sandbox's own and needs no exception. */
int eb_proxy_env(struct eb_env *env)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", EB_PROXY_PORT);
    static const char *const names[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"};
    int r = 0;
    for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(names); i++)
        r = eb_env_add(env, names[i], url);
    if (r >= 0)
        r = eb_env_add(env, "NO_PROXY", "");
    if (r >= 0)
        r = eb_env_add(env, "no_proxy", "");
    /* Node's own fetch() reads the variables above only when told to (Node 24 on). */
    if (r >= 0)
        r = eb_env_add(env, "NODE_USE_ENV_PROXY", "1");
    return r;
}

int eb_proxy_run(bool root_mode, const struct execbox_policy *policy, int netns_fd, int *ret_ns,
                 struct eb_proxy **ret, struct execbox_error *err)
{
    if (!root_mode)
        return eb_error_set(err, -ENOTSUP,
                            "network 'allow' needs the jail to run as root (the proxy's socket "
                            "is made in the sandbox's network namespace from the host side)");
    char why[160];
    int lfd = -1;
    int r = eb_netns_proxy_listen(netns_fd, EB_PROXY_PORT, ret_ns, &lfd, why, sizeof(why));
    if (r < 0)
        return eb_error_set(err, r, "network proxy: %s", why);
    r = eb_proxy_start(policy, lfd, ret, err);
    if (r < 0 && *ret_ns != netns_fd)
        close(*ret_ns);
    return r;
}
