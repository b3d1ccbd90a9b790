/* SPDX-License-Identifier: MIT */
/* sdscope.c - a delegated systemd scope for this process (see sdscope.h). libsystemd is loaded
 * with dlopen on first use only: a host without systemd, or a cgroup that is already ours, never
 * loads it (nor its compression and crypto libraries) into `execbox run`. */
#include "jail/sdscope.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"

#define SCOPE_WAIT_NS (5ULL * 1000000000ULL)

struct sd_api {
    int (*open_system)(sd_bus **ret);
    int (*open_user)(sd_bus **ret);
    int (*new_method_call)(sd_bus *bus, sd_bus_message **m, const char *destination,
                           const char *path, const char *interface, const char *member);
    int (*append)(sd_bus_message *m, const char *types, ...);
    int (*open_container)(sd_bus_message *m, char type, const char *contents);
    int (*close_container)(sd_bus_message *m);
    int (*call)(sd_bus *bus, sd_bus_message *m, uint64_t usec, sd_bus_error *ret_error,
                sd_bus_message **reply);
    sd_bus_message *(*message_unref)(sd_bus_message *m);
    sd_bus *(*flush_close_unref)(sd_bus *bus);
    void (*error_free)(sd_bus_error *e);
};

bool eb_systemd_running(void)
{
    return access("/run/systemd/system", F_OK) == 0;
}

static int load(struct sd_api *a, struct execbox_error *err)
{
    /* RTLD_LOCAL: libsystemd's symbols stay out of the host program's namespace. The handle is
     * never closed: the scope is made once per process. */
    void *h = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return eb_error_set(err, -ENOENT,
                            "libsystemd.so.0 could not be loaded (install libsystemd0): %s",
                            dlerror());
    static const struct {
        const char *name;
        size_t off;
    } syms[] = {
#define S(field, name) {name, offsetof(struct sd_api, field)}
        S(open_system, "sd_bus_open_system"),
        S(open_user, "sd_bus_open_user"),
        S(new_method_call, "sd_bus_message_new_method_call"),
        S(append, "sd_bus_message_append"),
        S(open_container, "sd_bus_message_open_container"),
        S(close_container, "sd_bus_message_close_container"),
        S(call, "sd_bus_call"),
        S(message_unref, "sd_bus_message_unref"),
        S(flush_close_unref, "sd_bus_flush_close_unref"),
        S(error_free, "sd_bus_error_free"),
#undef S
    };
    for (size_t i = 0; i < ARRAY_SIZE(syms); i++) {
        void *f = dlsym(h, syms[i].name);
        if (!f)
            return eb_error_set(err, -ENOSYS, "libsystemd.so.0 lacks %s (too old?)", syms[i].name);
        /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
        *(void **)((char *)a + syms[i].off) = f;
    }
    return 0;
}

/* Whether /proc/self/cgroup's unified line ends in "/unit". */
static bool in_unit(const char *unit)
{
    char *text = NULL;
    if (eb_read_file("/proc/self/cgroup", 1U << 16, &text, NULL) < 0)
        return false;
    bool yes = false;
    size_t n = strlen(unit);
    for (char *l = text; l && *l && !yes; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        if (strncmp(l, "0::", 3) != 0)
            continue;
        size_t len = strcspn(l, "\n");
        yes = len > n + 1 && l[len - n - 1] == '/' && strncmp(l + len - n, unit, n) == 0;
    }
    free(text);
    return yes;
}

/* One StartTransientUnit call: the scope with our pid in it, Delegate=yes, collected by systemd
 * once empty (or failed), so that nothing of it outlives this process. */
static int start_scope(const struct sd_api *a, const char *slice, const char *unit,
                       struct execbox_error *err)
{
    sd_bus *bus = NULL;
    sd_bus_message *m = NULL, *reply = NULL;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    bool root = geteuid() == 0;
    int r = root ? a->open_system(&bus) : a->open_user(&bus);
    if (r < 0) {
        eb_error_set(err, r, "connect to systemd's %s bus: %s", root ? "system" : "user",
                     execbox_strerror(r));
        goto out;
    }
    r = a->new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                           "org.freedesktop.systemd1.Manager", "StartTransientUnit");
    char desc[96];
    snprintf(desc, sizeof(desc), "execbox sandboxes of process %d", (int)getpid());
    if (r >= 0)
        r = a->append(m, "ss", unit, "fail");
    if (r >= 0)
        r = a->open_container(m, 'a', "(sv)");
    if (r >= 0)
        r = a->append(m, "(sv)(sv)(sv)(sv)", "Description", "s", desc, "PIDs", "au", 1,
                      (uint32_t)getpid(), "Delegate", "b", 1, "CollectMode", "s",
                      "inactive-or-failed");
    if (r >= 0 && slice && slice[0])
        r = a->append(m, "(sv)", "Slice", "s", slice);
    if (r >= 0)
        r = a->close_container(m);
    if (r >= 0) /* no auxiliary units */
        r = a->append(m, "a(sa(sv))", 0);
    if (r < 0) {
        eb_error_set(err, r, "build systemd's StartTransientUnit call: %s", execbox_strerror(r));
        goto out;
    }
    r = a->call(bus, m, 5ULL * 1000000ULL, &e, &reply);
    if (r < 0) {
        eb_error_set(err, r, "systemd refused the scope %s: %s%s%s", unit,
                     e.name ? e.name : execbox_strerror(r), e.message ? ": " : "",
                     e.message ? e.message : "");
        goto out;
    }
    /* The job moves us when it runs, which may be after the reply. */
    uint64_t end = eb_now_ns() + SCOPE_WAIT_NS;
    while (!in_unit(unit)) {
        if (eb_now_ns() >= end) {
            r = eb_error_set(err, -ETIMEDOUT,
                             "systemd started the scope %s but did not move execbox into it "
                             "within 5 s",
                             unit);
            goto out;
        }
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
    r = 0;
out:
    a->error_free(&e);
    if (reply)
        a->message_unref(reply);
    if (m)
        a->message_unref(m);
    if (bus)
        a->flush_close_unref(bus);
    return r;
}

static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;
static bool done;
static int done_r;
static struct execbox_error done_err;
static char done_unit[64];

int eb_systemd_scope(const char *slice, char *unit, size_t unit_len, struct execbox_error *err)
{
    pthread_mutex_lock(&once_lock);
    if (!done) {
        done = true;
        snprintf(done_unit, sizeof(done_unit), "execbox-%d.scope", (int)getpid());
        struct sd_api a;
        memset(&done_err, 0, sizeof(done_err));
        done_r = eb_systemd_running()
                     ? load(&a, &done_err)
                     : eb_error_set(&done_err, -ENOENT,
                                    "systemd does not run this host (/run/systemd/system absent)");
        if (done_r == 0)
            done_r = start_scope(&a, slice, done_unit, &done_err);
    }
    int r = done_r;
    if (r < 0 && err)
        *err = done_err;
    if (r == 0)
        snprintf(unit, unit_len, "%s", done_unit);
    pthread_mutex_unlock(&once_lock);
    return r;
}
