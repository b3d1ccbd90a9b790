# SPDX-License-Identifier: MIT
"""Attacks on a caller's host workspace (`-w DIR`) through the jail, each checked on the host:
the directory's owner is never changed (an id-mapped mount, no chown to nobody and back), the
code's files belong to the directory's owner, no setuid or setgid bit ever lands in it (by
chmod, by the mode of open, creat, mkdir or mknod, or by openat2), the directory itself keeps
its mode, a kill -9 of execbox mid-run changes nothing, and system directories are refused."""
import glob
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from common import SKIP, Tests, run_json  # noqa: E402

SPECIAL = stat.S_ISUID | stat.S_ISGID


def special_files(root):
    """Every path under root (root included) with a setuid or setgid bit."""
    found = []
    for d, dirs, files in os.walk(root):
        for n in [d] + [os.path.join(d, x) for x in dirs + files]:
            st = os.lstat(n)
            if st.st_mode & SPECIAL:
                found.append((n, oct(st.st_mode)))
    return found


class Workspace(Tests):
    def setUp(self, owner=(0, 0), mode=0o700):
        self.ws = tempfile.mkdtemp(prefix="eb-hws-")
        os.chown(self.ws, *owner)
        os.chmod(self.ws, mode)
        return self.ws

    def jail(self, code, *args):
        res, p = run_json(["-b", "jail", "-w", self.ws] + list(args) + ["-c", code], timeout=120)
        return res

    def check_unharmed(self, owner, mode):
        st = os.stat(self.ws)
        assert (st.st_uid, st.st_gid) == owner, ("owner changed", st.st_uid, st.st_gid)
        assert stat.S_IMODE(st.st_mode) == mode, ("mode changed", oct(st.st_mode))
        assert special_files(self.ws) == [], special_files(self.ws)

    def done(self):
        shutil.rmtree(self.ws, ignore_errors=True)

    def test_chmod_of_the_workspace_root(self):
        self.setUp(mode=0o700)
        try:
            r = self.jail("import os\n"
                          "for m in (0o7777, 0o4700, 0o2700):\n"
                          "    try: os.chmod('/workspace', m); print('set', oct(m))\n"
                          "    except OSError as e: print('refused', e.errno)\n"
                          "os.chmod('/workspace', 0o777); print('rwx', oct(os.stat('/workspace').st_mode))\n")
            assert r["exit_code"] == 0, r
            assert r["stdout"].splitlines()[:3] == ["refused 1"] * 3, r["stdout"]
            self.check_unharmed((0, 0), 0o700)
        finally:
            self.done()

    def test_setuid_by_every_call(self):
        self.setUp(owner=(0, 0), mode=0o755)
        try:
            code = r"""
import ctypes, os, stat
libc = ctypes.CDLL(None, use_errno=True)
def report(what, fn):
    try:
        fn(); print(what, 'allowed')
    except OSError as e:
        print(what, 'refused', e.errno)
def sys(nr, *a):
    r = libc.syscall(nr, *a)
    if r < 0:
        raise OSError(ctypes.get_errno(), 'syscall %d' % nr)
open('f', 'w').write('#!/bin/sh\n')
report('chmod', lambda: os.chmod('f', 0o4755))
report('chmod-g', lambda: os.chmod('f', 0o2755))
fd = os.open('f', os.O_RDONLY)
report('fchmod', lambda: os.fchmod(fd, 0o6755))
report('fchmodat', lambda: sys(268, -100, b'f', 0o4755))
report('fchmodat2', lambda: sys(452, -100, b'f', 0o4755, 0))
report('open', lambda: os.close(os.open('o', os.O_CREAT | os.O_WRONLY, 0o4755)))
report('openat', lambda: sys(257, -100, b'oa', os.O_CREAT | os.O_WRONLY, 0o6755))
report('creat', lambda: sys(85, b'c', 0o4755))
report('mkdir', lambda: os.mkdir('d', 0o2755))
report('mkdirat', lambda: sys(258, -100, b'da', 0o6755))
report('mknod', lambda: os.mknod('n', stat.S_IFREG | 0o4755))
report('mknodat', lambda: sys(259, -100, b'na', stat.S_IFREG | 0o2755, 0))
how = (ctypes.c_uint64 * 3)(os.O_CREAT | os.O_WRONLY, 0o4755, 0)
report('openat2', lambda: sys(437, -100, b'o2', ctypes.byref(how), 24))
report('plain', lambda: os.close(os.open('p', os.O_CREAT | os.O_WRONLY, 0o755)))
os.mkdir('sub', 0o755); os.chmod('sub', 0o755)
"""
            r = self.jail(code)
            assert r["exit_code"] == 0, r
            lines = dict(l.split(" ", 1) for l in r["stdout"].splitlines())
            for call in ("chmod", "chmod-g", "fchmod", "fchmodat", "fchmodat2", "open", "openat",
                         "creat", "mknod", "mknodat"):
                assert lines[call] == "refused 1", (call, lines)
            assert lines["openat2"] == "refused 38", lines  # ENOSYS: callers fall back to openat
            assert lines["plain"] == "allowed", lines  # ordinary modes still work
            self.check_unharmed((0, 0), 0o755)
        finally:
            self.done()

    def test_files_belong_to_the_directory_owner(self):
        self.setUp(owner=(1234, 2345), mode=0o750)
        try:
            with open(os.path.join(self.ws, "theirs.txt"), "w") as f:
                f.write("data")
            os.chown(os.path.join(self.ws, "theirs.txt"), 1234, 2345)
            r = self.jail("import os\nprint(open('theirs.txt').read())\n"
                          "open('mine.txt', 'w').write('x'); os.mkdir('dir')\n"
                          "open('dir/deep.txt', 'w').write('y')\n"
                          "st = os.stat('/workspace'); print(st.st_uid, os.getuid())\n")
            assert r["exit_code"] == 0, r
            assert r["stdout"].splitlines()[0] == "data", r["stdout"]
            for n in ("mine.txt", "dir", "dir/deep.txt"):
                st = os.lstat(os.path.join(self.ws, n))
                assert (st.st_uid, st.st_gid) == (1234, 2345), (n, st.st_uid, st.st_gid)
            self.check_unharmed((1234, 2345), 0o750)
        finally:
            self.done()

    def test_owner_never_changes_during_a_run(self):
        self.setUp(owner=(0, 0), mode=0o700)
        try:
            p = subprocess.Popen([common.EXECBOX, "run", "-b", "jail", "-w", self.ws, "-c",
                                  "import time\nopen('started', 'w').close()\ntime.sleep(30)"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 60
                while not os.path.exists(os.path.join(self.ws, "started")):
                    assert time.monotonic() < deadline and p.poll() is None, "run did not start"
                    time.sleep(0.05)
                st = os.stat(self.ws)
                assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o700), (st.st_uid, oct(st.st_mode))
                # kill -9 of execbox mid-run: nothing is left to give back.
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=30)
            finally:
                if p.poll() is None:
                    p.kill()
            os.unlink(os.path.join(self.ws, "started"))
            self.check_unharmed((0, 0), 0o700)
        finally:
            self.done()

    def test_root_mode_put_back_after_kill_9(self):
        # The code changes the directory's permission bits (its owner through the mount may),
        # then execbox is killed before it can put them back: the next start does, by inode.
        self.setUp(owner=(0, 0), mode=0o700)
        try:
            p = subprocess.Popen([common.EXECBOX, "run", "-b", "jail", "-w", self.ws, "-c",
                                  "import os, time\nos.chmod('/workspace', 0o777)\n"
                                  "open('started', 'w').close()\ntime.sleep(30)"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 60
                while not os.path.exists(os.path.join(self.ws, "started")):
                    assert time.monotonic() < deadline and p.poll() is None, "run did not start"
                    time.sleep(0.05)
                assert stat.S_IMODE(os.stat(self.ws).st_mode) == 0o777  # the attack happened
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=30)
            finally:
                if p.poll() is None:
                    p.kill()
            os.unlink(os.path.join(self.ws, "started"))
            for stamp in glob.glob("/run/execbox/jail/.swept*"):
                os.unlink(stamp)  # the sweep runs at most once per interval: make it due
            res, _ = run_json(["-b", "jail", "-c", "print(1)"])
            assert res["exit_code"] == 0, res
            self.check_unharmed((0, 0), 0o700)
        finally:
            self.done()

    def test_system_directories_refused(self):
        for d in ("/", "/usr", "/etc", "/var", "/tmp", "/run", "/proc", "/dev", "/usr/share",
                  "/etc/ssl", "/boot", "/lib", "/sys/fs"):
            if not os.path.isdir(d):
                continue
            before = os.stat(d)
            p = common.run(["run", "-b", "jail", "-w", d, "-c", "print('ran')"])
            assert p.returncode != 0 and "ran" not in p.stdout, (d, p.returncode, p.stdout)
            assert "system directory" in p.stderr, (d, p.stderr)
            after = os.stat(d)
            assert (before.st_uid, before.st_mode) == (after.st_uid, after.st_mode), d


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skip: needs root (an id-mapped workspace mount)")
        sys.exit(SKIP)
    Workspace().main()
