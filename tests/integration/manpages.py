# SPDX-License-Identifier: MIT
"""The manual pages the build makes (scripts/manpages.sh, help2man): execbox(1) and one page per
command, each rendering without warnings under man(1) and naming every long option its
command's --help names; installed, `man` finds them."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import EXECBOX, SKIP, Tests  # noqa: E402

BUILD = os.environ.get("EXECBOX_BUILD") or os.path.dirname(EXECBOX)
MAN1 = os.path.join(BUILD, "man", "man1")


def commands():
    out = subprocess.run([EXECBOX, "--help"], capture_output=True, text=True, check=True).stdout
    block = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines() if line.strip()]


def render(page, env=None):
    e = dict(os.environ, MANWIDTH="200", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    e.update(env or {})
    return subprocess.run(["man", "--warnings", "-l", page], capture_output=True, text=True,
                          env=e, timeout=60)


class ManPages(Tests):
    def test_every_command_has_a_page_with_its_options(self):
        cmds = commands()
        assert "run" in cmds and "serve" in cmds, cmds
        pages = {"execbox": os.path.join(MAN1, "execbox.1")}
        pages.update({c: os.path.join(MAN1, f"execbox-{c}.1") for c in cmds})
        for cmd, page in pages.items():
            assert os.path.isfile(page), f"no page {page}"
            p = render(page)
            assert p.returncode == 0 and not p.stderr.strip(), (page, p.returncode, p.stderr)
            text = p.stdout.replace("\u2010", "-").replace("\u2212", "-")
            text = re.sub(r"-\n\s+", "-", text)  # a word hyphenated at a line's end
            args = [] if cmd == "execbox" else [cmd]
            helptext = subprocess.run([EXECBOX] + args + ["--help"], capture_output=True,
                                      text=True).stdout
            opts = sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", helptext)))
            missing = [o for o in opts if o not in text]
            print(f"  {os.path.basename(page)}: {len(opts)} options, missing {missing}",
                  flush=True)
            assert not missing, (page, missing)
            assert "SEE ALSO" in text and "execbox-run(1)" in text, page

    def test_installed_pages_are_found_by_man(self):
        prefix = tempfile.mkdtemp(prefix="execbox-man-")
        try:
            p = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix],
                               capture_output=True, text=True, timeout=300)
            assert p.returncode == 0, p.stderr
            mp = os.path.join(prefix, "share", "man")
            for name in ["execbox"] + [f"execbox-{c}" for c in commands()]:
                w = subprocess.run(["man", "-w", name], capture_output=True, text=True,
                                   env=dict(os.environ, MANPATH=mp))
                assert w.returncode == 0 and w.stdout.startswith(mp), (name, w.stdout, w.stderr)
        finally:
            shutil.rmtree(prefix, ignore_errors=True)


if __name__ == "__main__":
    if not shutil.which("man"):
        print("skip: man(1) is not installed (scripts/deps/core.apt lists man-db)")
        sys.exit(SKIP)
    ManPages().main()
