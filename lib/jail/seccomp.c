/* SPDX-License-Identifier: MIT */
/* seccomp.c - the jail's syscall filter (see seccomp.h and docs/seccomp.md for what and why).
 *
 * The filter allows by default: the namespaces, the dropped capabilities and no_new_privs are
 * the main walls, and an allow-list would break interpreters on every new libc. What it denies is
 * the kernel attack surface that a Python, Node or shell workload never needs and that container
 * runtimes deny too: debugging other processes, mounting, new namespaces, the keyring, BPF, perf,
 * io_uring, modules, clocks, raw and netlink sockets, terminal injection. Denials return EPERM so
 * that the guest sees a clean OSError instead of dying. */
#include "jail/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"

/* This file is compiled twice. With EB_SECCOMP_COMPILER (the build-time generator
 * eb_seccomp_gen and the test that checks its output) it holds the rules and builds them with
 * libseccomp; in the library it holds the program that generator wrote into seccomp_bpf.h, so
 * a run neither compiles the filter nor loads libseccomp. */
#ifdef EB_SECCOMP_COMPILER
#include <seccomp.h>

/* A syscall denied whatever its arguments. nr is its x86_64 number, used only when the installed
 * libseccomp is older than the call (2.5.4 does not know open_tree_attr); -1 when there is none. */
struct denied {
    const char *name;
    int nr_x86_64;
};

/* Unconditional denials, EPERM. Grouped by why. */
static const struct denied denied_calls[] = {
    /* Reading or writing another process's memory and registers. */
    {"ptrace", 101},
    {"process_vm_readv", 310},
    {"process_vm_writev", 311},
    {"process_madvise", 440},
    {"pidfd_getfd", 438},
    {"kcmp", 312},
    {"move_pages", 279},
    {"migrate_pages", 256},
    /* The mount family: even inside a user namespace, each is kernel attack surface, and the
     * guest's file view must stay the one the jail built. */
    {"mount", 165},
    {"umount2", 166},
    {"umount", -1},
    {"fsopen", 430},
    {"fsconfig", 431},
    {"fsmount", 432},
    {"fspick", 433},
    {"move_mount", 429},
    {"open_tree", 428},
    {"open_tree_attr", 467},
    {"mount_setattr", 442},
    {"pivot_root", 155},
    {"chroot", 161},
    /* New namespaces (unprivileged user namespaces are the door to most kernel exploits of the
     * last years) and entering existing ones. clone is handled below by its flags. */
    {"unshare", 272},
    {"setns", 308},
    /* The keyring is not namespaced and has had many bugs. */
    {"add_key", 248},
    {"request_key", 249},
    {"keyctl", 250},
    /* Large in-kernel programming surfaces, repeatedly exploited. */
    {"bpf", 321},
    {"perf_event_open", 298},
    {"userfaultfd", 323},
    {"io_uring_setup", 425},
    {"io_uring_enter", 426},
    {"io_uring_register", 427},
    {"fanotify_init", 300},
    /* Replacing or changing the running kernel, the machine's state, and its clocks. */
    {"kexec_load", 246},
    {"kexec_file_load", 320},
    {"init_module", 175},
    {"finit_module", 313},
    {"delete_module", 176},
    {"create_module", 174},
    {"get_kernel_syms", 177},
    {"query_module", 178},
    {"reboot", 169},
    {"swapon", 167},
    {"swapoff", 168},
    {"acct", 163},
    {"settimeofday", 164},
    {"clock_settime", 227},
    {"clock_adjtime", 305},
    {"adjtimex", 159},
    {"stime", -1},
    {"sethostname", 170},
    {"setdomainname", 171},
    /* Opening files by handle bypasses the mount tree (the "shocker" container escape). */
    {"open_by_handle_at", 304},
    {"name_to_handle_at", 303},
    /* Host-wide administration and information. */
    {"quotactl", 179},
    {"quotactl_fd", 443},
    {"syslog", 103},
    {"lookup_dcookie", 212},
    {"vhangup", 153},
    {"nfsservctl", 180},
    {"_sysctl", 156},
    {"uselib", 134},
    {"ustat", 136},
    /* Direct hardware port access and the per-process LDT (old attack surface). */
    {"iopl", 172},
    {"ioperm", 173},
    {"modify_ldt", 154},
};

/* Calls that set a file's mode, and which argument holds it. A setuid or setgid bit is refused
 * in every one: in a host workspace the guest acts, through the id-mapped mount, as the
 * directory's owner (possibly root), and a setuid file it left there would run with that
 * owner's privileges on the host. open/openat take the mode only with O_CREAT or O_TMPFILE;
 * without them the argument is ignored (and may be anything), so the rule needs the flag too. */
static const struct mode_call {
    const char *name;
    int nr_x86_64;
    unsigned mode_arg;
    int flags_arg; /* -1: the mode always counts */
} mode_calls[] = {
    {"chmod", 90, 1, -1},      {"fchmod", 91, 1, -1}, {"fchmodat", 268, 2, -1},
    {"fchmodat2", 452, 2, -1}, {"creat", 85, 1, -1},  {"mkdir", 83, 1, -1},
    {"mkdirat", 258, 2, -1},   {"mknod", 133, 1, -1}, {"mknodat", 259, 2, -1},
    {"open", 2, 2, 1},         {"openat", 257, 3, 2},
};

/* clone() flags that create namespaces. CLONE_NEWTIME (0x80) is left out: in clone() that bit
 * belongs to the exit signal, and new time namespaces come only from unshare and clone3. */
static const unsigned long clone_ns_flags[] = {
    CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
    CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
};

/* Resolves a call for the filter's native architecture: libseccomp's number, or the x86_64
 * fallback for calls newer than libseccomp. Negative when the call does not exist here. */
static int resolve(const struct denied *d)
{
    int nr = seccomp_syscall_resolve_name(d->name);
#if defined(__x86_64__)
    if (nr == __NR_SCMP_ERROR && d->nr_x86_64 >= 0)
        nr = d->nr_x86_64;
#endif
    return nr;
}

/* Adds one rule; libseccomp reports calls that do not exist on this architecture (pseudo
 * numbers such as stime on x86_64) with -EDOM or -EFAULT, which we skip. */
static int add_rule(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned n_cmp,
                    const struct scmp_arg_cmp *cmp, const char *what, struct execbox_error *err)
{
    if (nr == __NR_SCMP_ERROR)
        return 0;
    int r = seccomp_rule_add_array(ctx, action, nr, n_cmp, cmp);
    if (r < 0 && nr < 0)
        return 0; /* a pseudo syscall: not on this architecture */
    if (r < 0)
        return eb_error_set(err, r, "seccomp: adding the rule for '%s'", what);
    return 0;
}

static int build_rules(scmp_filter_ctx ctx, struct execbox_error *err)
{
    const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
    int r;

    for (size_t i = 0; i < ARRAY_SIZE(denied_calls); i++) {
        r = add_rule(ctx, eperm, resolve(&denied_calls[i]), 0, NULL, denied_calls[i].name, err);
        if (r < 0)
            return r;
    }

    /* clone with any namespace flag; a plain fork or thread stays allowed. On x86_64 the flags
     * are the first argument (s390 swaps the first two; we build for the native ABI only). */
    for (size_t i = 0; i < ARRAY_SIZE(clone_ns_flags); i++) {
        struct scmp_arg_cmp c =
            SCMP_A0_64(SCMP_CMP_MASKED_EQ, clone_ns_flags[i], clone_ns_flags[i]);
        r = add_rule(ctx, eperm, SCMP_SYS(clone), 1, &c, "clone", err);
        if (r < 0)
            return r;
    }
    /* clone3 passes its flags in memory, which a seccomp filter cannot read: fail it with ENOSYS
     * so that glibc (2.34+) and others fall back to clone, whose flags are checked above. */
    r = add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0, NULL, "clone3", err);
    if (r < 0)
        return r;

    /* No setuid or setgid mode, by any call that sets one (see mode_calls). */
    static const unsigned long mode_bits[] = {S_ISUID, S_ISGID};
    static const unsigned long creating[] = {O_CREAT, __O_TMPFILE};
    for (size_t i = 0; i < ARRAY_SIZE(mode_calls); i++) {
        const struct mode_call *m = &mode_calls[i];
        struct denied d = {m->name, m->nr_x86_64};
        int nr = resolve(&d);
        for (size_t b = 0; b < ARRAY_SIZE(mode_bits); b++) {
            struct scmp_arg_cmp c[2] = {
                {m->mode_arg, SCMP_CMP_MASKED_EQ, mode_bits[b], mode_bits[b]}};
            if (m->flags_arg < 0) {
                r = add_rule(ctx, eperm, nr, 1, c, m->name, err);
                if (r < 0)
                    return r;
                continue;
            }
            for (size_t f = 0; f < ARRAY_SIZE(creating); f++) {
                c[1] = (struct scmp_arg_cmp){(unsigned)m->flags_arg, SCMP_CMP_MASKED_EQ,
                                             creating[f], creating[f]};
                r = add_rule(ctx, eperm, nr, 2, c, m->name, err);
                if (r < 0)
                    return r;
            }
        }
    }
    /* openat2 passes its mode in memory, which a filter cannot read: ENOSYS, so that callers
     * fall back to openat, whose mode is checked above. */
    {
        struct denied d = {"openat2", 437};
        r = add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), resolve(&d), 0, NULL, "openat2", err);
        if (r < 0)
            return r;
    }

    /* personality: only the default persona (0) and the query (0xffffffff). Others turn off
     * address-space randomisation (ADDR_NO_RANDOMIZE) or change how the kernel reads memory
     * (READ_IMPLIES_EXEC). libseccomp 2.5 takes one comparison per argument and rule, and a rule
     * may not repeat the default action, so "neither 0 nor 0xffffffff" is spelled as a union:
     * any of the upper 32 bits set, or the lower 32 bits not constant. A 32-bit word that is
     * neither all zeros nor all ones has, read cyclically, some set bit followed by a clear one,
     * so one masked comparison per position covers it. */
    {
        struct scmp_arg_cmp hi = SCMP_A0_64(SCMP_CMP_GT, 0xffffffffUL);
        r = add_rule(ctx, eperm, SCMP_SYS(personality), 1, &hi, "personality", err);
        for (unsigned i = 0; i < 32 && r >= 0; i++) {
            unsigned long bit = 1UL << i, next = 1UL << ((i + 1) % 32);
            struct scmp_arg_cmp c = SCMP_A0_64(SCMP_CMP_MASKED_EQ, bit | next, bit);
            r = add_rule(ctx, eperm, SCMP_SYS(personality), 1, &c, "personality", err);
        }
        if (r < 0)
            return r;
    }

    /* socket(): only AF_UNIX (1), AF_INET (2) and AF_INET6 (10). That denies netlink (host
     * routing and audit interfaces), packet sockets and the rarely used families (AF_KEY,
     * AF_ALG, AF_VSOCK, AF_TIPC, AF_RDS, ...) that are a steady source of kernel bugs. One
     * comparison per rule (libseccomp 2.5): everything above AF_INET6 on all 64 bits, then each
     * family below it that is not allowed. */
    {
        struct scmp_arg_cmp above = SCMP_A0_64(SCMP_CMP_GT, AF_INET6);
        r = add_rule(ctx, eperm, SCMP_SYS(socket), 1, &above, "socket", err);
        for (unsigned long fam = 0; fam < AF_INET6 && r >= 0; fam++) {
            if (fam == AF_UNIX || fam == AF_INET)
                continue;
            struct scmp_arg_cmp c = SCMP_A0_64(SCMP_CMP_EQ, fam);
            r = add_rule(ctx, eperm, SCMP_SYS(socket), 1, &c, "socket", err);
        }
        if (r < 0)
            return r;
    }
    /* SOCK_RAW in any family (crafting packets; ICMP "ping" sockets are SOCK_DGRAM and stay).
     * The type's low 4 bits are the type; SOCK_NONBLOCK and SOCK_CLOEXEC sit above them. */
    {
        struct scmp_arg_cmp c = SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xf, SOCK_RAW);
        r = add_rule(ctx, eperm, SCMP_SYS(socket), 1, &c, "socket(SOCK_RAW)", err);
        if (r < 0)
            return r;
    }

    /* ioctl TIOCSTI (pushes keystrokes into a terminal's input: a shell outside the sandbox
     * would run them) and TIOCLINUX (the same on a virtual console). The kernel takes the
     * command as 32 bits, so only the low 32 bits are compared: setting high bits must not
     * slip past. */
    static const unsigned long tty_cmds[] = {TIOCSTI, TIOCLINUX};
    for (size_t i = 0; i < ARRAY_SIZE(tty_cmds); i++) {
        struct scmp_arg_cmp c = SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffUL, tty_cmds[i]);
        r = add_rule(ctx, eperm, SCMP_SYS(ioctl), 1, &c, "ioctl", err);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Exports ctx's BPF through a memfd (libseccomp 2.5 has no export to memory) into f. */
static int export_bpf(scmp_filter_ctx ctx, struct eb_seccomp *f, struct execbox_error *err)
{
    _cleanup_close_ int fd = memfd_create("execbox-seccomp", MFD_CLOEXEC);
    if (fd < 0)
        return eb_error_set(err, -errno, "seccomp: memfd_create");
    int r = seccomp_export_bpf(ctx, fd);
    if (r < 0)
        return eb_error_set(err, r, "seccomp: exporting the BPF program");
    off_t size = lseek(fd, 0, SEEK_END);
    if (size < 0)
        return eb_error_set(err, -errno, "seccomp: lseek");
    if (size == 0 || size % sizeof(struct sock_filter) != 0 ||
        (size_t)size / sizeof(struct sock_filter) > EB_SECCOMP_MAX_INSNS)
        return eb_error_set(err, -E2BIG, "seccomp: exported program of %lld bytes is invalid",
                            (long long)size);
    size_t n = (size_t)size / sizeof(struct sock_filter);
    _cleanup_free_ struct sock_filter *insns = calloc(n, sizeof(*insns));
    if (!insns)
        return eb_error_set(err, -ENOMEM, "seccomp: allocating %zu instructions", n);
    if (lseek(fd, 0, SEEK_SET) < 0)
        return eb_error_set(err, -errno, "seccomp: lseek");
    ssize_t got = eb_read_full(fd, insns, (size_t)size);
    if (got < 0)
        return eb_error_set(err, (int)got, "seccomp: reading the BPF program back");
    if (got != size)
        return eb_error_set(err, -EIO, "seccomp: short read of the BPF program");
    f->insns = TAKE_PTR(insns);
    f->prog.len = (unsigned short)n;
    f->prog.filter = f->insns;
    return 0;
}

int eb_seccomp_compile(struct eb_seccomp *f, size_t *ret_n_denied, struct execbox_error *err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return eb_error_set(err, -ENOMEM, "seccomp: seccomp_init");
    struct eb_seccomp out = {0};
    int r;
    /* A syscall from another ABI (i386 through int 0x80, or x32 numbers) would be read with
     * the wrong table and slip past every rule above: kill the whole process instead. Only the
     * native architecture is in the filter, so libseccomp also rejects x32 numbers. */
    r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (r < 0) /* kernels before 4.14 lack KILL_PROCESS; killing the thread still stops it */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_THREAD);
    if (r < 0) {
        eb_error_set(err, r, "seccomp: setting the bad-architecture action");
        goto out;
    }
    /* no_new_privs is set by eb_seccomp_apply() itself, not by libseccomp at load time. */
    r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
    if (r < 0) {
        eb_error_set(err, r, "seccomp: clearing the NNP attribute");
        goto out;
    }
    /* A binary tree over syscall numbers instead of a linear scan: every syscall of the guest
     * runs the filter, so its depth matters more than its length. */
    (void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    r = build_rules(ctx, err);
    if (r < 0)
        goto out;
    r = export_bpf(ctx, &out, err);
    if (r < 0)
        goto out;
    *f = out;
    *ret_n_denied = ARRAY_SIZE(denied_calls);
out:
    seccomp_release(ctx);
    return r;
}

#else /* the library: the program compiled at build time */
#include "seccomp_bpf.h"

int eb_seccomp_prepare(struct eb_seccomp *f, struct execbox_error *err)
{
    size_t n = ARRAY_SIZE(eb_seccomp_bpf);
    struct sock_filter *insns = malloc(sizeof(eb_seccomp_bpf));
    if (!insns)
        return eb_error_set(err, -ENOMEM, "seccomp: allocating %zu instructions", n);
    memcpy(insns, eb_seccomp_bpf, sizeof(eb_seccomp_bpf));
    f->insns = insns;
    f->prog.len = (unsigned short)n;
    f->prog.filter = f->insns;
    return 0;
}

int eb_seccomp_apply(const struct eb_seccomp *f, struct execbox_error *err)
{
    if (!f->insns || f->prog.len == 0) {
        eb_error_set_raw(err, -EINVAL, "seccomp: no prepared filter");
        return -EINVAL;
    }
    /* no_new_privs: the kernel requires it (or CAP_SYS_ADMIN) to install a filter, and it stops
     * a setuid binary from regaining privileges the filter and the namespaces took away. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        int e = -errno;
        eb_error_set_raw(err, e, "seccomp: PR_SET_NO_NEW_PRIVS");
        return e;
    }
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &f->prog) == 0)
        return 0;
    if (errno == ENOSYS && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &f->prog, 0, 0) == 0)
        return 0; /* kernels before 3.17 have only the prctl */
    int e = -errno;
    eb_error_set_raw(err, e, "seccomp: installing the filter");
    return e;
}

void eb_seccomp_release(struct eb_seccomp *f)
{
    if (!f)
        return;
    free(f->insns);
    memset(f, 0, sizeof(*f));
}

/* Asks the kernel, without installing anything, whether it supports filter mode and the two
 * actions the filter returns. Syscalls only: no fork and no libseccomp, because the jail probes
 * on every executor open (a cold `execbox run`), where building and installing a filter in a
 * forked child cost ~0.35 ms. The filter itself is proven by the unit and integration tests, and
 * a run whose child cannot install it fails. */
int eb_seccomp_probe(char *detail, size_t n)
{
    if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0) {
        snprintf(detail, n, "missing: kernel built without seccomp (CONFIG_SECCOMP)");
        return -ENOTSUP;
    }
    /* A NULL program: a kernel with filter mode copies it first and fails with EFAULT. */
    errno = 0;
    long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, NULL);
    if (r < 0 && errno == ENOSYS) {
        errno = 0;
        r = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL, 0, 0);
    }
    if (r == 0 || (errno != EFAULT && errno != EACCES)) {
        int e = errno;
        snprintf(detail, n, "missing: no seccomp filter mode (CONFIG_SECCOMP_FILTER): %s",
                 strerror(e));
        return -ENOTSUP;
    }
    /* Kernels before 4.14 cannot be asked; they know ERRNO (3.5) and turn KILL_PROCESS into a
     * kill of the calling thread, which still stops a call from another ABI. */
    uint32_t kill_process = SECCOMP_RET_KILL_PROCESS, eperm = SECCOMP_RET_ERRNO;
    if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &eperm) < 0 && errno != EINVAL) {
        snprintf(detail, n, "missing: the kernel lacks the errno action");
        return -ENOTSUP;
    }
    bool kp = syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &kill_process) == 0;
    snprintf(detail, n,
             "filter mode; %zu calls and socket, clone, personality, ioctl arguments "
             "denied with EPERM; no setuid/setgid modes; other ABIs %s",
             (size_t)EB_SECCOMP_BPF_DENIED, kp ? "kill the process" : "kill the thread");
    return 0;
}
#endif
