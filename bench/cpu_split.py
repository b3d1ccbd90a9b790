# SPDX-License-Identifier: MIT
"""bench/cpu_split.py - an additive split of the machine's CPU per run from a `perf record -a -g`
(read as `perf script -F comm,pid,ip,sym` on standard input), for bench/tpl_cpu.sh and
bench/cold_cpu.sh.

Every sample other than idle goes to exactly one row, the first rule below whose kernel entry
point is anywhere in its call chain (so a page fault taken during a fork's page-table copy is
the fork's), and to one column, the process it was taken in. Rows and columns both add up to
PER, the machine's busy ms per run measured beside the recording (/proc/stat), so the table
says where each ms went. perf's own overhead is spread over what it samples.

Columns, by process name (comm) and pid:
  --kind execbox: template (the python3 pids with the most samples: the templates' own
  interpreters), guest (every other python3, and a run's guest after it stopped, named
  execbox-done*: its fork, its run and its exit, and its R before the init's exec), init (the
  run's init), serve (its threads), kworker (kernel workers: namespaces and cgroups released).
  --kind bare: parent (bench/forklimit.py's forking loops, and its one import of the preload
  spread over the runs), child (each fork).
  --kind cold: cli (a cold `execbox run`, its threads included), init (the sandbox's init, and
  the guest between its clone and its exec), guest (python3), kworker, other (the shell loop
  that starts each command, perf).
  --kind bwrap: bwrap (its two processes), guest (python3), kworker, other.
Usage: perf script -i DATA -F comm,pid,ip,sym | python3 bench/cpu_split.py --kind K --per MS"""
import argparse
import collections
import re
import sys

# serve's threads by name (each names itself: pthread_setname_np), and libmicrohttpd's MHD-*.
SERVE_THREADS = {"execbox-serve", "execbox-front", "execbox-worker", "execbox-fill", "execbox-grave",
                 "execbox-netns", "execbox-proxy", "execbox-dns", "execbox-watch", "execbox-expiry"}

RULES = [
    ("idle", ("do_idle",)),
    ("network namespace made", ("copy_net_ns",)),
    ("network namespace torn down", ("cleanup_net",)),
    ("other namespaces made", ("create_new_namespaces", "create_user_ns", "copy_mnt_ns")),
    ("namespaces freed", ("free_nsproxy", "put_user_ns", "free_user_ns")),
    ("fork: page tables (dup_mmap)", ("dup_mmap",)),
    ("exit: address space (exit_mmap)", ("exit_mmap",)),
    ("seccomp filter loaded", ("do_seccomp",)),
    ("cgroups (mkdir, rmdir, join, release)",
     ("cgroup_mkdir", "cgroup_rmdir", "css_free_rwork_fn", "css_killed_work_fn",
      "css_release_work_fn", "cgroup_attach_task", "__cgroup_procs_write",
      "cgroup_procs_write", "cgroup1_procs_write", "cgroup1_tasks_write")),
    ("mounts", ("path_mount", "__x64_sys_fsmount", "__x64_sys_move_mount", "__x64_sys_fsconfig",
                "__do_sys_fsmount", "__do_sys_move_mount", "__do_sys_fsconfig", "do_umount",
                "cleanup_mnt")),
    ("exec", ("bprm_execve",)),
    ("exit: the rest", ("do_exit",)),
    ("page faults", ("asm_exc_page_fault",)),
    ("clone: the rest", ("copy_process",)),
    ("other syscalls", ("do_syscall_64",)),
    ("user space, interrupts", ()),
]


def samples(stream):
    head, frames = None, []
    for line in stream:
        if not line.strip():
            if head:
                yield head, frames
            head, frames = None, []
        elif not line[0].isspace():
            parts = line.split()
            head, frames = (parts[0], parts[1] if len(parts) > 1 else ""), []
        else:
            parts = line.split(None, 1)
            frames.append(parts[1].split(" (")[0].strip() if len(parts) > 1 else "")
    if head:
        yield head, frames


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=("execbox", "bare", "cold", "bwrap"), required=True)
    ap.add_argument("--per", type=float, required=True, help="machine busy ms per run")
    a = ap.parse_args()
    rows = {name: set(syms) for name, syms in RULES}
    data = list(samples(sys.stdin))
    py = collections.Counter(pid for (comm, pid), _ in data if comm == "python3")
    # The interpreters that sample most: the templates (execbox), the forking loops (bare).
    busiest = {pid for pid, n in py.items() if n > len(data) / 50}
    cols = {"execbox": ["template", "guest", "init", "serve", "kworker", "other"],
            "bare": ["parent", "child", "other"],
            "cold": ["cli", "init", "guest", "kworker", "other"],
            "bwrap": ["bwrap", "guest", "kworker", "other"]}[a.kind]

    def column(comm, pid):
        if a.kind in ("cold", "bwrap"):
            named = {"execbox": "cli", "execbox-init": "init", "bwrap": "bwrap", "python3": "guest"}
            if comm in named and named[comm] in cols:
                return named[comm]
            return "kworker" if re.match(r"(kworker|ksoftirqd|rcu)", comm) else "other"
        if comm == "python3":
            if a.kind == "execbox":
                return "template" if pid in busiest else "guest"
            return "parent" if pid in busiest else "child"
        if a.kind == "execbox":
            if comm.startswith("execbox-done"):
                return "guest"
            if comm.startswith("memfd:execbox"):
                return "init"
            if comm in SERVE_THREADS or comm.startswith("MHD"):
                return "serve"
            if re.match(r"(kworker|ksoftirqd|rcu)", comm):
                return "kworker"
        return "other"

    tab = collections.Counter()
    for (comm, pid), frames in data:
        row = next((name for name, syms in rows.items() if syms and syms & set(frames)),
                   "user space, interrupts")
        tab[(row, "idle" if row == "idle" else column(comm, pid))] += 1
    busy = sum(v for (row, _), v in tab.items() if row != "idle")
    if not busy:
        sys.exit("cpu_split: no samples")
    ms = a.per / busy
    print(f"{'ms of machine CPU per run':38s}" + "".join(f"{c:>9s}" for c in cols + ["total"]))
    for name, _ in RULES:
        if name == "idle":
            continue
        vals = [tab[(name, c)] * ms for c in cols]
        if sum(vals) < 0.005:
            continue
        print(f"{name:38s}" + "".join(f"{v:9.2f}" for v in vals) + f"{sum(vals):9.2f}")
    tot = [sum(tab[(name, c)] for name, _ in RULES if name != "idle") * ms for c in cols]
    print(f"{'total':38s}" + "".join(f"{v:9.2f}" for v in tot) + f"{sum(tot):9.2f}")


if __name__ == "__main__":
    main()
