# SPDX-License-Identifier: MIT
"""bench/tpl_faults.py - page faults of a template run against a bare fork, for bench/tpl_faults.sh.

A fork of a preloaded interpreter pays for every page of its parent it writes (copy-on-write),
and CPython writes an object whenever it uses it (its reference count): the faults a run takes
are most of what a template run costs beyond the fork itself. They are counted exactly, not
timed, so two builds compare without noise.

  python3 bench/tpl_faults.py serve PORT RUNS   the minor faults of a run through
      `execbox serve` on 127.0.0.1:PORT, read from /proc/self/stat by the program itself: at its
      first line (the fork, the walls, the bootstrap), and after print(1) or a pandas
      describe() (RUNS each, 100 ms apart); prints the medians.
  python3 bench/tpl_faults.py bare PRELOAD      the same two counts in a bare os.fork() child of
      a process that imported PRELOAD (gc.freeze() after, as a template does), and what one
      fault costs this machine: microseconds per page written in a fork (copy-on-write) and
      per fresh page, over 64 MiB.
"""
import gc
import json
import mmap
import os
import statistics
import sys
import time
import urllib.request

PROBE = "int(open('/proc/self/stat').read().split()[9])"
PROGRAMS = {
    "print(1)": "print(1)",
    "pandas describe()": "import pandas as pd\n"
                         "pd.DataFrame({'a': range(100)}).describe().loc['mean', 'a']",
}


def wrapped(program):
    return f"a = {PROBE}\n{program}\nb = {PROBE}\nprint('faults', a, b)\n"


def faults_of(stdout):
    last = stdout.strip().splitlines()[-1].split()
    if last[0] != "faults":
        raise SystemExit(f"unexpected output: {stdout!r}")
    return int(last[1]), int(last[2])


def serve(port, runs):
    for name, program in PROGRAMS.items():
        body = json.dumps({"code": wrapped(program)}).encode()
        got = []
        for _ in range(runs):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/execute", data=body,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=30) as r:
                res = json.load(r)
            if res.get("exit_code") != 0:
                raise SystemExit(f"run failed: {res}")
            got.append(faults_of(res["stdout"]))
            time.sleep(0.1)
        report(name, got)


def report(name, got):
    first = statistics.median(a for a, _ in got)
    end = statistics.median(b for _, b in got)
    print(f"  {name:<18} faults at the first line {first:6.0f}   after the program {end:6.0f}")


def bare(preload):
    for m in filter(None, preload.split(",")):
        __import__(m)
    gc.collect()
    gc.freeze()
    for name, program in PROGRAMS.items():
        code = compile(wrapped(program), "/code/main.py", "exec")
        got = []
        for _ in range(5):
            rd, wr = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(rd)
                os.dup2(wr, 1)
                exec(code, {"__name__": "__main__"})
                sys.stdout.flush()
                os._exit(0)
            os.close(wr)
            with os.fdopen(rd) as f:
                out = f.read()
            os.waitpid(pid, 0)
            got.append(faults_of(out))
        report(name, got)
    size = 64 << 20
    m = mmap.mmap(-1, size)
    for i in range(0, size, 4096):
        m[i] = 1
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        t = time.thread_time_ns()
        for i in range(0, size, 4096):
            m[i] = 2
        os.write(wr, str((time.thread_time_ns() - t) / 1e3 / (size // 4096)).encode())
        os._exit(0)
    os.close(wr)
    cow = float(os.read(rd, 64))
    os.close(rd)
    os.waitpid(pid, 0)
    fresh = mmap.mmap(-1, size)
    t = time.thread_time_ns()
    for i in range(0, size, 4096):
        fresh[i] = 1
    new = (time.thread_time_ns() - t) / 1e3 / (size // 4096)
    print(f"  one fault here: {cow:.2f} us a page written in a fork, {new:.2f} us a fresh page")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[1] == "bare":
        bare(sys.argv[2])
    else:
        raise SystemExit(__doc__)
