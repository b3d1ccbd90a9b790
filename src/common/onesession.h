/* SPDX-License-Identifier: MIT */
/* onesession.h - the one session a surface holds (`execbox mcp --stateful`, `execbox repl`):
 * opened lazily with the surface's options, a cell run in it, a new session started and the
 * cell run once more when the session turns out to be lost (expired or ended, as
 * errmap_session_lost says), the surface told why the earlier state was lost, and closed.
 * The surface words what it tells; this file only says what happened. Not thread-safe: one
 * caller at a time (MCP's cells take turns, the repl has one thread). */
#ifndef EBCLI_ONESESSION_H
#define EBCLI_ONESESSION_H

#include <stdbool.h>

#include "execbox/execbox.h"

/* Why the state of an earlier session was lost. */
enum onesession_why {
    ONESESSION_NOT_LOST = 0,
    ONESESSION_IDLE,         /* it expired after idle seconds without a cell */
    ONESESSION_LIFETIME,     /* it reached its maximum lifetime */
    ONESESSION_PROCESS,      /* its state process ended */
    ONESESSION_PREVIOUS,     /* it ended with the previous cell */
    ONESESSION_PREVIOUS_OOM, /* it ended with the previous cell, which ran out of memory */
};

struct onesession_lost {
    enum onesession_why why;
    double idle; /* ONESESSION_IDLE: the idle timeout, seconds */
};

/* The library calls the holder makes; NULL in onesession_init means the library's own. Tests
 * pass fakes. */
struct onesession_ops {
    int (*open)(struct execbox_executor *ex, const struct execbox_session_options *so,
                struct execbox_session **ret, struct execbox_error *err);
    int (*run)(struct execbox_session *s, const struct execbox_request *req,
               struct execbox_result **ret, struct execbox_error *err);
    void (*info)(struct execbox_session *s, struct execbox_session_info *ret);
    struct execbox_session *(*free)(struct execbox_session *s);
};

/* What the holder tells the surface while it runs a cell, in order. */
enum onesession_event {
    ONESESSION_FORGOTTEN, /* a lost session was just forgotten; lost says why */
    ONESESSION_STARTED,   /* a new session was just started */
    ONESESSION_ATTEMPT,   /* the cell is about to run (at most twice a cell); lost non-NULL the
                             first time after an earlier state was lost: the surface tells */
    ONESESSION_RAN,       /* the attempt returned */
};

struct onesession {
    const struct onesession_ops *ops;
    struct execbox_executor *ex;       /* borrowed */
    struct execbox_session_options so; /* so.policy borrowed */
    struct execbox_session *session;   /* NULL before the first cell and after a close */
    struct onesession_lost pending;    /* a loss not yet told (told by the next cell) */
    /* Told each event of onesession_run (lost NULL unless the event says otherwise); may be
     * NULL. Set by the surface after onesession_init. */
    void (*on_event)(void *ud, enum onesession_event ev, const struct onesession_lost *lost);
    void *ud;
};

/* Sets up h to hold sessions of ex with so (copied; so->policy borrowed, must outlive h).
 * ops NULL: the library's. Opens nothing. */
void onesession_init(struct onesession *h, struct execbox_executor *ex,
                     const struct execbox_session_options *so, const struct onesession_ops *ops);

/* Opens the session now if none is open. 0, or the library's error with err set. */
int onesession_open(struct onesession *h, struct execbox_error *err);

/* How one cell went, besides its result. */
struct onesession_cell {
    struct onesession_lost lost; /* why an earlier state was lost before this cell, if it was */
    bool start_failed;           /* the error is from starting a session, not from the cell */
    bool ended;                  /* the session ended with this cell (now forgotten); the next
                                    cell starts a new one and tells ONESESSION_PREVIOUS[_OOM] */
    bool oom;                    /* ended: the cell ran out of memory */
};

/* Runs one cell: a session that is no longer alive is forgotten first; one is opened when
 * none is; when the run says the session is lost (errmap_session_lost) on the first attempt,
 * it is forgotten and the cell runs once more in a new one. 0 with *ret_res (free with
 * execbox_result_free), or the error with err set (a failed start keeps a pending loss to be
 * told by the next cell). *ret_cell is written either way. */
int onesession_run(struct onesession *h, const struct execbox_request *req,
                   struct execbox_result **ret_res, struct onesession_cell *ret_cell,
                   struct execbox_error *err);

/* Ends the session, if any, and forgets any pending loss. True when one was open. Safe on a
 * zeroed holder that onesession_init never set up. */
bool onesession_close(struct onesession *h);

#endif
