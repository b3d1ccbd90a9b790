/* SPDX-License-Identifier: MIT */
/* outcome.h - how a run ended, as the supervision (eb_supervise, proc.h) or a backend of its
 * own saw it, and the mapping of that into the result's exit code, signal, kill reason and
 * error. */
#ifndef EB_PROC_OUTCOME_H
#define EB_PROC_OUTCOME_H

#include <stdbool.h>
#include <stdint.h>

#include "execbox/execbox.h"

/* How a run ended: init's report on the status pipe (proc.h's EB_MSG_*), what the supervision
 * did (the deadline, a cancel), and a backend's own word (a flood stopped at its source). */
struct eb_outcome {
    bool got_exit; /* an EB_MSG_EXIT (or EB_MSG_KEPT) arrived */
    bool kept;     /* it was EB_MSG_KEPT */
    int status;    /* its wait status */
    bool timed_out;
    bool cancelled;
    bool setup_failed; /* an EB_MSG_ERROR arrived */
    /* The backend stopped a flood of output at its source (an engine that stores every byte)
     * after flood_at bytes. */
    bool flooded;
    uint64_t flood_at;
    /* The flood was stopped by ending the stream and the sandbox with it rather than by a kill
     * the backend saw done (a remote sandbox): the message says "stopped", not "killed". */
    bool flood_stopped;
    struct execbox_error setup_err;
    int init_status;   /* init's own wait status */
    bool init_running; /* exit_msg_ends: init was not reaped yet (c->pidfd still valid) */
    bool done;         /* it was EB_MSG_DONE: the run's processes may still be exiting */
    int64_t utime_us, stime_us, maxrss_kb;
    /* The files the sandbox's /tmp and /dev/shm (tmpfs, within the memory cap) held when its
     * program ended, as its init measured them then (a jail's init, pid 1; else 0). */
    uint64_t tmp_bytes;
};

/* Turns an outcome into the result's exit_code, signal, timed_out, killed_reason, error and
 * times (cpu from the outcome when the backend has nothing better). */
int eb_outcome_to_result(const struct eb_outcome *o, const struct execbox_policy *p,
                         struct execbox_result *res);

#endif
