/* SPDX-License-Identifier: MIT */
/* tpl_proto.h - the messages between the library and a template (lib/jail/tpl_helper.c) on
 * their SOCK_SEQPACKET socket: one request per prepared run, its fds alongside (SCM_RIGHTS), one
 * answer with the run's pidfd. Fixed-size, so a message is one datagram or garbage. */
#ifndef EB_JAIL_TPL_PROTO_H
#define EB_JAIL_TPL_PROTO_H

#include <stdint.h>

#define EB_TPL_MAGIC 0x31544245U /* "EBT1" */

/* The fds of a request, in this order. */
enum eb_tpl_fd {
    EB_TPL_FD_OUT,    /* write end of the run's stdout pipe */
    EB_TPL_FD_ERR,    /* write end of its stderr pipe */
    EB_TPL_FD_STATUS, /* write end of its status pipe (struct eb_msg) */
    EB_TPL_FD_CTL,    /* read end of the kill-request pipe, for the run's init */
    EB_TPL_FD_GO,     /* read end of the go pipe: the guest's fd 3 */
    EB_TPL_FD_WS,     /* the detached mount of the run's /workspace */
    EB_TPL_FD_CODE,   /* the detached, read-only mount of the run's /code */
    EB_TPL_FD_CG0,    /* cgroup.procs of each controller of the run's cgroup (up to 4), then
                       * the host side's cgroup.procs (n_leave of them, up to 4), for the run's
                       * init to leave the run's cgroup once it is empty (eb_init_loop_leave) */
    EB_TPL_FDS_MAX = EB_TPL_FD_CG0 + 8,
};

struct eb_tpl_req {
    uint32_t magic;
    uint32_t n_fds;        /* EB_TPL_FD_CG0 + the number of cgroup.procs fds + n_leave */
    uint64_t tmpfs;        /* size of the run's /tmp */
    uint64_t shm;          /* size of its /dev/shm */
    uint64_t file_size;    /* RLIMIT_FSIZE */
    uint64_t memory;       /* cap for memory_rlimit */
    uint64_t cpu_seconds;  /* RLIMIT_CPU, 0: none */
    int32_t memory_rlimit; /* RLIMIT_AS / RLIMIT_DATA, or -1 (the cgroup caps memory) */
    uint32_t n_leave;      /* the last n_leave fds: the host side's cgroup.procs (up to 4) */
    uint32_t code_cover;   /* the /code fd is writable: cover it read-only (eb_attach_mount) */
};

/* The answer to a request (with the run's pidfd when code is 0), and the template's first
 * message once its interpreter has imported everything (pid 0). */
struct eb_tpl_resp {
    uint32_t magic;
    int32_t code; /* 0, or -errno with msg */
    int32_t pid;  /* the run's init, as the template sees it */
    char msg[200];
};

#endif
