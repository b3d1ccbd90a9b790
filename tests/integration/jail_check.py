# SPDX-License-Identifier: MIT
"""`execbox check -b jail` proves no_new_privs, the capability drop and the rlimits by doing
them in a child and reading them back, as it does for the other walls: where the host forbids
one, check says so (and the backend is unusable), instead of reporting it as working."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from common import SKIP, Tests  # noqa: E402


def check(prefix):
    p = subprocess.run(prefix + [common.EXECBOX, "check", "-b", "jail"], capture_output=True,
                       text=True, timeout=60)
    walls = {}
    for line in p.stdout.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0] in ("ok", "MISS"):
            walls[parts[1]] = (parts[0], parts[2])
    return p, walls


class Check(Tests):
    def test_all_proven_here(self):
        p, w = check([])
        for name in ("no_new_privs", "capabilities", "rlimits"):
            assert w[name][0] == "ok", (name, p.stdout)

    def test_rlimit_the_host_forbids(self):
        # A hard file-size limit below the policy's: a sandbox could not set its own.
        p, w = check(["prlimit", "--fsize=1000:1000"])
        assert w["rlimits"][0] == "MISS" and "cannot be set" in w["rlimits"][1], p.stdout
        assert p.returncode == 1 and "status: unusable" in p.stdout, (p.returncode, p.stdout)

    def test_capabilities_that_cannot_be_dropped(self):
        # Without CAP_SETPCAP the bounding set cannot be emptied.
        p, w = check(["setpriv", "--bounding-set=-setpcap", "--inh-caps=-setpcap"])
        assert w["capabilities"][0] == "MISS", p.stdout
        assert w["no_new_privs"][0] == "ok", p.stdout  # probed on its own
        assert p.returncode == 1, p.stdout


if __name__ == "__main__":
    if os.geteuid() != 0 or not shutil.which("prlimit") or not shutil.which("setpriv"):
        print("skip: needs root, prlimit and setpriv")
        sys.exit(SKIP)
    Check().main()
