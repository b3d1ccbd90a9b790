/* SPDX-License-Identifier: MIT */
/* lifecycle.c - starting a backend's sandbox (cold, or forked from a template) and destroying
 * it. */
#include "core/lifecycle.h"

#include <errno.h>
#include <string.h>

#include "base/error.h"
#include "core/template.h"
#include "model/result.h"

/* The backend's start of st, from the template ret->tpl holds (NULL: none); on failure the
 * template reference is dropped, and the template retired when it is found dead. */
static int start_box(const struct eb_lifecycle *lc, struct eb_start *st, struct eb_lease *ret,
                     struct execbox_error *err)
{
    st->tpl = ret->tpl ? eb_template_box(ret->tpl) : NULL;
    int r = lc->ops->start(lc->state, st, &ret->box, err);
    if (r < 0) {
        /* The backend's contract (backend.h): -ENOTSUP from start is "never this kind of start
         * for this policy"; read here once, and named. */
        ret->never = r == -ENOTSUP;
        ret->box = NULL;
        /* A template that died or fell out of step forks no more (a fork the policy does not
         * allow, say with pids 1, leaves it as it is). */
        if (ret->tpl && lc->ops->template_alive &&
            !lc->ops->template_alive(eb_template_box(ret->tpl)))
            eb_template_retire(lc->tpls, ret->tpl);
        if (ret->tpl)
            eb_template_release(lc->tpls, ret->tpl);
        ret->tpl = NULL;
    }
    return r;
}

/* An empty lease in *ret, and the start s with its preload defaulted. */
static struct eb_start lease_init(const struct eb_start *s, struct eb_lease *ret)
{
    struct eb_start st = *s;
    ret->box = NULL;
    ret->tpl = NULL;
    ret->never = false;
    if (!st.preload)
        st.preload = "";
    return st;
}

int eb_lease_start(const struct eb_lifecycle *lc, const struct eb_start *s, struct eb_lease *ret,
                   struct execbox_error *err)
{
    struct eb_start st = lease_init(s, ret);
    if (!st.run && !lc->ops->warm) {
        ret->never = true;
        return eb_error_set(err, -ENOTSUP, "the %s backend has no warm starts", lc->ops->name);
    }
    if (!st.run && lc->tpls && st.lang->template_bootstrap) {
        struct execbox_error terr = {0, ""};
        bool none = false;
        ret->tpl = eb_template_acquire(lc->tpls, st.policy, st.lang, st.preload, &none, &terr);
        if (!ret->tpl && !none) {
            if (err)
                *err = terr;
            return terr.code < 0 ? terr.code : -EIO;
        }
        /* none: there can be no template for this policy here; the backend's own warm start
         * says whether it can start one from nothing. */
    }
    return start_box(lc, &st, ret, err);
}

int eb_lease_fork(const struct eb_lifecycle *lc, const struct eb_start *s, struct eb_lease *ret,
                  struct execbox_error *err)
{
    struct eb_start st = lease_init(s, ret);
    if (st.run || !lc->ops->warm || !lc->tpls || !st.lang->template_bootstrap ||
        !(ret->tpl = eb_template_find(lc->tpls, st.policy, st.lang, st.preload)))
        return eb_error_set(err, -ENOENT, "no live template for this run");
    return start_box(lc, &st, ret, err);
}

void eb_lease_end(const struct eb_lifecycle *lc, struct eb_lease *sb)
{
    if (sb->box)
        lc->ops->destroy(lc->state, sb->box);
    if (sb->tpl)
        eb_template_release(lc->tpls, sb->tpl);
    sb->box = NULL;
    sb->tpl = NULL;
}

int eb_lifecycle_add_degraded(const struct eb_lifecycle *lc, struct execbox_result *res)
{
    if (lc->degraded)
        for (size_t i = 0; i < lc->report->n_walls; i++)
            if (!lc->report->walls[i].ok && lc->report->walls[i].required &&
                eb_result_add_degraded(res, lc->report->walls[i].name) < 0)
                return -ENOMEM;
    return 0;
}
