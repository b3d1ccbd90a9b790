# SPDX-License-Identifier: MIT
"""The memory cap (`-m`, default 256M) caps everything a jail run holds in RAM, its files in
/tmp, /dev/shm and a fresh /workspace (tmpfs) included: the attacks run for real, cold, warm
(`run --warm`, a template fork) and as a session cell (`run --rich`; a session lives on after
a cell's OOM, rolled back). Each bomb is bounded and runs behind the cgroup's cap."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import SKIP, Tests, run_json  # noqa: E402
from sessions_lib import Driver  # noqa: E402

CAP = 256 << 20
SLACK = 4 << 20  # the kernel's charge batching above the limit
MODES = {"cold": [], "warm": ["--warm"], "session": ["--rich"]}

ALLOC = ("x = bytearray({mib} << 20)\n"
         "for i in range(0, len(x), 4096): x[i] = 1\n"
         "print('allocated {mib} MiB')\n")
FILL_TMP = ("import errno\n"
            "n = 0\n"
            "try:\n"
            "    for i in range({files}):\n"
            "        with open(f'/tmp/f{{i}}', 'wb') as f:\n"
            "            for _ in range(20): f.write(b'x' * (1 << 20)); f.flush(); n += 1\n"
            "except OSError as e:\n"
            "    print('enospc' if e.errno == errno.ENOSPC else e, n)\n")


def jail(mode, code, *args):
    res, p = run_json(["-b", "jail"] + MODES[mode] + list(args) + ["-c", code], timeout=180)
    return res


class MemCap(Tests):
    def setup(self):
        if os.geteuid() != 0:
            sys.exit(SKIP)

    def check_oom(self, res, what):
        assert res["oom_killed"] and res["error"]["name"] == "MemoryLimit", (what, res["error"],
                                                                            res["exit_code"])
        assert "memory limit of 256 MiB" in res["error"]["value"], (what, res["error"])
        assert res["peak_memory_bytes"] <= CAP + SLACK, (what, res["peak_memory_bytes"])

    def test_allocating_beyond_the_cap_is_memory_limit(self):
        # Before: the cgroup allowed memory + /tmp + /dev/shm + /workspace (592 MiB), and
        # 505 MiB exited 0 with a peak of 542081024.
        for mode in MODES:
            res = jail(mode, ALLOC.format(mib=505))
            self.check_oom(res, mode)
            assert "allocated" not in res["stdout"], (mode, res["stdout"])

    def test_files_in_tmp_count_and_are_named(self):
        # /tmp larger than the cap is allowed; the cap wins: 200 MiB of files, then 150 MiB.
        code = FILL_TMP.format(files=10) + ALLOC.format(mib=150)
        for mode in MODES:
            res = jail(mode, code, "--tmpfs", "512M")
            self.check_oom(res, mode)
            msg = res["error"]["value"]
            assert "were files in /tmp" in msg, (mode, msg)
            mib = int(msg.split("(of which ")[1].split(" MiB")[0])
            assert 190 <= mib <= 210, (mode, msg)

    def test_tmp_beyond_its_size_is_enospc(self):
        # The file system's own size (64M default) still gives ENOSPC below the cap.
        for mode in MODES:
            res = jail(mode, FILL_TMP.format(files=10))
            assert not res["oom_killed"] and res["exit_code"] == 0, (mode, res["error"])
            words = res["stdout"].split()
            assert words[0] == "enospc" and 56 <= int(words[1]) <= 64, (mode, res["stdout"])
            assert res["peak_memory_bytes"] <= CAP + SLACK, (mode, res["peak_memory_bytes"])

    def test_session_lives_on_after_a_files_oom(self):
        d = Driver()
        try:
            s = d.new(policy={"memory": "256M", "tmpfs": "512M"})
            d.run(s, "kept = 41")
            r = d.run(s, FILL_TMP.format(files=10) + ALLOC.format(mib=150))
            assert r["oom_killed"] and r["error"]["name"] == "MemoryLimit", r
            assert r["rolled_back"], r
            assert "were files in /tmp" in r["error"]["value"], r["error"]
            assert r["peak_memory_bytes"] <= CAP + SLACK, r["peak_memory_bytes"]
            r = d.run(s, "print(kept + 1)")
            assert r["stdout"] == "42\n", r
        finally:
            d.close()


if __name__ == "__main__":
    t = MemCap()
    t.setup()
    t.main()
