#!/bin/bash
# SPDX-License-Identifier: MIT
# Cold start of one sandboxed `python3 -B -c pass`: bare python, execbox's jail (every wall:
# user/pid/mount/net/ipc/uts/cgroup namespaces, a cgroup, tmpfs root, seccomp, Landlock),
# bubblewrap with the same namespaces and a comparable root (it has no resource limits, seccomp
# or Landlock), and the kernel floor (bench/floor.c: fork + unshare of the same namespaces, then
# exec). The commands run interleaved, one of each per round in rotating order, so that a busy
# machine slows all of them alike. Prints medians of wall and CPU time (the benchmark's own
# cgroup's CPU counter around each command: everything it started, teardown included) and the
# overhead over bare python.
#
# Then the same on a host with MOUNTS (default 2000) extra mounts, made in a private mount
# namespace of this benchmark (the host's table is untouched): a sandbox whose mount namespace
# copies the host's pays ~2.4 us per mount, as bwrap and the floor do. Every execbox run as root,
# a one-shot `execbox run` included, joins the jail's prepared namespace pinned on the host
# (lib/jail/mntpin.h) and copies its dozen mounts instead, whatever the host's count; so do an
# executor's runs (a server, a pool: execbox_poolbench here).
#
# Needs bwrap (scripts/deps/bench.apt) and root for the mount part. Usage:
#   bench/jail.sh [BUILD_DIR]      (default build-release; RUNS=200 MOUNTS=2000)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-release}
if [ ! -x "$BUILD/execbox" ] || [ ! -x "$BUILD/execbox_floor" ] || [ ! -x "$BUILD/execbox_poolbench" ]; then
  cmake --preset release >/dev/null && cmake --build --preset release >/dev/null
  BUILD=build-release
fi
"$BUILD/execbox" check -b jail | sed -n '/tier/p'
. bench/lib.sh
exec python3 - "$BUILD" "${RUNS:-200}" "${MOUNTS:-2000}" "${bench_bwrap[@]}" <<'PY'
import ctypes, os, re, statistics, subprocess, sys, time

build, runs, n_mounts = os.path.abspath(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
PY = "/usr/bin/python3"
bare = [PY, "-B", "-c", "pass"]
cmds = {
    "bare": bare,
    "execbox": [f"{build}/execbox", "run", "-b", "jail", "-c", "pass"],
    "bwrap": sys.argv[4:] + bare,  # bench_bwrap (bench/lib.sh)
    "floor": [f"{build}/execbox_floor"] + bare,
}
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS = 0x00020000
devnull = os.open("/dev/null", os.O_RDWR)


def setns(fd):
    if libc.setns(fd, CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "setns")


class Meter:
    """CPU time of everything a command starts, asynchronous teardown included: the benchmark
    runs in a cgroup of its own (cpuacct in v1, cpu.stat in v2), and after each command waits
    (up to 2 s) until it is the cgroup's only process left (bwrap and execbox both exit before
    their sandbox's init is gone), then reads the cgroup's CPU counter. Our own share (spawn,
    wait, polling) is the same for every command and cancels in the +cpu column."""

    def __init__(self):
        self.dir = None
        for base, counter in (("/sys/fs/cgroup/cpuacct", "cpuacct.usage"),
                              ("/sys/fs/cgroup", "cpu.stat")):
            if os.path.exists(f"{base}/{counter}") or (counter == "cpu.stat" and
                                                       os.path.exists(f"{base}/cgroup.controllers")):
                d = f"{base}/ebbench-{os.getpid()}"
                try:
                    os.mkdir(d)
                    with open(f"{d}/cgroup.procs", "w") as f:
                        f.write(str(os.getpid()))
                except OSError:
                    continue
                self.dir, self.counter = d, counter
                break

    def read_ms(self):
        if not self.dir:
            return float("nan")
        with open(f"{self.dir}/{self.counter}") as f:
            t = f.read()
        if self.counter == "cpuacct.usage":
            return int(t) / 1e6
        return int(re.search(r"usage_usec (\d+)", t).group(1)) / 1e3

    def settle(self):
        if not self.dir:
            return
        for _ in range(2000):
            with open(f"{self.dir}/cgroup.procs") as f:
                if f.read().split() == [str(os.getpid())]:
                    return
            time.sleep(0.001)

    def release(self, pid):
        """Moves pid (a helper of ours, not a command) out of the measured cgroup."""
        if self.dir:
            with open(f"{os.path.dirname(self.dir)}/cgroup.procs", "w") as f:
                f.write(str(pid))

    def close(self):
        if self.dir:
            parent = os.path.dirname(self.dir)
            with open(f"{parent}/cgroup.procs", "w") as f:
                f.write(str(os.getpid()))
            os.rmdir(self.dir)


meter = Meter()


def one(argv):
    c0 = meter.read_ms()
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, {"PATH": "/usr/bin:/bin"},
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0),
                                       (os.POSIX_SPAWN_DUP2, devnull, 1)])
    _, st, ru = os.wait4(pid, 0)
    wall = (time.perf_counter_ns() - t0) / 1e6
    if os.waitstatus_to_exitcode(st) != 0:
        sys.exit(f"{argv[0]} failed: {st}")
    meter.settle()
    return wall, meter.read_ms() - c0


def bench(variants, rounds, warmup=10):
    """variants: name -> (argv, mount ns fd). Interleaved rounds; returns name -> (wall, cpu)."""
    names = list(variants)
    res = {n: ([], []) for n in names}
    for r in range(warmup + rounds):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            argv, ns = variants[n]
            setns(ns)
            w, c = one(argv)
            if r >= warmup:
                res[n][0].append(w)
                res[n][1].append(c)
    setns(host_ns)
    return {n: (statistics.median(w), statistics.median(c)) for n, (w, c) in res.items()}


def table(title, m, base):
    print(f"\n{title}")
    print(f"{'':16} {'wall ms':>8} {'+ms':>7} {'cpu ms':>7} {'+cpu':>7}")
    bw, bc = m[base]
    for n, (w, c) in m.items():
        print(f"{n:16} {w:8.2f} {w - bw:+7.2f} {c:7.2f} {c - bc:+7.2f}")


host_ns = os.open("/proc/self/ns/mnt", os.O_RDONLY)
m = bench({n: (a, host_ns) for n, a in cmds.items()}, runs)
table(f"cold start, median of {runs} interleaved rounds (+ = over bare python)", m, "bare")
print("(cpu: the benchmark cgroup's CPU counter around each command, everything it started\n"
      " included, the sandbox's teardown after the command exited too)")
ex, bw = m["execbox"][0] - m["bare"][0], m["bwrap"][0] - m["bare"][0]
print(f"execbox overhead {ex:+.2f} ms, bwrap {bw:+.2f} ms, floor "
      f"{m['floor'][0] - m['bare'][0]:+.2f} ms: execbox/bwrap overhead ratio {ex / bw:.2f}")

if os.geteuid() != 0 or n_mounts <= 0:
    meter.close()
    sys.exit(0)
# A private mount namespace with n_mounts extra tmpfs mounts, held by a child process.
r, w = os.pipe()
kid = os.fork()
if kid == 0:
    os.close(r)
    if libc.unshare(CLONE_NEWNS) != 0:
        os._exit(1)
    MS_REC, MS_PRIVATE = 0x4000, 0x40000
    libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
    libc.mount(b"tmpfs", b"/mnt", b"tmpfs", 0, b"size=1m,nr_inodes=65536")
    for i in range(n_mounts):
        d = f"/mnt/m{i}".encode()
        os.mkdir(d)
        if libc.mount(b"tmpfs", d, b"tmpfs", 0, b"size=4k") != 0:
            os._exit(1)
    os.write(w, b"k")
    time.sleep(3600)
    os._exit(0)
os.close(w)
meter.release(kid)
if os.read(r, 1) != b"k":
    sys.exit("could not make the mounts")
many_ns = os.open(f"/proc/{kid}/ns/mnt", os.O_RDONLY)
with open(f"/proc/{kid}/mountinfo") as f:
    total = sum(1 for _ in f)
def executor_p50(ns, n=20):
    """Median latency of n cold runs through one executor (a server's case: from its second
    run on, the jail copies its prepared mount namespace instead of the host's table)."""
    setns(ns)
    p = subprocess.run([f"{build}/execbox_poolbench", "-b", "jail", "-c", "pass", "-n", str(n)],
                       capture_output=True, text=True, timeout=300)
    setns(host_ns)
    m = re.search(r"p50=([\d.]+)ms", p.stdout)
    if not m:
        sys.exit(f"poolbench failed: {p.stdout} {p.stderr}")
    return float(m.group(1))


try:
    v = {}
    for n in ("bare", "execbox", "bwrap", "floor"):
        v[n] = (cmds[n], host_ns)
        v[f"{n} +{n_mounts}"] = (cmds[n], many_ns)
    mm = bench(v, max(runs // 2, 20))
    ex_host, ex_many = [], []
    for _ in range(7):
        ex_host.append(executor_p50(host_ns))
        ex_many.append(executor_p50(many_ns))
finally:
    os.kill(kid, 9)
    os.waitpid(kid, 0)
    meter.close()
table(f"with {n_mounts} extra mounts ({total} in all), median of {max(runs // 2, 20)} rounds", mm,
      "bare")
for n in ("execbox", "bwrap", "floor"):
    d = mm[f"{n} +{n_mounts}"][0] - mm[n][0]
    dc = mm[f"{n} +{n_mounts}"][1] - mm[n][1]
    print(f"{n}: {d:+.2f} ms wall, {dc:+.2f} ms cpu with {n_mounts} extra mounts "
          f"({d * 1e3 / n_mounts:+.2f} us a mount)")
eh, em = statistics.median(ex_host), statistics.median(ex_many)
print(f"one executor, 20 cold runs (execbox_poolbench p50, median of 7): {eh:.2f} ms, with "
      f"{n_mounts} extra mounts {em:.2f} ms ({em - eh:+.2f} ms)")
PY
