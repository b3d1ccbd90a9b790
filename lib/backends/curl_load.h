/* SPDX-License-Identifier: MIT */
/* curl_load.h - libcurl, loaded on first use with dlopen. A program that links libexecbox but
 * never opens the docker backend (`execbox run` on the jail, say) then never loads libcurl and
 * its TLS stack, whose loading and constructors cost several milliseconds per process.
 * Include this instead of <curl/curl.h>: the curl_* calls below go through the loaded table. */
#ifndef EB_CURL_LOAD_H
#define EB_CURL_LOAD_H

#define CURL_DISABLE_TYPECHECK 1 /* its macros would shadow ours */
#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

struct eb_curl_api {
    CURLcode (*global_init)(long flags);
    void (*global_cleanup)(void);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *h);
    void (*easy_reset)(CURL *h);
    CURLcode (*easy_setopt)(CURL *h, CURLoption o, ...);
    CURLcode (*easy_getinfo)(CURL *h, CURLINFO i, ...);
    CURLcode (*easy_perform)(CURL *h);
    const char *(*easy_strerror)(CURLcode c);
    char *(*easy_escape)(CURL *h, const char *s, int len);
    void (*free)(void *p);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_cleanup)(CURLM *m);
    CURLMcode (*multi_add_handle)(CURLM *m, CURL *h);
    CURLMcode (*multi_remove_handle)(CURLM *m, CURL *h);
    CURLMcode (*multi_perform)(CURLM *m, int *running);
    CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd *extra, unsigned n, int ms, int *ret);
    CURLMsg *(*multi_info_read)(CURLM *m, int *left);
};

/* A bounded reply body, shared by the HTTP backends: eb_http_body_write (a curl write callback)
 * keeps at most max bytes, NUL-terminated, and stops the transfer (overflow set) past them. */
struct eb_http_body {
    char *data;
    size_t len;
    size_t max;
    bool overflow;
};
size_t eb_http_body_write(char *p, size_t size, size_t n, void *ud);

/* The "message" of a JSON error reply ({"message": ...}, as Docker and E2B send), else the raw
 * text, on one line (CR/LF become spaces, trailing blanks dropped); "" when there is no body. */
void eb_http_message(const struct eb_http_body *b, char *out, size_t size);

/* Loads libcurl once per process (thread-safe). The table, or NULL with *why saying what
 * failed. */
const struct eb_curl_api *eb_curl_load(const char **why);

/* The loaded table: only after eb_curl_load() succeeded. */
const struct eb_curl_api *eb_curl(void);

/* curl.h maps these two to its own variadic helpers without type checks: replace them. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init(f) (eb_curl()->global_init(f))
#define curl_global_cleanup() (eb_curl()->global_cleanup())
#define curl_easy_init() (eb_curl()->easy_init())
#define curl_easy_cleanup(h) (eb_curl()->easy_cleanup(h))
#define curl_easy_reset(h) (eb_curl()->easy_reset(h))
#define curl_easy_setopt(h, o, ...) (eb_curl()->easy_setopt((h), (o), __VA_ARGS__))
#define curl_easy_getinfo(h, i, ...) (eb_curl()->easy_getinfo((h), (i), __VA_ARGS__))
#define curl_easy_perform(h) (eb_curl()->easy_perform(h))
#define curl_easy_strerror(c) (eb_curl()->easy_strerror(c))
#define curl_easy_escape(h, s, n) (eb_curl()->easy_escape((h), (s), (n)))
#define curl_free(p) (eb_curl()->free(p))
#define curl_slist_append(l, s) (eb_curl()->slist_append((l), (s)))
#define curl_slist_free_all(l) (eb_curl()->slist_free_all(l))
#define curl_multi_init() (eb_curl()->multi_init())
#define curl_multi_cleanup(m) (eb_curl()->multi_cleanup(m))
#define curl_multi_add_handle(m, h) (eb_curl()->multi_add_handle((m), (h)))
#define curl_multi_remove_handle(m, h) (eb_curl()->multi_remove_handle((m), (h)))
#define curl_multi_perform(m, r) (eb_curl()->multi_perform((m), (r)))
#define curl_multi_poll(m, e, n, ms, r) (eb_curl()->multi_poll((m), (e), (n), (ms), (r)))
#define curl_multi_info_read(m, l) (eb_curl()->multi_info_read((m), (l)))

#endif
