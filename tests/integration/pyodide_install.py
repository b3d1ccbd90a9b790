# SPDX-License-Identifier: MIT
"""`cmake --install` of the build tree, as a new user runs it: the pyodide backend's setup
(install.sh, `npm ci` of the pinned Pyodide) runs on the installed directory and succeeds, into
an install prefix given at install time and into a DESTDIR staging tree; the installed
`execbox run -b pyodide` then prints 1. When that setup fails, cmake's warning carries install.sh's
exit status and its reason.

Pyodide comes from npm's cache (install.sh uses --prefer-offline): where it is not there and the
registry is unreachable, the parts that need it skip (77) saying so."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import EXECBOX, SkipTest, Tests  # noqa: E402

BUILD = os.environ.get("EXECBOX_BUILD") or os.path.join(os.path.dirname(EXECBOX))
CMAKE = shutil.which("cmake")
PYODIDE = os.path.join("share", "execbox", "pyodide")
# What npm says when it could neither find a package in its cache nor reach the registry.
OFFLINE = ("ENOTCACHED", "EAI_AGAIN", "ENOTFOUND", "ECONNREFUSED", "ETIMEDOUT", "ENETUNREACH")


def install(prefix, destdir=None, env=None):
    """`cmake --install BUILD --prefix PREFIX` (under DESTDIR when given): (rc, output)."""
    e = dict(env or os.environ)
    e.pop("DESTDIR", None)
    if destdir:
        e["DESTDIR"] = destdir
    p = subprocess.run([CMAKE, "--install", BUILD, "--prefix", prefix], env=e,
                       capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout + p.stderr


class InstallTests(Tests):
    def __init__(self):
        if not CMAKE:
            print("SKIP: no cmake on PATH")
            sys.exit(77)

    def check_setup(self, root, prefix, rc, out):
        """The pyodide setup ran in ROOT/PREFIX/share/execbox/pyodide, and its Pyodide runs."""
        assert rc == 0, out
        d = os.path.join(root + prefix if root else prefix, PYODIDE)
        for f in ("install.sh", "runner.mjs", "main.py", "package-lock.json"):
            assert os.path.exists(os.path.join(d, f)), (f, out)
        if "install.sh failed" in out:
            if "is not installed" in out:
                raise SkipTest(f"node or npm is missing here: {out[-400:]}")
            if any(w in out for w in OFFLINE):
                raise SkipTest(f"Pyodide is not in npm's cache and the registry is unreachable: "
                               f"{out[-400:]}")
            raise AssertionError(f"the pyodide setup failed:\n{out}")
        assert os.path.exists(os.path.join(d, "node_modules", "pyodide", "pyodide.mjs")), out
        assert os.path.exists(os.path.join(d, ".execbox-sha256")), out
        # The installed program; its built-in Pyodide directory is the configured prefix's, so
        # the staged one is named.
        exe = os.path.join(root + prefix if root else prefix, "bin", "execbox")
        env = dict(os.environ, EXECBOX_PYODIDE_DIR=d)
        p = subprocess.run([exe, "check", "-b", "pyodide"], env=env, capture_output=True,
                           text=True, timeout=120)
        if p.returncode != 0:
            raise SkipTest(f"the pyodide backend cannot run here:\n{p.stdout}{p.stderr}")
        p = subprocess.run([exe, "run", "-b", "pyodide", "-t", "90", "-c", "print(1)"], env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0 and p.stdout == "1\n", (p.returncode, p.stdout, p.stderr)

    def test_prefix_given_at_install_time(self):
        with tempfile.TemporaryDirectory(prefix="execbox-install-", dir="/var/tmp") as t:
            prefix = os.path.join(t, "usr")
            rc, out = install(prefix)
            self.check_setup(None, prefix, rc, out)
            # Again over the same tree: nothing to redo, and still no failure.
            rc, out = install(prefix)
            assert rc == 0 and "install.sh failed" not in out, out

    def test_destdir_staging(self):
        with tempfile.TemporaryDirectory(prefix="execbox-destdir-", dir="/var/tmp") as t:
            root, prefix = os.path.join(t, "stage"), "/opt/execbox-test"
            rc, out = install(prefix, destdir=root)
            self.check_setup(root, prefix, rc, out)
            assert not os.path.exists(prefix), "installed outside DESTDIR"

    def test_failed_setup_says_why(self):
        """Without node on PATH install.sh exits 77; the warning names that status and why."""
        with tempfile.TemporaryDirectory(prefix="execbox-install-", dir="/var/tmp") as t:
            path = os.path.join(t, "bin")
            os.mkdir(path)
            for tool in ("bash", "dirname"):
                os.symlink(shutil.which(tool), os.path.join(path, tool))
            rc, out = install(os.path.join(t, "usr"), env=dict(os.environ, PATH=path))
            assert rc == 0, out
            out = " ".join(out.split())  # cmake wraps a warning's lines
            assert "install.sh failed (exit status 77" in out, out
            assert "'node' is not installed" in out, out


if __name__ == "__main__":
    InstallTests().main()
