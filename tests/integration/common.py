# SPDX-License-Identifier: MIT
"""Shared helpers for integration tests: run the built `execbox` and parse its JSON."""
import json
import os
import subprocess
import sys

EXECBOX = os.environ.get("EXECBOX") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "execbox")
SOURCE = os.environ.get("EXECBOX_SOURCE") or os.path.join(os.path.dirname(__file__), "..", "..")
SKIP = 77


def run(args, input=None, timeout=120, env=None):
    """Runs `execbox ARGS...`; returns CompletedProcess with text stdout/stderr. With
    EXECBOX_TEST_WARM=1 every `run` goes through a warm sandbox (`run --warm`), so that a suite
    proves the same behaviour through the pool."""
    args = list(args)
    if os.environ.get("EXECBOX_TEST_WARM") == "1" and args[:1] == ["run"]:
        args = ["run", "--warm"] + args[1:]
    return subprocess.run([EXECBOX] + list(args), input=input, capture_output=True,
                          timeout=timeout, env=env, text=isinstance(input, str) or input is None)


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
    """Minimal runner: every method named test_* runs; prints 'N passed, N failed'."""

    def main(self):
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
        print(f"{passed} passed, {failed} failed, {skipped} skipped")
        if failed:
            sys.exit(1)
        if passed == 0 and skipped:
            sys.exit(SKIP)


class SkipTest(Exception):
    pass
