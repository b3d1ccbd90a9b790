# SPDX-License-Identifier: MIT
"""bench/sessions.py - sessions through the library (the release build's session_driver, a
JSON-lines client of the public API), pandas loaded:
  per-cell latency of `x += 1` (p50/p99 of the call as the client sees it, and of the cell's own
  execution_time), against in the same run a template one-shot run's floor (a bare fork of the
  same pandas-loaded interpreter, bench/forklimit.py) and a session cell that does nothing;
  memory per idle session (PSS of every process of the session's cgroups, and the session
  cgroup's own charge), and how many idle sessions that makes in 4 GiB, with N sessions really
  started.
Usage: python3 bench/sessions.py DRIVER [CELLS] [SESSIONS]"""
import glob
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Driver:
    def __init__(self, path, *args):
        self.p = subprocess.Popen([path] + list(args), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

    def __call__(self, **m):
        self.p.stdin.write(json.dumps(m) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def pss_of_pids(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def session_pids(owner):
    """Processes in the cgroups of execbox process owner's sandboxes, by cgroup (pids
    hierarchy on v1, the unified one on v2)."""
    groups = {}
    for d in glob.glob(f"/sys/fs/cgroup/pids/**/execbox-{owner}-*", recursive=True) or \
            glob.glob(f"/sys/fs/cgroup/**/execbox-{owner}-*", recursive=True):
        try:
            with open(d + "/cgroup.procs") as f:
                pids = [int(x) for x in f.read().split()]
        except OSError:
            continue
        if pids:
            groups[d] = pids
    return groups


def main():
    driver = sys.argv[1]
    cells = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    nsess = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    d = Driver(driver, "--preload", "numpy,pandas")
    s = d(op="new", policy={"timeout": 30})["s"]
    r = d(op="run", s=s, code="import pandas as pd\nimport numpy as np\n"
          "df = pd.DataFrame(np.random.rand(1000, 4), columns=list('abcd'))\nx = 0")
    assert r["exit_code"] == 0, r
    for _ in range(20):
        d(op="run", s=s, code="x += 1")
    rows = {}
    cases = (("x += 1", "x += 1", 0), ("x += 1", "x += 1", 0.02), ("pass", "pass", 0),
             ("df.describe()", "df.describe()", 0), ("df.describe()", "df.describe()", 0.05))
    for name, code, pace in cases:
        wall, inner = [], []
        n = cells if name != "df.describe()" else max(50, cells // 5)
        for _ in range(n):
            if pace:
                time.sleep(pace)  # the next cell's process is forked ahead: give it the time
            t = time.perf_counter()
            r = d(op="run", s=s, code=code)
            wall.append((time.perf_counter() - t) * 1e3)
            inner.append(r["execution_time"] * 1e3)
            assert r["exit_code"] == 0 and not r["rolled_back"], r
        label = f"`{name}`" + (f", paced {pace * 1e3:.0f} ms" if pace else ", back to back")
        rows[label] = (n, statistics.median(wall), pct(wall, 99), statistics.median(inner))
    assert d(op="run", s=s, code="x")["results"][0]["text"] == str(20 + 2 * cells)
    # The floor: a bare fork+run+reap of the same preloaded interpreter, no walls, sequential.
    fl = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "forklimit.py"), "numpy,pandas", "1",
                         "300", "x = 1"], capture_output=True, text=True).stdout.strip()
    print(f"cells in one session (numpy, pandas loaded), sequential:")
    print("| cell | calls | p50 ms (client) | p99 ms (client) | p50 ms (execution_time) |")
    print("| --- | --- | --- | --- | --- |")
    for name, (n, p50, p99, inner) in rows.items():
        print(f"| {name} | {n} | {p50:.2f} | {p99:.2f} | {inner:.2f} |")
    print(f"bare fork of the same interpreter, no walls (bench/forklimit.py, c=1): {fl}")
    d.close()

    # Idle sessions: memory each, and how many fit in 4 GiB.
    d = Driver(driver, "--preload", "numpy,pandas")
    owner = d.p.pid
    ids = []
    t0 = time.perf_counter()
    for _ in range(nsess):
        r = d(op="new", policy={"timeout": 30})
        assert "s" in r, r
        ids.append(r["s"])
        r = d(op="run", s=ids[-1], code="import pandas as pd\nimport numpy as np\n"
              "df = pd.DataFrame(np.random.rand(1000, 4))\nx = 1")
        assert r["exit_code"] == 0, r
    took = time.perf_counter() - t0
    time.sleep(1)
    groups = session_pids(owner)
    sess = {g: p for g, p in groups.items() if len(p) >= 2}  # init + state (templates: 2 too)
    pss = [pss_of_pids(p) for p in sess.values()]
    charged = []
    for g in sess:
        mem = g.replace("/pids/", "/memory/")
        for f in ("memory.usage_in_bytes", "memory.current"):
            try:
                with open(os.path.join(mem, f)) as fh:
                    charged.append(int(fh.read()))
                break
            except OSError:
                continue
    infos = [d(op="info", s=i) for i in ids]
    assert all(i["alive"] for i in infos), infos
    per = statistics.median(pss) if pss else 0
    print(f"\n{nsess} idle sessions (pandas loaded, a 1000x4 DataFrame each) started in "
          f"{took:.1f} s; {len(sess)} sandboxes with processes (the template's among them)")
    print(f"PSS per sandbox: median {per / 2**20:.1f} MiB, min {min(pss) / 2**20:.1f}, "
          f"max {max(pss) / 2**20:.1f}")
    if charged:
        print(f"memory cgroup charge per session: median {statistics.median(charged) / 2**20:.1f} MiB")
    total = sum(pss)
    print(f"all {len(sess)} together: {total / 2**20:.0f} MiB PSS -> "
          f"{int(4 * 2**30 / (total / max(1, len(sess))))} idle sessions in 4 GiB at this rate")
    for i in ids:
        d(op="free", s=i)
    d.close()


if __name__ == "__main__":
    main()
