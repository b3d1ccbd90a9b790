/* SPDX-License-Identifier: MIT */
/*
 * firecracker.c - `execbox check -b firecracker`: what a Firecracker microVM backend would need
 * on this host, and which of it is here. There is no sandbox: the backend is designed
 * (docs/backends.md, "firecracker") but not built: Firecracker is not packaged for Debian 12
 * (the project's machines install nothing else), so no microVM can be started where execbox
 * is developed and tested, and execbox ships no backend code it cannot test. The probe always
 * reports the backend unusable, so an executor is never opened on it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "backends/backend.h"
#include "base/error.h"
#include "base/util.h"

/* Whether KVM can make a VM here: /dev/kvm opens, speaks API 12, and KVM_CREATE_VM works (a
 * nested or restricted host may pass the first two and fail the third). */
static bool kvm_usable(char *why, size_t size)
{
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, size, "/dev/kvm: %s", execbox_strerror(-errno));
        return false;
    }
    int api = ioctl(fd, KVM_GET_API_VERSION, 0);
    if (api != KVM_API_VERSION) {
        snprintf(why, size, "/dev/kvm speaks API %d, not %d", api, KVM_API_VERSION);
        close(fd);
        return false;
    }
    int vm = ioctl(fd, KVM_CREATE_VM, 0);
    if (vm < 0) {
        snprintf(why, size, "KVM_CREATE_VM failed: %s", execbox_strerror(-errno));
        close(fd);
        return false;
    }
    /* A VM without a vCPU is not a VM that runs: try one. */
    int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
    if (vcpu < 0)
        snprintf(why, size, "KVM_CREATE_VCPU failed: %s", execbox_strerror(-errno));
    else
        snprintf(why, size, "/dev/kvm: a VM and a vCPU can be created");
    if (vcpu >= 0)
        close(vcpu);
    close(vm);
    close(fd);
    return vcpu >= 0;
}

static bool in_path(const char *name, char *found, size_t size)
{
    static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/usr/sbin", "/opt/bin"};
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        snprintf(found, size, "%s/%s", dirs[i], name);
        if (access(found, X_OK) == 0)
            return true;
    }
    return false;
}

static int probe(const struct execbox_executor_options *o, struct execbox_check *c)
{
    (void)o;
    snprintf(c->tier, sizeof(c->tier), "microVM (designed, not built: docs/backends.md)");
    /* First: it is what `run -b firecracker` quotes as the reason. */
    eb_check_add(c, "backend", false, true,
                 "designed, not built: Firecracker is not packaged for Debian 12, so it could not "
                 "be tested (design: docs/backends.md)");
    char why[160], path[128];
    bool kvm = kvm_usable(why, sizeof(why));
    eb_check_add(c, "kvm", kvm, true, "%s", why);
    bool fc = in_path("firecracker", path, sizeof(path));
    eb_check_add(c, "firecracker", fc, true, "%s",
                 fc ? path
                    : "no firecracker binary (a release from firecracker-microvm/firecracker)");
    bool jailer = in_path("jailer", path, sizeof(path));
    eb_check_add(c, "jailer", jailer, true, "%s",
                 jailer ? path : "no jailer (ships with firecracker; chroot, cgroups, seccomp)");
    const char *kernel = getenv("EXECBOX_FC_KERNEL");
    const char *rootfs = getenv("EXECBOX_FC_ROOTFS");
    bool k = kernel && access(kernel, R_OK) == 0;
    bool r = rootfs && access(rootfs, R_OK) == 0;
    eb_check_add(c, "guest kernel", k, true, "%s",
                 k ? kernel : "EXECBOX_FC_KERNEL: an uncompressed vmlinux for the guest");
    eb_check_add(c, "guest rootfs", r, true, "%s",
                 r ? rootfs
                   : "EXECBOX_FC_ROOTFS: an ext4 image with the interpreters and the vsock agent");
    c->usable = false;
    return -ENOTSUP;
}

/* The lifecycle, for the interface's sake: no sandbox is ever started (an executor is never
 * opened on this backend, its probe says unusable), so the other three never get one. */
static int fc_start(void *state, const struct eb_start *s, struct eb_box **ret,
                    struct execbox_error *err)
{
    (void)state, (void)s, (void)ret;
    return eb_error_set(err, -ENOTSUP, "the firecracker backend is not built");
}

static int fc_deliver(void *state, struct eb_box *w, const struct eb_run *run,
                      struct execbox_error *err)
{
    (void)state, (void)w, (void)run;
    return eb_error_set(err, -ENOTSUP, "the firecracker backend is not built");
}

static int fc_wait(void *state, struct eb_box *w, const struct eb_run *run,
                   struct execbox_result *res, struct eb_wait *ret, struct execbox_error *err)
{
    (void)state, (void)w, (void)run, (void)res, (void)ret;
    return eb_error_set(err, -ENOTSUP, "the firecracker backend is not built");
}

static void fc_destroy(void *state, struct eb_box *w)
{
    (void)state, (void)w;
}

const struct eb_backend_ops eb_backend_firecracker = {
    .name = "firecracker",
    .probe = probe,
    .start = fc_start,
    .deliver = fc_deliver,
    .wait = fc_wait,
    .destroy = fc_destroy,
};
