# SPDX-License-Identifier: MIT
"""`execbox serve --tokens FILE` (docs/tenants.md) end to end over loopback with the real jail:
two tenants never see, run in, download from or delete each other's sessions (the other's ids
answer 404, as unknown ones do), listing shows one's own, ceilings hold, quotas answer 429 with
Retry-After and the quota named under concurrent load, /metrics counts per tenant, logs name the
tenant and never a token, and SIGHUP reloads the file without dropping a running cell."""
import json
import os
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import SKIP, SkipTest, Tests, run  # noqa: E402
from serve import Server  # noqa: E402
from sessions import Client  # noqa: E402

A_TOKEN = "alice-token-0123456789abcdef"
B_TOKEN = "bob-token-0123456789abcdef"
C_TOKEN = "carol-token-0123456789abcdef"


def tokens_file(text):
    f = tempfile.NamedTemporaryFile("w", prefix="tokens-", delete=False)
    f.write(text)
    f.close()
    os.chmod(f.name, 0o600)
    return f.name


def wait_until(pred, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


class TenantTests(Tests):
    def server(self, text, *args):
        path = tokens_file(text)
        self.paths.append(path)
        return Server("--tokens", path, *args), path

    def setUp(self):
        self.paths = []

    def cleanup(self):
        for p in self.paths:
            os.unlink(p)

    def test_isolation(self):
        self.setUp()
        try:
            srv, _ = self.server(f"alice {A_TOKEN}\nbob {B_TOKEN}\n")
            with srv:
                a, b = Client(srv, A_TOKEN), Client(srv, B_TOKEN)
                sa = a.create()["id"]
                a.ok(sa, "secret = 41")
                st, _, _ = a.req("PUT", f"/v1/sessions/{sa}/files/mine.txt", b"alice's")
                assert st in (200, 201, 204), st
                # Bob: every route on alice's id answers as for an id that does not exist.
                for method, path, body in [
                        ("GET", f"/v1/sessions/{sa}", None),
                        ("POST", f"/v1/sessions/{sa}/execute", {"code": "print(secret)"}),
                        ("GET", f"/v1/sessions/{sa}/files", None),
                        ("GET", f"/v1/sessions/{sa}/files/mine.txt", None),
                        ("PUT", f"/v1/sessions/{sa}/files/x.txt", b"x"),
                        ("DELETE", f"/v1/sessions/{sa}/files/mine.txt", None),
                        ("DELETE", f"/v1/sessions/{sa}", None)]:
                    st, _, data = b.req(method, path, body)
                    unknown = b.req(method, path.replace(sa, "A" * len(sa)), body)[0]
                    assert st == 404 and unknown == 404, (method, path, st, data)
                # Listing: each sees its own.
                sb = b.create()["id"]
                la = [s["id"] for s in a.jreq("GET", "/v1/sessions")[1]["sessions"]]
                lb = [s["id"] for s in b.jreq("GET", "/v1/sessions")[1]["sessions"]]
                assert la == [sa] and lb == [sb], (la, lb)
                # Alice's session is whole after all that.
                assert a.ok(sa, "print(secret + 1)")["stdout"] == "42\n"
                assert a.req("GET", f"/v1/sessions/{sa}/files/mine.txt")[2] == b"alice's"
                # A wrong token is 401, never anyone's.
                assert Client(srv, "nobody-token-0123456789").req("GET", "/v1/sessions")[0] == 401
                assert Client(srv, None).req("GET", "/v1/sessions")[0] == 401
                # Logs name the tenant, never a token.
                log = open(srv.logf.name, encoding="utf-8").read()
                assert A_TOKEN not in log and B_TOKEN not in log
                tenants = {e.get("tenant") for e in srv.log_lines() if e.get("event") == "access"}
                assert {"alice", "bob"} <= tenants, tenants
        finally:
            self.cleanup()

    def test_e2b_contexts_are_per_tenant(self):
        self.setUp()
        try:
            srv, _ = self.server(f"alice {A_TOKEN}\nbob {B_TOKEN}\n")
            with srv:
                def e2b(tok, method, path, body=None):
                    st, _, data = srv.request(method, f"/e2b/{tok}{path}", body)
                    return st, data.decode()

                def lines(data):
                    return [json.loads(x) for x in data.splitlines() if x.strip()]

                # The default context is each tenant's own.
                st, data = e2b(A_TOKEN, "POST", "/execute", {"code": "secret = 41"})
                assert st == 200, (st, data)
                st, data = e2b(B_TOKEN, "POST", "/execute", {"code": "print(secret)"})
                assert st == 200 and any(x.get("type") == "error" and x.get("name") == "NameError"
                                         for x in lines(data)), data
                st, data = e2b(A_TOKEN, "POST", "/execute", {"code": "print(secret + 1)"})
                assert any(x.get("type") == "stdout" and x.get("text") == "42\n"
                           for x in lines(data)), data
                # A made context: listed, run in and deleted by its tenant only.
                st, data = e2b(A_TOKEN, "POST", "/contexts", {"language": "python"})
                assert st == 200, (st, data)
                cid = json.loads(data)["id"]
                st, data = e2b(B_TOKEN, "GET", "/contexts")
                assert st == 200 and cid not in data, data
                st, data = e2b(A_TOKEN, "GET", "/contexts")
                assert cid in data, data
                st, data = e2b(B_TOKEN, "POST", "/execute", {"code": "1", "context_id": cid})
                assert st == 404, (st, data)
                assert e2b(B_TOKEN, "DELETE", f"/contexts/{cid}")[0] == 404
                assert e2b(B_TOKEN, "POST", f"/contexts/{cid}/restart")[0] == 404
                st, data = e2b(A_TOKEN, "POST", "/execute", {"code": "7", "context_id": cid})
                assert st == 200 and any(x.get("type") == "result" for x in lines(data)), data
                assert e2b(A_TOKEN, "DELETE", f"/contexts/{cid}")[0] == 204
                # A sandbox of the control plane is its tenant's: another tenant's calls find
                # no such sandbox, neither to run in, to read, list, time out nor kill.
                st, data = e2b(A_TOKEN, "POST", "/v2/sandboxes", {"templateID": "base"})
                assert st == 201, (st, data)
                sb = json.loads(data)
                hd = {"E2b-Sandbox-Id": sb["sandboxID"], "X-Access-Token": sb["envdAccessToken"]}
                st, _, out = srv.request("POST", f"/e2b/{A_TOKEN}/execute",
                                         {"code": "mine = 1"}, hd)
                assert st == 200, (st, out)
                st, _, out = srv.request("POST", f"/e2b/{B_TOKEN}/execute", {"code": "mine"}, hd)
                assert st == 404, (st, out)
                assert e2b(B_TOKEN, "GET", f"/sandboxes/{sb['sandboxID']}")[0] == 404
                assert sb["sandboxID"] not in e2b(B_TOKEN, "GET", "/v2/sandboxes")[1]
                assert sb["sandboxID"] in e2b(A_TOKEN, "GET", "/v2/sandboxes")[1]
                assert e2b(B_TOKEN, "POST", f"/sandboxes/{sb['sandboxID']}/timeout",
                           {"timeout": 5})[0] == 404
                assert e2b(B_TOKEN, "DELETE", f"/sandboxes/{sb['sandboxID']}")[0] == 404
                assert e2b(A_TOKEN, "DELETE", f"/sandboxes/{sb['sandboxID']}")[0] == 204
                # A wrong token in the path is 401, and never reaches the log.
                bad = "zz-not-a-token-0123456789"
                assert e2b(bad, "POST", "/execute", {"code": "1"})[0] == 401
                log = open(srv.logf.name, encoding="utf-8").read()
                assert bad not in log and A_TOKEN not in log and B_TOKEN not in log
        finally:
            self.cleanup()

    def test_ceilings(self):
        self.setUp()
        try:
            srv, _ = self.server(f"alice {A_TOKEN} timeout=5 memory=256M\nbob {B_TOKEN}\n")
            with srv:
                a, b = Client(srv, A_TOKEN), Client(srv, B_TOKEN)
                st, o = a.jreq("POST", "/v1/execute", {"code": "print(1)", "timeout": 8})
                assert st == 400 and o["error"]["field"] == "timeout", (st, o)
                st, o = a.jreq("POST", "/v1/execute", {"code": "print(1)", "memory": "1G"})
                assert st == 400 and o["error"]["field"] == "memory", (st, o)
                # The ceiling is alice's default too; bob keeps the server's.
                st, o = a.jreq("POST", "/v1/execute", {"code": "import time; time.sleep(8)"})
                assert st == 200 and o["timed_out"] and o["execution_time"] < 7, (st, o)
                st, o = b.jreq("POST", "/v1/execute", {"code": "print(2)", "timeout": 8})
                assert st == 200 and o["stdout"] == "2\n", (st, o)
        finally:
            self.cleanup()

    def test_quotas_under_load(self):
        self.setUp()
        try:
            srv, _ = self.server(f"alice {A_TOKEN} max_runs=2 max_sessions=1\nbob {B_TOKEN}\n",
                                 "--workers", "6")
            with srv:
                a, b = Client(srv, A_TOKEN), Client(srv, B_TOKEN)
                results = []
                lock = threading.Lock()

                def one():
                    st, hd, data = a.req("POST", "/v1/execute",
                                         {"code": "import time; time.sleep(1.5)"}, timeout=60)
                    with lock:
                        results.append((st, hd, json.loads(data) if data else None))

                ts = [threading.Thread(target=one) for _ in range(6)]
                for t in ts:
                    t.start()
                time.sleep(0.3)
                # Bob is not held back by alice's quota.
                st, o = b.jreq("POST", "/v1/execute", {"code": "print(3)"})
                assert st == 200 and o["stdout"] == "3\n", (st, o)
                for t in ts:
                    t.join()
                ok = [r for r in results if r[0] == 200]
                limited = [r for r in results if r[0] == 429]
                assert len(ok) + len(limited) == 6, [r[0] for r in results]
                assert 1 <= len(ok) <= 4 and limited, [r[0] for r in results]
                for st, hd, o in limited:
                    assert int(hd["retry-after"]) >= 1, hd
                    assert o["error"]["code"] == "quota_exceeded", o
                    assert o["error"]["quota"] == "max_runs", o
                # Sessions: one for alice; the second is 429 naming max_sessions.
                sa = a.create()["id"]
                st, hd, data = a.req("POST", "/v1/sessions", {})
                o = json.loads(data)
                assert st == 429 and o["error"]["quota"] == "max_sessions", (st, o)
                assert "retry-after" in hd
                b.create()  # bob still can
                assert a.delete(sa) == 204
                assert wait_until(lambda: a.req("POST", "/v1/sessions", {})[0] == 201)
                m = srv.metrics(headers={"Authorization": f"Bearer {A_TOKEN}"})
                assert m['execbox_tenant_rejected_total{tenant="alice"}'] >= len(limited) + 1, m
                assert m['execbox_tenant_runs_total{tenant="alice"}'] >= len(ok), m
                assert m.get('execbox_tenant_rejected_total{tenant="bob"}', 0) == 0, m
        finally:
            self.cleanup()

    def test_sighup_reload_keeps_work(self):
        self.setUp()
        try:
            srv, path = self.server(f"alice {A_TOKEN}\nbob {B_TOKEN}\n")
            with srv:
                a = Client(srv, A_TOKEN)
                sa = a.create()["id"]
                a.ok(sa, "x = 1")
                out = {}

                def slow():
                    out["r"] = a.cell(sa, "import time; time.sleep(2); print(x)")

                t = threading.Thread(target=slow)
                t.start()
                time.sleep(0.5)
                with open(path, "w") as f:
                    f.write(f"alice {A_TOKEN}\ncarol {C_TOKEN}\n")
                srv.proc.send_signal(signal.SIGHUP)
                assert wait_until(lambda: any(e.get("event") == "tokens reloaded"
                                              for e in srv.log_lines())), srv.log_lines()
                t.join()
                st, r = out["r"]
                assert st == 200 and r["stdout"] == "1\n", (st, r)
                assert Client(srv, B_TOKEN).req("GET", "/v1/sessions")[0] == 401
                assert Client(srv, C_TOKEN).req("GET", "/v1/sessions")[0] == 200
                assert a.ok(sa, "print(x + 1)")["stdout"] == "2\n"
                # A file that no longer parses changes nothing.
                with open(path, "w") as f:
                    f.write("alice short\n")
                srv.proc.send_signal(signal.SIGHUP)
                assert wait_until(lambda: any(e.get("event") == "tokens not reloaded"
                                              for e in srv.log_lines())), srv.log_lines()
                assert Client(srv, C_TOKEN).req("GET", "/v1/sessions")[0] == 200
        finally:
            self.cleanup()

    def test_refuses_bad_file(self):
        path = tokens_file(f"alice {A_TOKEN}\n")
        try:
            os.chmod(path, 0o644)
            srv = Server("--tokens", path, expect_start=False)
            with srv:
                assert srv.proc.wait(30) != 0
                assert "chmod 600" in open(srv.logf.name).read()
            srv = Server("--tokens", path, "--token", "x" * 20, expect_start=False)
            with srv:
                assert srv.proc.wait(30) != 0
        finally:
            os.unlink(path)

    def test_tokens_named_by_policy_file(self):
        d = tempfile.mkdtemp(prefix="tenants-policy-")
        tok = os.path.join(d, "tokens")
        pol = os.path.join(d, "serve.json")
        try:
            with open(tok, "w") as f:
                f.write(f"alice {A_TOKEN}\n")
            os.chmod(tok, 0o600)
            with open(pol, "w") as f:
                json.dump({"tokens": "tokens", "timeout": 7}, f)  # relative to the policy file
            with Server("--policy", pol) as srv:
                assert Client(srv, A_TOKEN).req("GET", "/v1/sessions")[0] == 200
                assert Client(srv, None).req("GET", "/v1/sessions")[0] == 401
                assert Client(srv, B_TOKEN).req("GET", "/v1/sessions")[0] == 401
                # The rest of the file is the policy: a longer timeout is over the ceiling.
                st, _, data = Client(srv, A_TOKEN).req(
                    "POST", "/v1/execute", {"code": "pass", "timeout": 8})
                assert st == 400 and b"timeout" in data, (st, data)
            # Only serve reads a tokens file; the other commands say so and run nothing.
            r = run(["run", "--policy", pol, "-c", "print('ran')"])
            assert r.returncode == 125 and "tokens" in r.stderr and "ran" not in r.stdout, r
            # Two sources of tokens at once are refused.
            for extra in (["--tokens", tok], ["--token", "y" * 24]):
                srv = Server("--policy", pol, *extra, expect_start=False)
                with srv:
                    assert srv.proc.wait(30) != 0
                    assert "give one" in open(srv.logf.name).read()
            # The file's mode is checked as for --tokens.
            os.chmod(tok, 0o644)
            srv = Server("--policy", pol, expect_start=False)
            with srv:
                assert srv.proc.wait(30) != 0
                assert "chmod 600" in open(srv.logf.name).read()
        finally:
            for p in (tok, pol):
                os.unlink(p)
            os.rmdir(d)


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skip: tenants' sessions need the jail as root")
        sys.exit(SKIP)
    chk = run(["check"])
    if chk.returncode != 0:
        print(f"skip: the jail is not usable here: {chk.stdout}{chk.stderr}")
        sys.exit(SKIP)
    if SkipTest is None:
        sys.exit(SKIP)
    TenantTests().main()
