# SPDX-License-Identifier: MIT
"""The jail as an ordinary user (nobody, via setpriv): user namespaces still give every
namespace wall, but cgroups are not delegated, so `run` refuses (exit 125, the reason on
stderr) unless --allow-degraded, and then the result lists the missing walls."""
import glob
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from common import SKIP, Tests  # noqa: E402

SETPRIV = shutil.which("setpriv")
AS_NOBODY = [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups"] if SETPRIV else []
ENV = {"PATH": "/usr/bin:/bin", "TMPDIR": "/tmp"}


def nobody(*args):
    return subprocess.run(AS_NOBODY + [common.EXECBOX] + list(args), capture_output=True,
                          text=True, timeout=120, env=ENV)


class Unprivileged(Tests):
    def test_refuses_without_cgroups(self):
        p = nobody("run", "-b", "jail", "-c", "print('ran')")
        assert p.returncode == 125, (p.returncode, p.stdout, p.stderr)
        assert "ran" not in p.stdout
        assert "cgroup" in p.stderr and "allow_degraded" in p.stderr, p.stderr

    def test_degraded_run_lists_missing_walls(self):
        before = set(glob.glob("/tmp/execbox-ws-*"))
        p = nobody("run", "--json", "-b", "jail", "--allow-degraded", "-c",
                   "import os\nprint(os.getuid(), sorted(os.listdir('/')))\n"
                   "open('/workspace/f.txt', 'w').write('x')\n"
                   "try: open('/usr/x', 'w')\nexcept OSError as e: print('ro', e.errno)")
        import json
        r = json.loads(p.stdout)
        assert r["exit_code"] == 0, r
        lines = r["stdout"].splitlines()
        assert lines[0].startswith("1000 ") and "'usr'" in lines[0] and "'root'" not in lines[0], lines
        assert lines[1].startswith("ro "), lines
        assert {"cgroup memory", "cgroup pids", "cgroup cpu"} <= set(r["degraded"]), r["degraded"]
        assert [f["path"] for f in r["files"]] == ["f.txt"], r["files"]
        assert set(glob.glob("/tmp/execbox-ws-*")) == before  # the fresh workspace is gone

    def test_no_setuid_in_a_host_workspace(self):
        # Unprivileged too: no setuid or setgid bit by chmod or by a creating open's mode, and
        # the workspace directory keeps its own mode.
        import stat
        import tempfile
        ws = tempfile.mkdtemp(prefix="eb-unpriv-ws-")
        try:
            os.chown(ws, 65534, 65534)
            os.chmod(ws, 0o750)
            p = nobody("run", "--json", "-b", "jail", "--allow-degraded", "-w", ws, "-c",
                       "import os\nopen('f', 'w').close()\n"
                       "for what, fn in (('chmod', lambda: os.chmod('f', 0o4755)),\n"
                       "                 ('open', lambda: os.open('g', os.O_CREAT | os.O_WRONLY, 0o6755)),\n"
                       "                 ('root', lambda: os.chmod('/workspace', 0o2777))):\n"
                       "    try: fn(); print(what, 'allowed')\n"
                       "    except OSError as e: print(what, 'refused', e.errno)\n")
            import json
            r = json.loads(p.stdout)
            assert r["exit_code"] == 0, r
            assert r["stdout"].splitlines() == ["chmod refused 1", "open refused 1",
                                                "root refused 1"], r["stdout"]
            for d, dirs, files in os.walk(ws):
                for n in [d] + [os.path.join(d, x) for x in files]:
                    assert not os.lstat(n).st_mode & (stat.S_ISUID | stat.S_ISGID), n
            assert stat.S_IMODE(os.stat(ws).st_mode) == 0o750
        finally:
            shutil.rmtree(ws, ignore_errors=True)

    def test_check_says_why(self):
        p = nobody("check", "-b", "jail")
        assert p.returncode == 1 and "status: degraded" in p.stdout, p.stdout
        assert "MISS cgroup memory" in p.stdout and "not delegated" in p.stdout, p.stdout


if __name__ == "__main__":
    if os.geteuid() != 0 or not SETPRIV:
        print("skip: needs root and setpriv to become nobody")
        sys.exit(SKIP)
    chk = nobody("check", "-b", "jail")
    if "MISS user namespace" in chk.stdout or "unusable" in chk.stdout:
        print("skip: unprivileged user namespaces are not allowed here:\n" + chk.stdout)
        sys.exit(SKIP)
    Unprivileged().main()
