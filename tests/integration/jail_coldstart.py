# SPDX-License-Identifier: MIT
"""The jail's cold path does no avoidable work: Python inside compiles no bytecode at start
(the staged /etc keeps its sources' mtimes), and what the run leaves for after its result
(cgroup, workspace, namespaces) is gone afterwards even when the process exits at once."""
import glob
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import EXECBOX, SKIP, Tests, run_json  # noqa: E402

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
