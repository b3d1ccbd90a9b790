# SPDX-License-Identifier: MIT
"""`execbox serve` sessions end to end (docs/sessions.md): real HTTP over loopback against the
built program and the real jail. State across cells; rollback after an exception, a timeout, a
cancel and an OOM kill (the digest of globals() is the same before and after); `rollback:
false`; one cell at a time; idle expiry and the lifetime; delete; isolation; workspace files
and escapes; one-shot input files; rich results; metrics."""
import base64
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))
from common import SKIP, SkipTest, Tests, run  # noqa: E402
from serve import JSON, Server, descendants, parse_metrics, sse_events, wait_for  # noqa: E402

# The digest of a session's state: every global not starting with '_', by its repr. The cell
# that computes it adds nothing (hashlib is imported first, by SETUP).
SETUP = "import hashlib, os, time"
DIGEST = ("hashlib.sha256(repr(sorted((k, repr(v)) for k, v in globals().items() "
          "if not k.startswith('_'))).encode()).hexdigest()")
ID_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def warm(c):
    """Makes and deletes one session, so that the template sessions fork from is running;
    returns the server's processes then (a later session's own are the new ones)."""
    sid = c.create()["id"]
    assert c.delete(sid) == 204
    time.sleep(0.2)
    return set(descendants(c.s.proc.pid))


def gone(pids):
    return not [p for p in pids if os.path.exists(f"/proc/{p}")]


def iso_ok(t):
    return (isinstance(t, str) and len(t) == 20 and t.endswith("Z") and t[10] == "T" and
            time.strptime(t, "%Y-%m-%dT%H:%M:%SZ") is not None)


class Client:
    """The session routes of one server."""

    def __init__(self, server, token=None):
        self.s = server
        self.auth = {"Authorization": f"Bearer {token}"} if token else {}

    def req(self, method, path, body=None, headers=None, timeout=60):
        h = dict(self.auth)
        h.update(headers or {})
        return self.s.request(method, path, body, h, timeout)

    def jreq(self, method, path, body=None, headers=None, timeout=60):
        st, hd, data = self.req(method, path, body, headers, timeout)
        return st, (json.loads(data) if data else None)

    def create(self, **fields):
        st, o = self.jreq("POST", "/v1/sessions", fields)
        if st == 501:
            raise SkipTest(f"this server cannot have sessions: {o}")
        assert st == 201, (st, o)
        return o

    def cell(self, sid, code, **fields):
        fields["code"] = code
        return self.jreq("POST", f"/v1/sessions/{sid}/execute", fields, timeout=120)

    def ok(self, sid, code, **fields):
        st, r = self.cell(sid, code, **fields)
        assert st == 200 and r["exit_code"] == 0 and not r["rolled_back"], (st, r)
        return r

    def value(self, sid, code):
        """The text of a cell's last expression."""
        r = self.ok(sid, code)
        main = [x for x in r["results"] if x.get("is_main_result")]
        assert len(main) == 1, r
        return main[0]["text"]

    def digest(self, sid):
        return self.value(sid, DIGEST)

    def info(self, sid):
        return self.jreq("GET", f"/v1/sessions/{sid}")

    def delete(self, sid):
        return self.req("DELETE", f"/v1/sessions/{sid}")[0]


class SessionTests(Tests):
    CHECK_TEMP_LEFTOVERS = True

    def test_cell_rich_results_field(self):
        """A cell's results are rich anyway: rich_results true is taken, false is refused for
        what it is (never as a limit of the session)."""
        with Server("--workers", "1") as s:
            c = Client(s)
            sid = c.create()["id"]
            r = c.ok(sid, "x = 42\nx", rich_results=True)
            assert r["results"][0]["text"] == "42", r
            st, e = c.cell(sid, "x", rich_results=False)
            assert st == 400 and e["error"]["field"] == "rich_results", (st, e)
            assert "always return rich results" in e["error"]["message"], e
            assert "limit" not in e["error"]["message"], e

    def test_state_kept_and_rich_results(self):
        with Server("--workers", "2") as s:
            c = Client(s)
            o = c.create()
            sid = o["id"]
            assert len(sid) == 22 and set(sid) <= ID_CHARS, o
            assert o["language"] == "python" and iso_ok(o["created_at"]), o
            assert iso_ok(o["expires_at"]) and o["expires_at"] > o["created_at"], o
            assert o["idle_timeout"] == 600 and o["rollback"] is True, o

            r = c.ok(sid, "x = 41\nimport math")
            assert r["execution_count"] == 1 and r["rolled_back"] is False, r
            r = c.ok(sid, "x += 1\nprint(math.sqrt(x * x))\nx")
            assert r["execution_count"] == 2 and r["stdout"] == "42.0\n", r
            assert {"text": "42", "is_main_result": True}.items() <= r["results"][0].items(), r

            # A DataFrame's HTML, a matplotlib figure's PNG.
            r = c.ok(sid, "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})\n"
                          "df")
            main = [x for x in r["results"] if x.get("is_main_result")]
            assert main and "<table" in (main[0].get("html") or ""), r["results"]
            assert "a" in main[0]["text"], main
            r = c.ok(sid, "import matplotlib\nmatplotlib.use('Agg')\n"
                          "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4, 1, 9])\n"
                          "plt.show()")
            pngs = [x["png"] for x in r["results"] if x.get("png")]
            assert pngs and base64.b64decode(pngs[0]).startswith(b"\x89PNG\r\n\x1a\n"), r
            assert c.value(sid, "df['b'].sum() + x") == "49"

            st, i = c.info(sid)
            assert st == 200 and i["id"] == sid and i["execution_count"] == 5, i
            assert i["busy"] is False and i["rolled_back_count"] == 0, i
            assert iso_ok(i["last_used_at"]) and i["memory_bytes"] > 0, i
            st, lst = c.jreq("GET", "/v1/sessions")
            assert st == 200 and [x["id"] for x in lst["sessions"]] == [sid], lst

            # Streaming a cell works as for /v1/execute.
            conn = s.conn()
            conn.request("POST", f"/v1/sessions/{sid}/execute",
                         body=json.dumps({"code": "print('a', flush=True)\nx"}),
                         headers={"Accept": "text/event-stream", "Content-Type": JSON})
            resp = conn.getresponse()
            assert resp.status == 200, resp.status
            ev = list(sse_events(resp))
            conn.close()
            out = "".join(json.loads(d)["data"] for e, d in ev if e == "stdout")
            assert ev[0][0] == "start" and out == "a\n", ev
            assert ev[-1][0] == "result" and json.loads(ev[-1][1])["execution_count"] == 6, ev
            assert s.stop() == 0

    def test_rollback_after_exception_timeout_cancel_oom(self):
        with Server("--workers", "2", "--timeout", "20", "--memory", "512M") as s:
            c = Client(s)
            # The memory cap covers the files of /tmp and /workspace too: keep those small.
            sid = c.create(memory="128M", tmpfs="4M", workspace_size="4M")["id"]
            c.ok(sid, SETUP + "\nx = 1\ndata = list(range(10))")
            d0 = c.digest(sid)
            assert c.digest(sid) == d0  # the digest cell itself changes nothing

            # An exception after changing state.
            st, r = c.cell(sid, "x = 2\ndata.append(99)\nnew = 1\nraise ValueError('half')")
            assert st == 200 and r["rolled_back"] is True, r
            assert r["error"]["name"] == "ValueError", r
            assert c.digest(sid) == d0

            # A timeout after changing state.
            st, r = c.cell(sid, "x = 3\ndata.clear()\ntime.sleep(30)", timeout=1)
            assert st == 200 and r["timed_out"] and r["rolled_back"] is True, r
            assert c.digest(sid) == d0

            # A cancel: the client hangs up while the cell runs.
            conn = s.conn()
            conn.request("POST", f"/v1/sessions/{sid}/execute",
                         body=json.dumps({"code": "x = 4\ndel data\nprint('in', flush=True)\n"
                                                  "time.sleep(30)"}),
                         headers={"Accept": "text/event-stream", "Content-Type": JSON})
            resp = conn.getresponse()
            for ev, data in sse_events(resp):
                if ev == "stdout":
                    break
            conn.sock.shutdown(socket.SHUT_RDWR)
            conn.close()
            wait_for(lambda: c.info(sid)[1]["busy"] is False, what="the cancelled cell ended")
            wait_for(lambda: s.metrics()["execbox_runs_cancelled_total"] == 1, what="counted")
            assert c.digest(sid) == d0

            # An OOM kill of the cell (the session's memory is 128M).
            st, r = c.cell(sid, "x = 5\nhog = b'x' * (400 << 20)\nprint(len(hog))")
            assert st == 200 and r["oom_killed"] and r["rolled_back"] is True, r
            assert c.digest(sid) == d0
            assert c.value(sid, "x, len(data)") == "(1, 10)"

            st, i = c.info(sid)
            assert i["rolled_back_count"] == 4, i
            m = s.metrics()
            assert m["execbox_session_cells_rolled_back_total"] == 4, m
            assert s.stop() == 0

    def test_memory_now_and_peak(self):
        # memory_bytes is the session's memory now (it was the peak, and stayed at it for good);
        # memory_peak_bytes the most it ever held.
        MiB = 1 << 20
        with Server("--workers", "2", "--memory", "512M") as s:
            c = Client(s)
            sid = c.create(memory="256M", tmpfs="4M", workspace_size="4M")["id"]
            c.ok(sid, "b = b'x' * (150 << 20)")
            st, i = c.info(sid)
            print(f"  holding 150 MiB: now {i['memory_bytes'] // MiB} MiB, peak "
                  f"{i['memory_peak_bytes'] // MiB} MiB")
            assert i["memory_bytes"] >= 150 * MiB and i["memory_peak_bytes"] >= 150 * MiB, i
            c.ok(sid, "del b")
            st, i = c.info(sid)
            print(f"  after del: now {i['memory_bytes'] // MiB} MiB, peak "
                  f"{i['memory_peak_bytes'] // MiB} MiB")
            assert i["memory_bytes"] < 100 * MiB, i
            assert i["memory_peak_bytes"] >= 150 * MiB, i
            st, r = c.cell(sid, "hog = b'x' * (400 << 20)")
            assert st == 200 and r["oom_killed"] and r["rolled_back"], r
            st, i = c.info(sid)
            print(f"  after an OOM-killed cell: now {i['memory_bytes'] // MiB} MiB, peak "
                  f"{i['memory_peak_bytes'] // MiB} MiB")
            assert i["memory_bytes"] < 100 * MiB, i
            assert 250 * MiB <= i["memory_peak_bytes"] <= 256 * MiB + 4 * MiB, i
            assert s.stop() == 0

    def test_rollback_false_keeps_partial_effects(self):
        with Server() as s:
            c = Client(s)
            sid = c.create(rollback=False)["id"]
            assert c.info(sid)[1]["rollback"] is False
            c.ok(sid, "x = 1")
            st, r = c.cell(sid, "x = 2\ny = 'kept'\nraise KeyError('k')")
            assert st == 200 and r["error"]["name"] == "KeyError", r
            assert r["rolled_back"] is False, r
            assert c.value(sid, "x, y") == "(2, 'kept')"
            # A timeout still rolls back.
            st, r = c.cell(sid, "x = 3\nimport time\ntime.sleep(30)", timeout=1)
            assert r["timed_out"] and r["rolled_back"] is True, r
            assert c.value(sid, "x") == "2"
            assert s.stop() == 0

    def test_one_cell_at_a_time_409(self):
        with Server("--workers", "2") as s:
            c = Client(s)
            sid = c.create()["id"]
            out = {}

            def slow():
                out["r"] = c.cell(sid, "import time\ntime.sleep(2)\nz = 1")
            t = threading.Thread(target=slow)
            t.start()
            wait_for(lambda: c.info(sid)[1]["busy"], what="busy")
            st, r = c.cell(sid, "z = 2")
            assert st == 409 and r["error"]["code"] == "session_busy", (st, r)
            # Files may be used meanwhile.
            st, _, _ = c.req("PUT", f"/v1/sessions/{sid}/files/while.txt", b"busy",
                             {"Content-Type": "text/plain"})
            assert st == 201, st
            t.join(60)
            assert out["r"][0] == 200 and out["r"][1]["exit_code"] == 0, out
            assert c.value(sid, "z") == "1"
            assert s.stop() == 0

    def test_idle_expiry_and_lifetime(self):
        with Server("--session-idle-max", "2", "--session-lifetime", "4") as s:
            c = Client(s)
            st, o = c.jreq("POST", "/v1/sessions", {"idle_timeout": 3})
            assert st == 400 and o["error"]["field"] == "idle_timeout", o
            st, o = c.jreq("POST", "/v1/sessions", {"idle_timeout": 1.5})
            assert st == 400 and o["error"]["field"] == "idle_timeout", o
            base = warm(c)
            assert c.create()["idle_timeout"] == 2  # the default is capped by the maximum

            sid = c.create(idle_timeout=1)["id"]
            c.ok(sid, "a = 1")
            procs = set(descendants(s.proc.pid)) - base
            assert procs, "sessions have processes"
            time.sleep(2.5)
            st, o = c.info(sid)
            assert st == 404 and o["error"]["code"] == "session_not_found", (st, o)
            assert c.cell(sid, "a")[0] == 404
            m = s.metrics()
            assert m["execbox_sessions_expired_total"] == 2, m  # both idle ones
            assert m["execbox_sessions_open"] == 0, m
            wait_for(lambda: gone(procs), what="expired sessions leave nothing")

            # The lifetime ends a session that is used all the time.
            sid = c.create(idle_timeout=2)["id"]
            procs = set(descendants(s.proc.pid)) - base
            t0 = time.time()
            while time.time() - t0 < 3.5:
                c.ok(sid, "a = 1")
                time.sleep(0.3)
            wait_for(lambda: c.info(sid)[0] == 404, timeout=5, what="the lifetime")
            assert time.time() - t0 >= 3.5
            assert s.metrics()["execbox_sessions_expired_total"] == 3
            wait_for(lambda: gone(procs), what="nothing left")
            assert s.stop() == 0

    def test_delete_and_max_sessions(self):
        with Server("--max-sessions", "2", "--workers", "2") as s:
            c = Client(s)
            base = warm(c)
            a, b = c.create()["id"], c.create()["id"]
            procs = set(descendants(s.proc.pid)) - base
            st, o = c.jreq("POST", "/v1/sessions", {})
            assert st == 429 and o["error"]["code"] == "too_many_sessions", (st, o)
            c.ok(a, "v = 1")
            assert c.delete(a) == 204
            assert c.info(a)[0] == 404 and c.cell(a, "v")[0] == 404
            assert c.delete(a) == 404
            assert c.req("GET", f"/v1/sessions/{a}/files")[0] == 404
            b2 = c.create()["id"]
            assert c.delete(b) == 204 and c.delete(b2) == 204
            wait_for(lambda: gone(procs), what="deleted sessions leave nothing")
            st, _, data = c.req("GET", "/v1/sessions/not-an-id")
            assert st == 404, st
            st, hd, _ = c.req("PATCH", f"/v1/sessions/{b}")
            assert st == 405 and "DELETE" in hd.get("allow", ""), (st, hd)
            m = s.metrics()
            assert m["execbox_sessions_created_total"] == 4 and m["execbox_sessions_open"] == 0
            assert s.stop() == 0

    def test_two_sessions_are_isolated(self):
        with Server("--workers", "2") as s:
            c = Client(s)
            a, b = c.create()["id"], c.create()["id"]
            c.ok(a, "secret = 'A'\nopen('/tmp/t.txt', 'w').write('A')\n"
                    "open('/workspace/w.txt', 'w').write('A')")
            assert c.value(b, "'secret' in globals()") == "False"
            assert c.value(b, "import os\nos.path.exists('/tmp/t.txt'), "
                              "os.path.exists('/workspace/w.txt')") == "(False, False)"
            assert c.req("GET", f"/v1/sessions/{b}/files/w.txt")[0] == 404
            st, _, data = c.req("GET", f"/v1/sessions/{a}/files/w.txt")
            assert st == 200 and data == b"A", (st, data)
            # Files are not rolled back: a cell that fails still wrote its file.
            st, r = c.cell(a, "open('/workspace/f.txt', 'w').write('kept')\nraise OSError()")
            assert r["rolled_back"] is True, r
            assert c.req("GET", f"/v1/sessions/{a}/files/f.txt")[2] == b"kept"
            assert s.stop() == 0

    def test_files_round_trip_and_escapes(self):
        with Server("--max-body", "1M") as s, tempfile.TemporaryDirectory() as host:
            c = Client(s)
            sid = c.create(file_size="64K")["id"]
            base = f"/v1/sessions/{sid}/files"
            blob = bytes(range(256)) * 16 + os.urandom(1000)
            st, _, data = c.req("PUT", f"{base}/data/blob.bin", blob,
                                {"Content-Type": "application/octet-stream"})
            assert st == 201 and json.loads(data) == {"path": "data/blob.bin",
                                                      "size": len(blob)}, data
            st, hd, data = c.req("GET", f"{base}/data/blob.bin")
            assert st == 200 and data == blob, (st, len(data))
            assert hd["content-type"] == "application/octet-stream", hd
            assert hd["x-content-type-options"] == "nosniff", hd
            # Any content type (a PUT is never a browser's simple request), even none.
            assert c.req("PUT", f"{base}/t.csv", b"a,b\n1,2\n", {"Content-Type": "text/plain"}
                         )[0] == 201
            assert c.req("PUT", f"{base}/empty.txt", b"")[0] == 201
            assert c.req("GET", f"{base}/empty.txt")[2] == b""
            st, hd, data = c.req("GET", f"{base}/t.csv")
            assert data == b"a,b\n1,2\n" and hd["content-type"].startswith("text/csv"), hd
            # %20 and a decoded '/' name the same file as the plain path.
            assert c.req("PUT", f"{base}/with%20space.txt", b"sp")[0] == 201
            assert c.req("GET", f"{base}/data%2fblob.bin")[2] == blob

            # The code sees them, and its own files come back.
            c.ok(sid, "import os, hashlib\nassert open('/workspace/data/blob.bin', 'rb').read()"
                      f"[:256] == bytes(range(256))\nassert os.path.exists('with space.txt')\n"
                      "open('out.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\nrest')")
            st, hd, data = c.req("GET", f"{base}/out.png")
            assert st == 200 and data.startswith(b"\x89PNG") and hd["content-type"] == "image/png"
            st, lst = c.jreq("GET", base)
            files = {f["path"]: f for f in lst["files"]}
            assert files["data/blob.bin"]["size"] == len(blob), files
            assert files["out.png"]["mime"] == "image/png", files
            assert set(files) >= {"t.csv", "empty.txt", "with space.txt", "out.png"}, files

            # Limits: the session's file_size, the server's body limit.
            st, _, data = c.req("PUT", f"{base}/big.bin", b"x" * (65 << 10))
            assert st == 413, (st, data)
            assert c.req("DELETE", f"{base}/t.csv")[0] == 204
            st, o = c.jreq("GET", f"{base}/t.csv")
            assert st == 404 and o["error"]["code"] == "file_not_found", o
            assert c.req("DELETE", f"{base}/t.csv")[0] == 404

            # Escapes: '..', absolute paths, escapes decoded once, NUL, symlinks.
            secret = os.path.join(host, "secret.txt")
            with open(secret, "w") as f:
                f.write("host secret")
            c.ok(sid, f"import os\nos.symlink({host!r}, 'hostdir')\n"
                      f"os.symlink({secret!r}, 'hostfile')\nos.symlink('/etc', 'etc')")
            canary = f"canary-{uuid.uuid4().hex}"
            bad = ["../x", "a/../../x", "%2e%2e/x", "%2E%2E%2Fx", "..%2f..%2fetc%2fpasswd",
                   "/etc/passwd", "%2fetc%2fpasswd", "./x", "a//b", "a/", "x%00y", "%zz",
                   "hostfile", "hostdir/secret.txt", "etc/passwd", f"hostdir/{canary}",
                   f"etc/{canary}"]
            for p in bad:
                # Removing a symlink itself stays inside the workspace: not asked here.
                for method in ("GET", "PUT") + (() if p in ("hostfile",) else ("DELETE",)):
                    st, _, data = c.req(method, f"{base}/{p}", b"evil" if method == "PUT"
                                        else None)
                    if (method, p) == ("PUT", "hostfile"):
                        # Written through a fresh inode: the link is replaced, not followed.
                        assert st in (201, 400), (st, data)
                        continue
                    assert st == 400, (method, p, st, data)
                    o = json.loads(data)
                    assert o["error"]["field"] == "path" and b"host secret" not in data, o
            assert os.listdir(host) == ["secret.txt"], os.listdir(host)
            assert open(secret).read() == "host secret"
            assert not os.path.exists(f"/etc/{canary}")
            # The sandbox's own view is untouched too.
            assert c.value(sid, "sorted(os.listdir('.'))").count("hostdir") == 1
            assert s.stop() == 0

    def test_one_shot_input_files(self):
        with Server("--file-size", "1K") as s:
            st, _, r = s.execute({
                "code": "import os\nprint(open('in/a.txt').read(), "
                        "open('/workspace/b.bin', 'rb').read().hex())",
                "files": [{"path": "in/a.txt", "content": "héllo"},
                          {"path": "b.bin", "content": base64.b64encode(b"\x00\x01\xff").decode(),
                           "encoding": "base64"}]})
            assert st == 200 and r["stdout"] == "héllo 0001ff\n", r
            bad = [
                ([{"path": "../x", "content": ""}], "files[0].path"),
                ([{"path": "/abs", "content": ""}], "files[0].path"),
                ([{"path": "ok", "content": "!!", "encoding": "base64"}], "files[0].content"),
                ([{"path": "ok", "content": "x", "encoding": "rot13"}], "files[0].encoding"),
                ([{"path": "ok", "content": 1}], "files[0].content"),
                ([{"path": "ok", "content": "x", "mode": 7}], "files[0]"),
                ([{"path": "ok", "content": "x" * 2048}], "files[0].content"),
                ([{"path": f"f{i}", "content": ""} for i in range(65)], "files"),
                ({"path": "ok"}, "files"),
            ]
            for files, field in bad:
                st, _, r = s.execute({"code": "pass", "files": files})
                assert st == 400 and r["error"]["field"] == field, (files, st, r)
            assert s.stop() == 0

    def test_one_shot_rich_results(self):
        with Server() as s:
            st, _, r = s.execute({"code": "import pandas as pd\npd.DataFrame({'a': [1, 2]})",
                                  "rich_results": True})
            assert st == 200 and r["exit_code"] == 0, r
            assert r["results"][0]["is_main_result"] and "<table" in r["results"][0]["html"], r
            assert "execution_count" not in r, r
            st, _, r = s.execute({"code": "6 * 7"})  # not asked: a script shows nothing
            assert st == 200 and r["results"] == [], r
            st, _, r = s.execute({"code": "1", "rich_results": "yes"})
            assert st == 400 and r["error"]["field"] == "rich_results", r
            st, _, r = s.execute({"code": "1", "rich_results": True, "language": "bash"})
            assert st == 400 and r["error"]["field"] == "rich_results", r
            assert s.stop() == 0

    def test_cell_fields_and_errors(self):
        with Server("--timeout", "5") as s:
            c = Client(s)
            st, o = c.jreq("POST", "/v1/sessions", {"timeout": 6})
            assert st == 400 and o["error"]["field"] == "timeout", o
            st, o = c.jreq("POST", "/v1/sessions", {"workspace": "/tmp"})
            assert st == 400 and o["error"]["field"] == "workspace", o
            st, o = c.jreq("POST", "/v1/sessions", {"rollback": "no"})
            assert st == 400 and o["error"]["field"] == "rollback", o
            st, o = c.jreq("POST", "/v1/sessions", {"language": "cobol"})
            assert st == 400 and o["error"]["field"] == "language", o
            sid = c.create(timeout=2)["id"]
            st, o = c.cell(sid, "pass", timeout=3)  # more than the session's own
            assert st == 400 and o["error"]["field"] == "timeout", o
            st, o = c.cell(sid, "pass", memory="1G")
            assert st == 400 and o["error"]["field"] == "memory", o
            st, o = c.jreq("POST", f"/v1/sessions/{sid}/execute", {})
            assert st == 400 and o["error"]["field"] == "code", o
            r = c.ok(sid, "open('in.txt').read()",
                     files=[{"path": "in.txt", "content": "cell input"}])
            assert r["results"][0]["text"] == "'cell input'", r
            assert s.stop() == 0

    def test_auth_origin_and_media_type(self):
        with Server("--token", "sekret") as s:
            anon, c = Client(s), Client(s, "sekret")
            sid = c.create()["id"]
            routes = [("POST", "/v1/sessions"), ("GET", "/v1/sessions"),
                      ("GET", f"/v1/sessions/{sid}"), ("DELETE", f"/v1/sessions/{sid}"),
                      ("POST", f"/v1/sessions/{sid}/execute"),
                      ("GET", f"/v1/sessions/{sid}/files"),
                      ("PUT", f"/v1/sessions/{sid}/files/a.txt"),
                      ("GET", f"/v1/sessions/{sid}/files/a.txt")]
            for method, path in routes:
                st, hd, _ = anon.req(method, path, b"{}" if method in ("POST", "PUT") else None)
                assert st == 401 and "bearer" in hd["www-authenticate"].lower(), (method, path)
                st, _, _ = c.req(method, path, b"{}" if method in ("POST", "PUT") else None,
                                 {"Origin": "https://evil.example"})
                assert st == 403, (method, path, st)
            for path in ("/v1/sessions", f"/v1/sessions/{sid}/execute"):
                st, _, _ = c.req("POST", path, b'{"code": "1"}', {"Content-Type": "text/plain"})
                assert st == 415, (path, st)
            assert c.req("PUT", f"/v1/sessions/{sid}/files/a.txt", b"ok",
                         {"Content-Type": "text/plain"})[0] == 201
            assert c.info(sid)[0] == 200 and anon.info(sid)[0] == 401
            assert s.stop() == 0

    def test_create_and_restart_take_no_body(self):
        """A session with defaults takes no body at all (`curl -X POST .../v1/sessions`, as
        E2B's and Jupyter's clients send it), nor does an E2B context's restart: an empty body,
        with or without Content-Type, means defaults. A body that is not empty still needs
        application/json and valid JSON."""
        def post(s, path, body=None, ctype=None, length=True):
            c = s.conn()
            try:
                c.putrequest("POST", path)
                if ctype:
                    c.putheader("Content-Type", ctype)
                if body is not None or length:
                    c.putheader("Content-Length", str(len(body or b"")))
                c.endheaders(body)
                r = c.getresponse()
                data = r.read()
                is_json = (r.getheader("Content-Type") or "").startswith(JSON)
                return r.status, (json.loads(data) if is_json else data)
            finally:
                c.close()

        with Server("--workers", "2") as s:
            c = Client(s)
            made = []
            for ctype, length in ((None, False), (None, True), (JSON, False), (JSON, True)):
                st, o = post(s, "/v1/sessions", ctype=ctype, length=length)
                assert st == 201, (ctype, length, st, o)
                assert o["language"] == "python" and o["idle_timeout"] == 600, o
                assert o["rollback"] is True, o
                made.append(o["id"])
            assert c.value(made[0], "6 * 7") == "42"
            # A body that is not empty: as before.
            st, o = post(s, "/v1/sessions", b'{"idle_timeout": 60}')
            assert st == 415 and o["error"]["code"] == "unsupported_media_type", (st, o)
            st, o = post(s, "/v1/sessions", b'{"idle_timeout": 60}', "text/plain")
            assert st == 415, (st, o)
            st, o = post(s, "/v1/sessions", b"{", JSON)
            assert st == 400 and "malformed" in o["error"]["message"], (st, o)
            st, o = post(s, "/v1/sessions", b'{"idle_timeout": 60}', JSON)
            assert st == 201 and o["idle_timeout"] == 60, (st, o)
            made.append(o["id"])
            # Chunked, the length is known once the body is in: empty is defaults, else 415.
            for body, want in ((b"", 201), (b'{"idle_timeout": 60}', 415)):
                c2 = s.conn()
                c2.request("POST", "/v1/sessions", body=iter([body] if body else []),
                           headers={"Transfer-Encoding": "chunked"}, encode_chunked=True)
                r = c2.getresponse()
                o = json.loads(r.read())
                c2.close()
                assert r.status == want, (body, r.status, o)
                if want == 201:
                    made.append(o["id"])
            for sid in made:
                assert c.delete(sid) == 204

            # E2B: a context, then its restart with no body (the SDK sends none).
            st, o = post(s, "/e2b/contexts", b'{"language": "python"}', JSON)
            assert st == 200, (st, o)
            ctx = o["id"]
            st, o = post(s, "/e2b/execute", json.dumps({"code": "k = 1", "context_id": ctx})
                         .encode(), JSON)
            assert st == 200, (st, o)
            for ctype, length in ((None, False), (None, True), (JSON, False), (JSON, True)):
                st, o = post(s, f"/e2b/contexts/{ctx}/restart", ctype=ctype, length=length)
                assert st == 204, (ctype, length, st, o)
            st, o = post(s, f"/e2b/contexts/{ctx}/restart", b"{}", "text/plain")
            assert st == 415, (st, o)
            st, o = post(s, f"/e2b/contexts/{ctx}/restart", b"{}", JSON)
            assert st == 204, (st, o)
            st, o = post(s, "/e2b/execute", json.dumps({"code": "'k' in globals()",
                                                        "context_id": ctx}).encode(), JSON)
            assert st == 200 and b'"False"' in o, (st, o)  # a fresh interpreter
            assert s.stop() == 0

    def test_metrics_and_drain_closes_sessions(self):
        with Server("--workers", "2") as s:
            c = Client(s)
            a, b = c.create()["id"], c.create()["id"]
            c.ok(a, "x = 1")
            c.cell(a, "raise RuntimeError()")
            c.ok(b, "y = 2")
            m = s.metrics()
            assert m["execbox_sessions_open"] == 2, m
            assert m["execbox_sessions_created_total"] == 2, m
            assert m["execbox_session_cells_total"] == 3, m
            assert m["execbox_session_cells_rolled_back_total"] == 1, m
            assert m["execbox_sessions_expired_total"] == 0, m
            st, _, data = s.request("GET", "/v1/health")
            assert json.loads(data)["sessions"] == 2, data
            procs = descendants(s.proc.pid)
            assert procs, "sessions have processes"
            assert s.stop() == 0
            assert gone(procs), procs


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skip: sessions need the jail as root")
        sys.exit(SKIP)
    chk = run(["check"])
    if chk.returncode != 0:
        print(f"skip: the jail is not usable here: {chk.stdout}{chk.stderr}")
        sys.exit(SKIP)
    SessionTests().main()
