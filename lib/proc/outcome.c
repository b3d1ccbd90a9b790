/* SPDX-License-Identifier: MIT */
/* outcome.c - how a run ended (struct eb_outcome, as the supervision or a backend saw it) into
 * the result: the exit code and signal, a timeout, cancel, flood or CPU limit as the run's error,
 * a failed set-up or a lost init as a SandboxError (see outcome.h). */
#include "proc/outcome.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "model/result.h"

/* The unit after t as "%g" prints it: "1 second", "0.5 seconds", "2 seconds". */
static const char *seconds_word(double t)
{
    char s[32];
    snprintf(s, sizeof(s), "%g", t);
    return strcmp(s, "1") == 0 ? "second" : "seconds";
}

int eb_outcome_to_result(const struct eb_outcome *o, const struct execbox_policy *p,
                         struct execbox_result *res)
{
    char msg[320];
    if (o->got_exit) {
        res->cpu_time = (double)(o->utime_us + o->stime_us) / 1e6;
        res->peak_memory_bytes = (uint64_t)o->maxrss_kb * 1024;
    }
    if (o->timed_out) {
        res->timed_out = true;
        res->exit_code = 124;
        res->killed_reason = EXECBOX_KILLED_TIMEOUT;
        snprintf(msg, sizeof(msg), "execution exceeded the time limit of %g %s and was killed",
                 p->timeout, seconds_word(p->timeout));
        return eb_result_set_error(res, "Timeout", msg, "");
    }
    if (o->cancelled) {
        res->exit_code = 128 + SIGKILL;
        res->signal = SIGKILL;
        res->killed_reason = EXECBOX_KILLED_CANCELLED;
        return eb_result_set_error(res, "Cancelled", "the run was cancelled by the caller", "");
    }
    if (o->flooded) {
        res->exit_code = 128 + SIGKILL;
        res->signal = SIGKILL;
        res->killed_reason = EXECBOX_KILLED_OUTPUT_LIMIT;
        snprintf(msg, sizeof(msg), "the program wrote more than %" PRIu64 " bytes and was %s",
                 o->flood_at, o->flood_stopped ? "stopped" : "killed");
        return eb_result_set_error(res, "OutputLimit", msg, "");
    }
    if (o->setup_failed)
        return eb_result_sandbox_error(res, o->setup_err.msg);
    if (!o->got_exit) {
        if (WIFSIGNALED(o->init_status) || (o->init_status & 0x7f))
            snprintf(msg, sizeof(msg),
                     "the sandbox ended unexpectedly (its init was killed by "
                     "signal %d)",
                     o->init_status & 0x7f);
        else
            snprintf(msg, sizeof(msg), "the sandbox ended unexpectedly (init status %d)",
                     WEXITSTATUS(o->init_status));
        return eb_result_sandbox_error(res, msg);
    }
    if (WIFEXITED(o->status)) {
        res->exit_code = WEXITSTATUS(o->status);
    } else if (WIFSIGNALED(o->status)) {
        int sig = WTERMSIG(o->status);
        res->signal = sig;
        res->exit_code = 128 + sig;
        if (sig == SIGXCPU) {
            res->killed_reason = EXECBOX_KILLED_CPU;
            return eb_result_set_error(res, "CPULimit", "the CPU time limit was exceeded", "");
        }
    }
    return 0;
}
