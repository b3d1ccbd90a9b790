# SPDX-License-Identifier: MIT
"""bench/forklimit.py - the physical limit of fork-per-run on this machine, for bench/templates.sh:
a Python process imports the preload once (gc.freeze() after, as a template does), then runs
CODE in a bare fork per run (no namespaces, no cgroup, no walls: fork, exec the compiled cell with
stdout to a pipe, exit, reap), with CONC such processes forking at once.
With a fifth argument `child`, each fork compiles CODE itself, as a real run must compile the code
it was sent (the parent's compiled copy is then unused): a fork's first compile copies some 90 of
the parent's pages (the parser's and compiler's state) that a run sent new code cannot avoid.
Usage: python3 bench/forklimit.py PRELOAD CONC RUNS CODE [child]
prints runs/s and CPU ms per run (the forks' own, from os.times)."""
import gc
import os
import sys
import time


def main():
    preload, conc, runs, code = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    in_child = len(sys.argv) > 5 and sys.argv[5] == "child"
    for m in filter(None, preload.split(",")):
        __import__(m)
    compiled = compile(code, "/code/main.py", "exec")
    gc.collect()
    gc.freeze()
    per = runs // conc
    t0, c0 = time.perf_counter(), os.times()
    workers = []
    for _ in range(conc):
        pid = os.fork()
        if pid == 0:
            devnull = os.open(os.devnull, os.O_WRONLY)
            for _ in range(per):
                child = os.fork()
                if child == 0:
                    os.dup2(devnull, 1)
                    if in_child:
                        compiled = compile(code, "/code/main.py", "exec")
                    exec(compiled, {"__name__": "__main__"})
                    sys.stdout.flush()
                    os._exit(0)
                os.waitpid(child, 0)
            os._exit(0)
        workers.append(pid)
    for pid in workers:
        os.waitpid(pid, 0)
    el, c1 = time.perf_counter() - t0, os.times()
    cpu = (c1.children_user + c1.children_system) - (c0.children_user + c0.children_system)
    print(f"runs/s={per * conc / el:.1f} cpu_ms_per_run={cpu * 1e3 / (per * conc):.2f}")


if __name__ == "__main__":
    main()
