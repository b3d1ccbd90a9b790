# SPDX-License-Identifier: MIT
"""`execbox repl` driven through a pseudo-terminal, as a person types: state kept from one cell
to the next, a multi-line def, a failing cell (traceback, "(rolled back)", the variable
unchanged), Ctrl-C at the prompt and during a cell, %reset, a matplotlib plot saved as a PNG
file in the current directory, Ctrl-D ending with status 0; and the same cells piped in
without a terminal."""
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import SKIP, Tests, check, eq, run  # noqa: E402
from common import EXECBOX as _EXECBOX  # noqa: E402

EXECBOX = os.path.abspath(_EXECBOX)  # the repl runs in a directory of its own

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")


class Repl:
    """One `execbox repl` on a pty; everything it writes is kept (escape sequences and carriage
    returns removed) and searched from where the last expect() stopped."""

    def __init__(self, cwd, args=()):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.chdir(cwd)
                os.environ["TERM"] = "xterm"
                os.environ["HOME"] = cwd  # no ~/.editrc of the machine's
                os.execv(EXECBOX, [EXECBOX, "repl", *args])
            finally:
                os._exit(127)  # the child never returns into the tests
        self.out = ""
        self.pos = 0
        self.status = None

    def _read(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the other side closed
            data = b""
        if not data:
            return None
        self.out += ANSI.sub("", data.decode("utf-8", "replace"))
        return True

    def expect(self, pattern, timeout=60):
        """Waits for pattern (a regex) after the last match; returns the match."""
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        while True:
            m = rx.search(self.out, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = end - time.monotonic()
            if left <= 0 or self._read(left) is None:
                raise AssertionError(f"no {pattern!r} within {timeout} s; the repl wrote:\n"
                                     f"{self.out[self.pos - 200 if self.pos > 200 else 0:]}")

    def send(self, s):
        os.write(self.fd, s.encode())

    def cell(self, line):
        """Types a line at the prompt and Enter, and waits for the next prompt."""
        start = len(self.out)
        self.send(line + "\r")
        self.expect(r">>> ", timeout=60)
        return self.out[start:self.pos]

    def wait(self, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
                return self.status
            self._read(0.1)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise AssertionError(f"the repl did not exit within {timeout} s:\n{self.out[-500:]}")

    def close(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
        os.close(self.fd)


class ReplTests(Tests):
    CHECK_TEMP_LEFTOVERS = True

    def test_terminal(self):
        d = tempfile.mkdtemp(prefix="execbox-repl-")
        r = Repl(d)
        try:
            r.expect(r"state persists between cells")
            r.expect(r">>> ")
            r.cell("x = 41")
            out = r.cell("x + 1")
            check(re.search(r"^42$", out, re.M), f"the main result: {out!r}")
            # A def spans lines: '...' prompts, an empty line ends it.
            r.send("def twice(a):\r")
            r.expect(r"\.\.\. ")
            r.send("    return a * 2\r")
            r.expect(r"\.\.\. ")
            r.send("\r")
            r.expect(r">>> ")
            out = r.cell("print(twice(x))")
            check("82" in out, f"the def's result: {out!r}")
            # Open brackets continue the cell too, and it runs once they close.
            r.send("y = [1,\r")
            r.expect(r"\.\.\. ")
            r.cell("     2]")
            out = r.cell("print(sum(y))")
            check("3" in out, f"a bracketed cell: {out!r}")
            # A failing cell: the traceback, "(rolled back)", and x as before the cell.
            out = r.cell("x = 0; 1/0")
            check("ZeroDivisionError" in out and "Traceback" in out, f"the traceback: {out!r}")
            check("(rolled back)" in out, f"rolled back: {out!r}")
            out = r.cell("print(x)")
            check(re.search(r"^41$", out, re.M), f"x after the failed cell: {out!r}")
            # Ctrl-C at the prompt discards the line; the repl goes on.
            r.send("zzz = 1")
            time.sleep(0.2)
            r.send("\x03")
            r.expect(r"KeyboardInterrupt")
            r.expect(r">>> ")
            out = r.cell("print('zzz' in dir())")
            check("False" in out, f"the discarded line ran: {out!r}")
            # Ctrl-C during a cell cancels the cell, not the repl; the state is kept.
            r.send("x = 7; import time; time.sleep(60)\r")
            time.sleep(1.5)
            t0 = time.monotonic()
            r.send("\x03")
            r.expect(r"KeyboardInterrupt", timeout=20)
            r.expect(r"\(rolled back\)", timeout=20)
            r.expect(r">>> ")
            check(time.monotonic() - t0 < 15, "the cancel took too long")
            out = r.cell("print(x)")
            check(re.search(r"^41$", out, re.M), f"x after the cancelled cell: {out!r}")
            # A plot comes back as an image, saved in the current directory.
            r.cell("import matplotlib.pyplot as plt")
            out = r.cell("plt.plot([1, 4, 9])")
            m = re.search(r"saved to (execbox-out-\d+-1\.png)", out)
            check(m, f"no image saved: {out!r}")
            with open(os.path.join(d, m.group(1)), "rb") as f:
                eq(f.read(8), b"\x89PNG\r\n\x1a\n", "the saved file is a PNG")
            # %reset: a new session, x is gone.
            out = r.cell("%reset")
            check("new session" in out, f"%reset: {out!r}")
            out = r.cell("print(x)")
            check("NameError" in out, f"x after %reset: {out!r}")
            # Ctrl-D leaves with status 0.
            r.send("\x04")
            eq(r.wait(), 0, "exit status after Ctrl-D")
        finally:
            r.close()
            shutil.rmtree(d, ignore_errors=True)

    def test_exit_command(self):
        d = tempfile.mkdtemp(prefix="execbox-repl-")
        r = Repl(d)
        try:
            r.expect(r">>> ")
            r.send("%exit\r")
            eq(r.wait(), 0, "exit status after %exit")
        finally:
            r.close()
            shutil.rmtree(d, ignore_errors=True)

    def test_piped(self):
        """Without a terminal: no prompts, the same cells, the last one run at EOF."""
        code = "x = 41\nx + 1\ndef f(a):\n    return a * 2\n\nprint(f(x))\n1/0\nprint(x)"
        p = subprocess.run([EXECBOX, "repl"], input=code, capture_output=True, text=True,
                           timeout=120)
        # A cell failed, and without a terminal the caller must see that in the status.
        eq(p.returncode, 1, f"exit status (stderr {p.stderr!r})")
        eq(p.stdout.split(), ["42", "82", "41"], "stdout")
        check("ZeroDivisionError" in p.stderr and "(rolled back)" in p.stderr, p.stderr)
        check(">>>" not in p.stdout, "no prompts without a terminal")


    def test_piped_status(self):
        """Without a terminal the status says whether every cell worked: 0, or 1 after any
        failed cell, even when later cells work."""
        for code, want in (("x = 1\nprint(x)", 0), ("1/0\nprint(2)", 1),
                           ("import time; time.sleep(30)\nprint(2)", 1)):
            p = subprocess.run([EXECBOX, "repl", "-t", "2"], input=code, capture_output=True,
                               text=True, timeout=120)
            eq(p.returncode, want, f"exit status for {code!r} (stderr {p.stderr!r})")

    def test_help_lists_what_repl_takes(self):
        """Every sandbox flag `repl --help` lists is taken; the ones it refuses are not listed,
        and each is refused with the reason."""
        h = subprocess.run([EXECBOX, "repl", "--help"], capture_output=True, text=True,
                           timeout=30)
        eq(h.returncode, 0, "repl --help")
        sandbox = h.stdout[h.stdout.index("Sandbox options"):]
        listed = re.findall(r"^ {2}(?:-\w, )?(--[\w-]+)", sandbox, re.M)
        refused = {"--workspace": "/tmp", "--network": "none", "--allow-host": "example.com",
                   "--docker-host": "unix:///x", "--image": "python", "--runtime": "runc",
                   "--pull": "never", "--remote": "http://127.0.0.1:9", "--remote-token": "t",
                   "--e2b-template": "t", "--gvisor-platform": "ptrace"}
        for flag in refused:
            check(flag not in listed and f"{flag} " not in sandbox.split("\n\n")[0],
                  f"--help lists {flag}, which the repl refuses:\n{sandbox}")
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write("{}")
        values = {"--backend": ["jail"], "--timeout": ["5"], "--memory": ["256M"],
                  "--cpus": ["1"], "--pids": ["64"], "--workspace-size": ["64M"],
                  "--tmpfs": ["64M"], "--output-limit": ["1M"], "--file-size": ["64M"],
                  "--rootfs": ["/"], "--policy": [f.name], "--allow-degraded": []}
        try:
            check(listed, f"no flags found in:\n{sandbox}")
            for flag in listed:
                check(flag in values, f"--help lists {flag}: the test has no value for it")
                p = subprocess.run([EXECBOX, "repl", flag, *values[flag]], input="print(6*7)",
                                   capture_output=True, text=True, timeout=120)
                check(p.returncode == 0 and "42" in p.stdout,
                      f"repl {flag} (listed in --help): rc {p.returncode}, {p.stderr!r}")
        finally:
            os.unlink(f.name)
        for flag, value in [*refused.items(), ("--backend", "subprocess"), ("-w", "/tmp")]:
            p = subprocess.run([EXECBOX, "repl", flag, value], input="print(1)",
                               capture_output=True, text=True, timeout=60)
            check(p.returncode == 125 and "cannot be used" in p.stderr and p.stdout == "",
                  f"repl {flag} {value}: rc {p.returncode}, {p.stderr!r}")

    def test_exit_calls(self):
        """exit(), quit() and sys.exit(N) leave the repl as in Python's own, with status N."""
        d = tempfile.mkdtemp(prefix="execbox-repl-")
        try:
            for line, want in (("exit()", 0), ("quit()", 0), ("exit(4)", 4)):
                r = Repl(d)
                try:
                    r.expect(r">>> ")
                    r.cell("x = 1")
                    r.send(line + "\r")
                    eq(r.wait(), want, f"exit status after {line}")
                finally:
                    r.close()
            # sys.exit(3): the status, and why the cell was undone, then the repl ends with 3.
            r = Repl(d)
            try:
                r.expect(r">>> ")
                r.cell("import sys")
                r.send("sys.exit(3)\r")
                r.expect(r"exit status 3 \(rolled back: a cell that exits non-zero is undone\)")
                eq(r.wait(), 3, "exit status after sys.exit(3)")
            finally:
                r.close()
        finally:
            shutil.rmtree(d, ignore_errors=True)
        # Piped, too: nothing after the exit runs.
        for code, want in (("print(1)\nquit()\nprint(2)", 0),
                           ("import sys\nsys.exit(3)\nprint(2)", 3)):
            p = subprocess.run([EXECBOX, "repl"], input=code, capture_output=True, text=True,
                               timeout=120)
            eq(p.returncode, want, f"exit status for {code!r} (stderr {p.stderr!r})")
            eq(p.stdout.split(), ["1"] if want == 0 else [], f"stdout for {code!r}")

    def test_exit_status_says_why(self):
        """A cell that exits non-zero shows its status and why it was rolled back."""
        p = subprocess.run([EXECBOX, "repl"], input="x = 1\nimport sys; x = 2; sys.exit(3)",
                           capture_output=True, text=True, timeout=120)
        check("exit status 3 (rolled back: a cell that exits non-zero is undone)" in p.stderr,
              f"sys.exit(3): {p.stderr!r}")

    def test_input_says_why(self):
        """input() cannot read (a cell has no stdin), and the repl says so."""
        p = subprocess.run([EXECBOX, "repl"], input="name = input('name? ')\nprint('after')",
                           capture_output=True, text=True, timeout=120)
        check("EOFError" in p.stderr and "a cell has no stdin" in p.stderr, p.stderr)
        eq(p.stdout.split()[-1:], ["after"], "the repl goes on")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skip: sessions run in the jail, whose tests need root")
        sys.exit(SKIP)
    chk = run(["check"])
    if chk.returncode != 0:
        print(f"skip: the jail is not usable here: {chk.stdout}{chk.stderr}")
        sys.exit(SKIP)
    ReplTests().main()
