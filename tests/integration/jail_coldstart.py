# SPDX-License-Identifier: MIT
"""The jail's cold path does no avoidable work: Python inside compiles no bytecode at start
(the staged /etc keeps its sources' mtimes), and what the run leaves for after its result
(cgroup, workspace, namespaces) is gone afterwards even when the process exits at once."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import SKIP, Tests, run_json  # noqa: E402

J = ["-b", "jail"]


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


if __name__ == "__main__":
    if not os.path.exists("/proc/self/ns/user"):
        print("no user namespaces")
        sys.exit(SKIP)
    JailColdStart().main()
