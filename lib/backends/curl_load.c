/* SPDX-License-Identifier: MIT */
/* curl_load.c - libcurl loaded on first use (see curl_load.h). The table is written once,
 * under pthread_once, and only read after: no mutable global state. */
#include "curl_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

static struct eb_curl_api api;
static const char *load_error;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    /* RTLD_LOCAL: libcurl's symbols stay out of the host program's namespace. */
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        load_error = "libcurl.so.4 could not be loaded (install libcurl4)";
        return;
    }
    static const struct {
        const char *name;
        size_t off;
    } syms[] = {
#define S(field, name) {name, offsetof(struct eb_curl_api, field)}
        S(global_init, "curl_global_init"),
        S(global_cleanup, "curl_global_cleanup"),
        S(easy_init, "curl_easy_init"),
        S(easy_cleanup, "curl_easy_cleanup"),
        S(easy_reset, "curl_easy_reset"),
        S(easy_setopt, "curl_easy_setopt"),
        S(easy_getinfo, "curl_easy_getinfo"),
        S(easy_perform, "curl_easy_perform"),
        S(easy_strerror, "curl_easy_strerror"),
        S(easy_escape, "curl_easy_escape"),
        S(free, "curl_free"),
        S(slist_append, "curl_slist_append"),
        S(slist_free_all, "curl_slist_free_all"),
        S(multi_init, "curl_multi_init"),
        S(multi_cleanup, "curl_multi_cleanup"),
        S(multi_add_handle, "curl_multi_add_handle"),
        S(multi_remove_handle, "curl_multi_remove_handle"),
        S(multi_perform, "curl_multi_perform"),
        S(multi_poll, "curl_multi_poll"),
        S(multi_info_read, "curl_multi_info_read"),
#undef S
    };
    struct eb_curl_api t;
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        void *f = dlsym(h, syms[i].name);
        if (!f) {
            load_error = "libcurl.so.4 lacks a function execbox needs (too old?)";
            dlclose(h);
            return;
        }
        /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
        *(void **)((char *)&t + syms[i].off) = f;
    }
    api = t;
}

const struct eb_curl_api *eb_curl_load(const char **why)
{
    pthread_once(&once, load);
    if (load_error) {
        if (why)
            *why = load_error;
        return NULL;
    }
    return &api;
}

const struct eb_curl_api *eb_curl(void)
{
    return &api;
}
