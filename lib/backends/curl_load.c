/* SPDX-License-Identifier: MIT */
/* curl_load.c - libcurl loaded on first use (see curl_load.h). The table is written once,
 * under pthread_once, and only read after: no mutable global state. */
#include "backends/curl_load.h"

#include <dlfcn.h>
#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

size_t eb_http_body_write(char *p, size_t size, size_t n, void *ud)
{
    struct eb_http_body *b = ud;
    size_t len = size * n;
    if (b->len + len > b->max) {
        b->overflow = true;
        return 0; /* aborts the transfer: a reply this large is not one we expect */
    }
    char *d = realloc(b->data, b->len + len + 1);
    if (!d)
        return 0;
    memcpy(d + b->len, p, len);
    b->data = d;
    b->len += len;
    b->data[b->len] = '\0';
    return len;
}

void eb_http_message(const struct eb_http_body *b, char *out, size_t size)
{
    out[0] = '\0';
    if (!b->data)
        return;
    json_t *j = json_loadb(b->data, b->len, 0, NULL);
    const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
    snprintf(out, size, "%s", m ? m : b->data);
    json_decref(j);
    size_t k = 0;
    for (char *q = out; *q; q++, k++)
        if (*q == '\n' || *q == '\r')
            *q = ' ';
    while (k && out[k - 1] == ' ')
        out[--k] = '\0';
}
