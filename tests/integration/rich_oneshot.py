# SPDX-License-Identifier: MIT
"""One-shot runs give their work back without a ritual (issue 24, item 4), on the real jail:
`files` says which files are inputs as given, inputs the run changed, or files it created."""
import base64
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import EXECBOX, SKIP, Tests, run  # noqa: E402
from serve import Server  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
SHOW = ("import matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3], [4, 1, 9])\n"
        "plt.show()\n")
SAVE = ("import matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3], [4, 1, 9])\n"
        "plt.savefig('/workspace/plot.png')\n")


def in_dir(d, args):
    """`execbox ARGS` with the current directory d."""
    p = subprocess.run([EXECBOX] + args, cwd=d, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=120)
    return p


class RichOneShotTests(Tests):
    CHECK_TEMP_LEFTOVERS = True

    def test_files_origin_input_changed_created(self):
        files = [{"path": "in/same.txt", "content": "as given"},
                 {"path": "in/edited.txt", "content": "before"},
                 {"path": "in/resized.bin", "content": base64.b64encode(b"\x00" * 10).decode(),
                  "encoding": "base64"}]
        code = ("open('/workspace/in/edited.txt', 'w').write('after!')\n"   # same size
                "open('/workspace/in/resized.bin', 'ab').write(b'x')\n"
                "open('/workspace/new.txt', 'w').write('made')\n")
        with Server() as s:
            for extra in ({}, {"rich_results": True}):
                st, _, r = s.execute(dict({"code": code, "files": files}, **extra))
                assert st == 200 and r["exit_code"] == 0, r
                origin = {f["path"]: f["origin"] for f in r["files"]}
                assert origin == {"in/same.txt": "input", "in/edited.txt": "changed",
                                  "in/resized.bin": "changed", "new.txt": "created"}, (extra, r)
            assert s.stop() == 0
        r = json.loads(run(["run", "--json", "-c",
                            "open('/workspace/a.csv', 'w').write('1')"]).stdout)
        assert r["files"] == [{"path": "a.csv", "size": 1, "mime": "text/csv",
                               "origin": "created"}], r


if __name__ == "__main__":
    chk = run(["check", "-b", "jail"])
    if "status: ready" not in chk.stdout:
        # A wall the kernel or this host's setup lacks (the check says which and why).
        print("skip: the jail is not complete here:\n" + chk.stdout)
        sys.exit(SKIP)
    RichOneShotTests().main()
