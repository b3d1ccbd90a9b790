# SPDX-License-Identifier: MIT
# bench/gvisor_fork.py - the cost of a fork in a pandas-loaded Python: imports numpy and pandas,
# then forks N (default 30) children that exit at once, and prints the median of fork + exit +
# waitpid. Run it on the host and inside gVisor to compare (docs/backends.md, "gvisor"):
#   /usr/bin/python3 bench/gvisor_fork.py
#   runsc --root /tmp/runsc-root --platform=ptrace --network=none --ignore-cgroups do \
#       /usr/bin/python3 bench/gvisor_fork.py
import os, sys, time, statistics
t0 = time.perf_counter()
import pandas, numpy
imp = time.perf_counter() - t0
lat = []
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 30):
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    lat.append(time.perf_counter() - t)
rss = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0])
print(f"import {imp*1000:.0f} ms; fork+exit+wait median {statistics.median(lat)*1000:.2f} ms, min {min(lat)*1000:.2f}, max {max(lat)*1000:.2f} (n={len(lat)}), RSS {rss//1024} MiB")
