# SPDX-License-Identifier: MIT
"""Shared helpers for integration tests: run the built `execbox` and parse its JSON."""
import json
import os
import re
import subprocess
import sys

EXECBOX = os.environ.get("EXECBOX") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "execbox")
SOURCE = os.environ.get("EXECBOX_SOURCE") or os.path.join(os.path.dirname(__file__), "..", "..")
SKIP = 77
# The pid of every execbox that run() started: what this test may call its own (the names of
# a run's cgroups start with its execbox's pid), as against a parallel test's.
STARTED = []


def session_fits(args):
    """Whether a `run` can go through a session cell (EXECBOX_TEST_SESSION=1): Python, no host
    workspace, no network allow-list, not another backend."""
    a = list(args)
    for i, x in enumerate(a):
        nxt = a[i + 1] if i + 1 < len(a) else ""
        if x in ("-l", "--language") and nxt not in ("python", "py", "python3"):
            return False
        if x.startswith("--language=") and x.split("=", 1)[1] not in ("python", "py", "python3"):
            return False
        if x in ("-b", "--backend") and nxt != "jail":
            return False
        if x in ("-w", "--workspace", "--network", "--allow-host") or \
                x.startswith(("--workspace=", "--backend=", "--network=")):
            return False
        if x.endswith((".js", ".sh")) and not x.startswith("-"):
            return False
    return True


# What execbox leaves mounted on the host by design (docs/jail.md, "Prepared mount namespace";
# lib/jail/mntpin.h): its pins' own tmpfs and at most PINS_MAX nsfs files of mount namespaces
# in it, "<16 hex>.<ms>". Anything else of ours mounted on the host is a leak.
PIN_DIR = "/run/execbox/mntns"
PINS_MAX = 4  # EB_MNTNS_PINS_MAX
_PIN_RE = re.compile(r"^/run/execbox/mntns/[0-9a-f]{16}\.[0-9]+$")


def split_pins(mountinfo_lines):
    """(pins, rest): the mountinfo lines that are exactly the documented pin (the tmpfs at
    PIN_DIR, mode 0700, and mount-namespace files in it), and all the others."""
    pins, rest = [], []
    for line in mountinfo_lines:
        f = line.split()
        fstype = f[f.index("-") + 1]
        if (f[4] == PIN_DIR and fstype == "tmpfs" and "mode=700" in f[-1]) or (
                _PIN_RE.match(f[4]) and fstype == "nsfs" and f[3].startswith("mnt:[")):
            pins.append(line)
        else:
            rest.append(line)
    return pins, rest


def check_pins(pins):
    """The pin is bounded: at most PINS_MAX namespaces, every one in our tmpfs."""
    ns = [p for p in pins if p.split()[4] != PIN_DIR]
    if len(ns) > PINS_MAX:
        raise AssertionError(f"more than {PINS_MAX} pinned mount namespaces: {ns}")
    if ns and not any(p.split()[4] == PIN_DIR for p in pins):
        raise AssertionError(f"pinned namespaces outside execbox's tmpfs: {ns}")


def run(args, input=None, timeout=120, env=None):
    """Runs `execbox ARGS...`; returns CompletedProcess with text stdout/stderr. With
    EXECBOX_TEST_WARM=1 every `run` goes through a warm sandbox (`run --warm`), so that a suite
    proves the same behaviour through the pool; with EXECBOX_TEST_SESSION=1 every Python `run`
    that a session can take runs as a session cell (`run --rich`)."""
    args = list(args)
    if os.environ.get("EXECBOX_TEST_WARM") == "1" and args[:1] == ["run"]:
        args = ["run", "--warm"] + args[1:]
    if os.environ.get("EXECBOX_TEST_SESSION") == "1" and args[:1] == ["run"] and \
            session_fits(args):
        args = ["run", "--rich"] + args[1:]
    text = isinstance(input, str) or input is None
    with subprocess.Popen([EXECBOX] + list(args), stdin=subprocess.PIPE if input is not None
                          else None, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, text=text) as p:
        STARTED.append(p.pid)
        try:
            out, err = p.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def run_json(args, **kw):
    """Runs `execbox run --json ARGS...` and returns (result dict, CompletedProcess)."""
    p = run(["run", "--json"] + list(args), **kw)
    try:
        return json.loads(p.stdout), p
    except json.JSONDecodeError as e:
        raise AssertionError(f"not JSON ({e}): rc={p.returncode} stdout={p.stdout[:500]!r} "
                             f"stderr={p.stderr[:500]!r}")


def check(cond, msg=""):
    if not cond:
        raise AssertionError(msg)


def eq(a, b, what=""):
    if a != b:
        raise AssertionError(f"{what}: {a!r} != {b!r}")


class Tests:
    """Minimal runner: every method named test_* runs; prints 'N passed, N failed'.

    With CHECK_TEMP_LEFTOVERS, the tests' own temporary files and directories (Python's
    tempfile) go to a private directory for the run, and anything still in it at the end fails
    the suite: a test must clean up after itself."""

    CHECK_TEMP_LEFTOVERS = False

    def main(self):
        if not self.CHECK_TEMP_LEFTOVERS:
            return self._main()
        import shutil
        import tempfile
        root = tempfile.mkdtemp(prefix=f"execbox-it-{type(self).__name__}-")
        saved, tempfile.tempdir = tempfile.tempdir, root
        try:
            self._main(exit=False)
        finally:
            tempfile.tempdir = saved
            left = sorted(os.listdir(root))
            shutil.rmtree(root, ignore_errors=True)
        if left:
            print(f"FAIL the tests left temporary files behind: {left}")
            self.failed += 1
        print(f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped")
        if self.failed:
            sys.exit(1)
        if self.passed == 0 and self.skipped:
            sys.exit(SKIP)

    def _main(self, exit=True):
        names = sorted(n for n in dir(self) if n.startswith("test_"))
        only = sys.argv[1:]
        passed = failed = skipped = 0
        for n in names:
            if only and n not in only:
                continue
            try:
                getattr(self, n)()
                print(f"ok   {n}", flush=True)
                passed += 1
            except SkipTest as e:
                print(f"skip {n}: {e}", flush=True)
                skipped += 1
            except Exception as e:  # noqa: BLE001 - report every failure and go on
                import traceback
                print(f"FAIL {n}: {e}", flush=True)
                traceback.print_exc()
                failed += 1
        self.passed, self.failed, self.skipped = passed, failed, skipped
        if not exit:
            return
        print(f"{passed} passed, {failed} failed, {skipped} skipped")
        if failed:
            sys.exit(1)
        if passed == 0 and skipped:
            sys.exit(SKIP)


class SkipTest(Exception):
    pass
