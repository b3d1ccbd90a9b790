# SPDX-License-Identifier: MIT
"""Scale-out on loopback: three `execbox serve` instances behind HAProxy, started with the
shipped deploy/haproxy/haproxy.cfg (only its listen and server addresses rewritten to loopback
ports), take 5,000 requests at concurrency 32 while one instance is drained (SIGTERM) and
restarted: every request must come back 200 with its own output (0 lost, 0 wrong).

The instances use the subprocess backend with trivial bash programs, so that the test measures
the balancing and the drain, not sandbox start-up (the jail's walls are proven elsewhere).
Also: `haproxy -c` accepts the shipped file as it is, without a warning."""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import SOURCE, SKIP, Tests  # noqa: E402
from serve import Server, wait_for  # noqa: E402

CFG = os.path.join(SOURCE, "deploy", "haproxy", "haproxy.cfg")
# 5,000 in the dev build; the ASan build's instances fork several times slower, so there the
# same test runs 1,000 (the drain still happens a third of the way in).
ASAN = os.path.basename(os.path.normpath(os.environ.get("EXECBOX_BUILD", ""))) == "build-asan"
TOTAL = int(os.environ.get("SCALEOUT_REQUESTS", "1000" if ASAN else "5000"))
CONCURRENCY = 32
GRACE = "3"  # > the shipped check's inter x fall (2 s)
TOKEN = "scaleout-token"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def instance(port):
    return Server("--backend", "subprocess", "--token", TOKEN, "--workers", "4", "--queue", "64",
                  "--drain-grace", GRACE, listen=f"127.0.0.1:{port}")


def rewrite(cfg, front, ports):
    """The shipped file with loopback addresses; nothing else changes."""
    out, n = [], 0
    for line in cfg.splitlines():
        if re.match(r"\s*bind :8080\s*$", line):
            line = line.replace(":8080", f"127.0.0.1:{front}")
        m = re.match(r"(\s*server \S+ )\S+(.*)$", line)
        if m:
            line = f"{m.group(1)}127.0.0.1:{ports[n]}{m.group(2)}"
            n += 1
        out.append(line)
    assert n == len(ports), f"the shipped file lists {n} servers, the test starts {len(ports)}"
    return "\n".join(out) + "\n"


class Haproxy:
    def __init__(self, cfg_text):
        self.dir = tempfile.mkdtemp(prefix="haproxy-test-")
        self.cfg = os.path.join(self.dir, "haproxy.cfg")
        with open(self.cfg, "w") as f:
            f.write(cfg_text)
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen(["haproxy", "-db", "-f", self.cfg], stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def client(port, jobs, results, lock):
    """Sends jobs one at a time, each on a new connection: no kept-alive connection can be
    closed under a request, so every failure counts as lost (nothing is retried here)."""
    while True:
        with lock:
            if not jobs:
                break
            i = jobs.pop()
        body = json.dumps({"language": "bash", "code": f"echo r{i}"})
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            conn.request("POST", "/v1/execute", body=body,
                         headers={"Authorization": f"Bearer {TOKEN}",
                                  "Content-Type": "application/json", "Connection": "close"})
            r = conn.getresponse()
            data = r.read()
            out = json.loads(data).get("stdout") if r.status == 200 else data[:200]
            results[i] = (r.status, out)
        except (OSError, http.client.HTTPException, ValueError) as e:
            results[i] = ("error", repr(e))
        finally:
            conn.close()


class ScaleOutTests(Tests):
    def test_shipped_config_is_valid(self):
        if not shutil.which("haproxy"):
            raise AssertionError("haproxy is not installed (scripts/deps/deploy.apt)")
        p = subprocess.run(["haproxy", "-c", "-f", CFG], capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "WARNING" not in p.stdout + p.stderr and "ALERT" not in p.stdout + p.stderr, \
            p.stdout + p.stderr
        text = open(CFG).read()
        assert re.search(r"^\s*retry-on conn-failure\s*$", text, re.M), "retry-on conn-failure only"
        assert re.search(r"^\s*#\s*stick on req\.hdr\(X-Execbox-Session\)", text, re.M)

    def test_rolling_restart_loses_nothing(self):
        if not shutil.which("haproxy"):
            raise AssertionError("haproxy is not installed (scripts/deps/deploy.apt)")
        ports = [free_port() for _ in range(3)]
        front = free_port()
        servers = [instance(p) for p in ports]
        ha = Haproxy(rewrite(open(CFG).read(), front, ports))
        try:
            def all_up():
                try:
                    c = http.client.HTTPConnection("127.0.0.1", front, timeout=5)
                    c.request("POST", "/v1/execute", body='{"language":"bash","code":"echo"}',
                              headers={"Authorization": f"Bearer {TOKEN}",
                                       "Content-Type": "application/json"})
                    return c.getresponse().status == 200
                except OSError:
                    return False
            wait_for(all_up, 20, "HAProxy to pass requests")
            jobs = list(range(TOTAL))
            jobs.reverse()
            results = {}
            lock = threading.Lock()
            threads = [threading.Thread(target=client, args=(front, jobs, results, lock))
                       for _ in range(CONCURRENCY)]
            t0 = time.time()
            for t in threads:
                t.start()
            # a third of the way in, drain instance 2 and start it again on the same port
            wait_for(lambda: len(results) >= TOTAL // 3, 120, "a third of the requests")
            old = servers[1]
            old.proc.send_signal(15)
            assert old.proc.wait(60) == 0, "the drained instance did not exit cleanly"
            served_by_old = sum(1 for e in old.log_lines() if e.get("event") == "access" and
                                e.get("path") == "/v1/execute")
            restarted_at = len(results)
            servers[1] = instance(ports[1])
            for t in threads:
                t.join(300)
            took = time.time() - t0
            bad = {i: r for i, r in results.items() if r != (200, f"r{i}\n")}
            lost = TOTAL - len(results)
            print(f"{TOTAL} requests at concurrency {CONCURRENCY} in {took:.1f}s "
                  f"({TOTAL / took:.0f}/s); drained instance served {served_by_old}, "
                  f"restarted after {restarted_at}; lost {lost}, wrong {len(bad)}")
            assert lost == 0, f"{lost} requests never answered"
            assert not bad, f"{len(bad)} wrong or failed, e.g. {list(bad.items())[:5]}"
            # the drained instance answered runs during its grace and left cleanly; the new one
            # took its share again
            leaving = [e for e in old.log_lines() if e.get("event") == "leaving"]
            assert leaving, "no leaving phase in the drained instance's log"
            def new_runs():
                return sum(1 for e in servers[1].log_lines() if e.get("event") == "access" and
                           e.get("path") == "/v1/execute")
            # When the load ended before HAProxy's health checks let the restarted instance in
            # again (runs got faster than the checks), go on with single requests until it is
            # used: each must still be answered right.
            extra, deadline = 0, time.time() + 30
            while new_runs() == 0 and time.time() < deadline:
                i = TOTAL + extra
                extra += 1
                one = {}
                client(front, [i], one, lock)
                assert one[i] == (200, f"r{i}\n"), one
                time.sleep(0.05)
            assert new_runs() > 0, f"the restarted instance was never used again ({extra} more)"
        finally:
            ha.stop()
            for s in servers:
                s.__exit__(None, None, None)


if __name__ == "__main__":
    if not shutil.which("haproxy"):
        print("SKIP: haproxy is not installed (scripts/deps/deploy.apt lists it)")
        sys.exit(SKIP)
    ScaleOutTests().main()
