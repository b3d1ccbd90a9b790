# SPDX-License-Identifier: MIT
"""The jail's cold path does no avoidable work: Python inside compiles no bytecode at start
(the staged /etc keeps its sources' mtimes), `run` trusts a cached wall probe only when it is
its own (`check` always probes live), and what the run leaves for after its result (cgroup,
workspace, namespaces) is gone afterwards even when the process exits at once."""
import glob
import json
import os
import resource
import stat
import tempfile
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import EXECBOX, SKIP, Tests, run_json  # noqa: E402

J = ["-b", "jail"]


def stage_dir():
    if os.geteuid() == 0:
        return "/run/execbox/jail"
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", f"execbox-jail-{os.geteuid()}")


# The probe cache's key holds the caller's hard limits: runs with this odd RLIMIT_CORE maximum
# share a cache entry with no other execbox on this machine (a parallel test or another user of
# the stage never takes our tampered file: theirs has another key, so it misses).
CORE_HARD = 4096 * 1237


def own_key():
    resource.setrlimit(resource.RLIMIT_CORE, (0, CORE_HARD))


def keyed(args):
    return subprocess.run([EXECBOX] + args, capture_output=True, text=True, timeout=120,
                          preexec_fn=own_key)


def jail(code, *args):
    res, _ = run_json(J + list(args) + ["-c", code], timeout=120)
    assert res["exit_code"] == 0, f"exit {res['exit_code']}: {res['stderr'][-1500:]}"
    return res


class JailColdStart(Tests):
    def test_python_start_compiles_no_bytecode(self):
        # A second interpreter inside the sandbox, without -B and with -v: every module it
        # imports at start must come from a cached .pyc that matches its source. A stale one
        # shows as "bytecode is stale", a compile as "code object from" a .py, and the failed cache
        # write into the read-only /usr as "could not create".
        r = jail("import subprocess, sys\n"
                 "p = subprocess.run(['/usr/bin/python3', '-v', '-c', 'pass'],\n"
                 "                   capture_output=True, text=True)\n"
                 "sys.stdout.write(p.stderr)\n")
        log = r["stdout"]
        assert "matches /usr/lib/python3" in log, log[-1500:]  # the log is what we think
        assert "sitecustomize" in log, "this host's python has a sitecustomize: " + log[-800:]
        bad = [ln for ln in log.splitlines()
               if "bytecode is stale" in ln or
               (ln.startswith("# code object from ") and not ln.endswith(".pyc'")) or
               "could not create" in ln or ln.startswith("# created ")]
        assert not bad, "\n".join(bad)


    def test_run_trusts_only_its_own_probe_cache(self):
        # One file per key (.probe-<hash>): ours is the one whose key holds our odd hard limit.
        probe = None
        usable_at = 32  # struct execbox_check: backend[32], then usable (lib/jail/cache.c)

        def own_file():
            for f in glob.glob(os.path.join(stage_dir(), ".probe-*")):
                try:
                    with open(f, "rb") as fh:
                        if str(CORE_HARD).encode() in fh.read():
                            return f
                except OSError:
                    pass
            return None

        def poisoned(tamper=None):
            """Probes live with our key (`check` stores its report) until the cache holds our
            report, then says the jail is not usable here in it; tamper then changes the file.
            Another execbox storing its report in between (a parallel test) is retried."""
            nonlocal probe
            for _ in range(10):
                r = keyed(["check", "-b", "jail"])
                assert "status: ready" in r.stdout, r.stdout
                probe = own_file()
                if probe is None:
                    continue
                st = os.lstat(probe)
                assert st.st_uid == os.geteuid() and (st.st_mode & 0o7777) == 0o600, oct(st.st_mode)
                with open(probe, "r+b") as f:
                    data = bytearray(f.read())
                    if str(CORE_HARD).encode() not in data:
                        continue  # not ours any more
                    assert data[usable_at] == 1
                    data[usable_at] = 0
                    f.seek(0)
                    f.write(data)
                if tamper:
                    tamper()
                return
            raise AssertionError("the probe cache never held our report")

        # Ours, valid and young: trusted (the run refuses, as a probe saying so would make it).
        for _ in range(5):
            poisoned()
            r = keyed(["run", "-b", "jail", "-c", "pass"])
            if r.returncode != 0:
                break
        assert r.returncode == 125 and "not usable" in r.stderr, (r.returncode, r.stderr)
        # `check` asks the kernel, whatever the cache says, and puts the truth back.
        poisoned()
        c = keyed(["check", "-b", "jail"])
        assert "status: ready" in c.stdout, c.stdout
        r = keyed(["run", "-b", "jail", "-c", "pass"])
        assert r.returncode == 0, r.stderr

        # Not ours in any way: ignored, the run probes live.
        def chmod():
            os.chmod(probe, 0o644)

        def chown():
            os.chown(probe, 65534, 65534)

        def symlink():
            fd, other = tempfile.mkstemp(dir=stage_dir())
            os.close(fd)
            os.rename(probe, other)
            os.symlink(other, probe)
            self.cleanup_link = other

        def hardlink():
            other = probe + ".link"
            os.link(probe, other)
            self.cleanup_link = other

        # After each: the run probed live and put its own report back (a regular file of ours,
        # 0600, one link). Another execbox re-staging meanwhile (jail_walls' restage tests) swaps
        # the whole stage directory, report included, for a new one: that round proves nothing
        # and is redone; a report missing from the same directory is a failure.
        def stage_ino():
            return os.stat(stage_dir()).st_ino

        tampers = [chmod, symlink, hardlink] + ([chown] if os.geteuid() == 0 else [])
        for t in tampers:
            for _ in range(5):
                self.cleanup_link = None
                before = stage_ino()
                try:
                    poisoned(t)
                    r = keyed(["run", "-b", "jail", "-c", "pass"])
                    assert r.returncode == 0, (t.__name__, r.stderr)
                finally:
                    if self.cleanup_link and os.path.lexists(self.cleanup_link):
                        os.unlink(self.cleanup_link)  # else it left with a swapped-out stage
                if stage_ino() != before:
                    continue  # re-staged during the round: the tamper may never have been seen
                try:
                    st = os.lstat(probe)
                except FileNotFoundError:
                    raise AssertionError(f"{t.__name__}: the run left no report of its own")
                assert (st.st_uid == os.geteuid() and stat.S_ISREG(st.st_mode) and
                        (st.st_mode & 0o7777) == 0o600 and st.st_nlink == 1), (t.__name__, st)
                break
            else:
                raise AssertionError(f"{t.__name__}: re-staged under every one of 5 runs")

    def test_a_host_with_2000_extra_mounts(self):
        # A host with thousands of mounts (a Kubernetes node), made in a private mount namespace
        # of this test: the sandbox still works and sees only its own dozen mounts (whether the
        # cost of a run grows with the host's count is bench/jail.sh's to measure). As root the
        # run joins the jail's prepared namespace, so it copies none of them.
        if os.geteuid() != 0:
            print("  (skipped: needs root to mount)")
            return
        script = ("set -e\n"
                  "mount --make-rprivate /\n"
                  "mount -t tmpfs -o size=1m,nr_inodes=65536 tmpfs /mnt\n"
                  "for i in $(seq 2000); do mkdir /mnt/m$i; "
                  "mount -t tmpfs -o size=4k tmpfs /mnt/m$i; done\n"
                  "wc -l < /proc/self/mountinfo >&2\n"
                  'exec "$@"\n')
        code = "print(sum(1 for _ in open('/proc/self/mountinfo')))"
        p = subprocess.run(["unshare", "-m", "bash", "-c", script, "-", EXECBOX, "run", "--json",
                            "-b", "jail", "-c", code], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-1500:]
        assert int(p.stderr.split()[0]) > 2000, p.stderr
        res = json.loads(p.stdout)
        assert res["exit_code"] == 0, res["stderr"]
        assert int(res["stdout"]) < 30, res["stdout"]

    def test_nothing_left_when_killed_right_after_the_result(self):
        # The parent hands the result back before init's exit (which tears the namespaces
        # down); the run's cgroup must already be gone by then, and init must not outlive
        # us: kill -9 the CLI the moment its result is out, and look for what is left.
        for _ in range(3):
            p = subprocess.Popen([EXECBOX, "run", "--json", "-b", "jail", "-c", "print(6 * 7)"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out = p.stdout.readline()
            p.kill()
            p.wait()
            assert b'"stdout":"42\\n"' in out.replace(b" ", b""), out[:300]
            time.sleep(0.2)
            tag = f"execbox-{p.pid}-"
            left = [d for d in glob.glob("/sys/fs/cgroup/**/" + tag + "*", recursive=True)]
            assert not left, left
            procs = []
            for f in glob.glob("/proc/[0-9]*/cgroup"):
                try:
                    if tag in open(f).read():
                        procs.append(f)
                except OSError:
                    pass
            assert not procs, procs

    def test_cgroup_gone_when_the_cli_exits(self):
        for _ in range(3):
            p = subprocess.Popen([EXECBOX, "run", "-b", "jail", "-c", "pass"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
            left = glob.glob(f"/sys/fs/cgroup/**/execbox-{p.pid}-*", recursive=True)
            assert not left, left

if __name__ == "__main__":
    if not os.path.exists("/proc/self/ns/user"):
        print("no user namespaces")
        sys.exit(SKIP)
    JailColdStart().main()
