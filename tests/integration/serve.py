# SPDX-License-Identifier: MIT
"""`execbox serve` end to end: real HTTP over loopback (ephemeral ports) against the built
program, with the default backend or EXECBOX_TEST_BACKEND."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))
from common import EXECBOX, Tests  # noqa: E402

BACKEND = os.environ.get("EXECBOX_TEST_BACKEND")
START_TIMEOUT = 20
JSON = "application/json"


def backend_args():
    return ["--backend", BACKEND] if BACKEND else []


class Server:
    """One `execbox serve` process; its stderr (the JSON log) goes to a file."""

    def __init__(self, *args, listen="127.0.0.1:0", env=None, expect_start=True):
        self.logf = tempfile.NamedTemporaryFile(prefix="serve-log-", suffix=".jsonl")
        full_env = dict(os.environ)
        full_env.pop("EXECBOX_TOKEN", None)
        if env:
            full_env.update(env)
        self.proc = subprocess.Popen([EXECBOX, "serve", "--listen", listen] + backend_args() +
                                     list(args), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.logf, env=full_env)
        self.addr = None
        if expect_start:
            self.addr = self._wait_listening()
            if self.addr.startswith("unix:"):
                self.host, self.port = None, None
            else:
                host, port = self.addr.rsplit(":", 1)
                self.host, self.port = host.strip("[]"), int(port)

    def log_lines(self):
        with open(self.logf.name, encoding="utf-8") as f:
            out = []
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))  # every line must be JSON
            return out

    def _wait_listening(self):
        deadline = time.time() + START_TIMEOUT
        while time.time() < deadline:
            for e in self.log_lines():
                if e.get("event") == "listening":
                    return e["message"]
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited {self.proc.returncode}: "
                                     f"{open(self.logf.name).read()}")
            time.sleep(0.02)
        raise AssertionError("serve did not start listening")

    def conn(self, timeout=60):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = self.conn(timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            headers = dict(headers or {})
            if method == "POST" and not any(k.lower() == "content-type" for k in headers):
                headers["Content-Type"] = JSON
            c.request(method, path, body=body, headers=headers)
            r = c.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            c.close()

    def execute(self, body, headers=None, timeout=60):
        st, hd, data = self.request("POST", "/v1/execute", body, headers, timeout)
        return st, hd, json.loads(data)

    def metrics(self, headers=None):
        st, _, data = self.request("GET", "/metrics", headers=headers)
        assert st == 200, st
        return parse_metrics(data.decode())

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("serve did not exit after SIGTERM")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.logf.close()


def parse_metrics(text):
    """Prometheus text -> {'name{labels}': float}; checks every sample line's syntax."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            if line.startswith("# TYPE"):
                assert re.match(r"# TYPE \w+ (counter|gauge|histogram)$", line), line
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})?) (\S+)$', line)
        assert m, f"bad metrics line {line!r}"
        out[m.group(1)] = float(m.group(3))
    return out


def descendants(pid):
    """PIDs of every living descendant of pid (from /proc)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def wait_for(pred, timeout=20, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def sse_events(resp):
    """Yields (event, data) from a text/event-stream response as they arrive."""
    event, data = None, []
    while True:
        line = resp.readline()
        if not line:
            return
        line = line.decode().rstrip("\n")
        if line == "":
            if event is not None or data:
                yield event, "\n".join(data)
            event, data = None, []
        elif line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])


class ServeTests(Tests):
    CHECK_TEMP_LEFTOVERS = True

    def test_basics_health_execute_errors(self):
        with Server() as s:
            st, hd, data = s.request("GET", "/v1/health")
            assert st == 200, (st, data)
            h = json.loads(data)
            assert h["status"] == "ok" and h["backend"] and h["workers"] >= 1, h

            st, hd, r = s.execute({"code": "print(6*7)"})
            assert st == 200 and r["stdout"] == "42\n" and r["exit_code"] == 0, (st, r)
            assert re.match(r"^[0-9a-f]{8}-[0-9a-f]+$", hd["x-request-id"]), hd
            rid = hd["x-request-id"]

            # A failing program is still a 200 with its result.
            st, _, r = s.execute({"code": "raise ValueError('nope')"})
            assert st == 200 and r["exit_code"] == 1, r
            assert r["error"]["name"] == "ValueError", r

            st, _, r = s.execute({"code": "echo $((6*7)) ; echo err >&2", "language": "bash",
                                  "stdin": "ignored"})
            assert st == 200 and r["stdout"] == "42\n" and r["stderr"] == "err\n", r
            st, _, r = s.execute({"code": "import sys; print(sys.stdin.read()[::-1])",
                                  "stdin": "abc"})
            assert st == 200 and r["stdout"] == "cba\n", r

            # A client's own request id is echoed when it is sane, replaced when not.
            st, hd, _ = s.execute({"code": "pass"}, headers={"X-Request-Id": "client-id.42"})
            assert hd["x-request-id"] == "client-id.42", hd
            st, hd, _ = s.execute({"code": "pass"}, headers={"X-Request-Id": "bad id\"x"})
            assert hd["x-request-id"] != "bad id\"x", hd

            st, _, data = s.request("GET", "/nope")
            assert st == 404 and json.loads(data)["error"]["code"] == "not_found", data
            st, hd, data = s.request("GET", "/v1/execute")
            assert st == 405 and hd.get("allow") == "POST", (st, hd)
            assert json.loads(data)["error"]["code"] == "method_not_allowed"
            st, _, _ = s.request("POST", "/v1/health", body="x")
            assert st == 405, st

            # The access log: JSON lines on stderr carrying the same request id.
            def logged():
                return [e for e in s.log_lines() if e.get("event") == "access"]
            entries = wait_for(lambda: [e for e in logged() if e["request_id"] == rid],
                               what="access log line")
            e = entries[0]
            assert e["status"] == 200 and e["path"] == "/v1/execute" and e["outcome"] == "ok", e
            assert s.stop() == 0

    def test_bad_requests_name_the_field(self):
        with Server("--timeout", "5", "--memory", "256M") as s:
            cases = [
                ("", None, "empty body"),
                ("{", None, "malformed"),
                ("[1,2]", None, "object"),
                ('"just a string"', None, "object"),
                ('{"code": "x", "code": "y"}', None, "duplicate"),
                ({"language": "python"}, "code", "code: required"),
                ({"code": 42}, "code", "code: expected a string"),
                ({"code": None}, "code", "code"),
                ({"code": "x", "language": "cobol"}, "language", "'cobol'"),
                ({"code": "x", "language": 3}, "language", "language"),
                ({"code": "x", "stdin": ["a"]}, "stdin", "stdin"),
                ({"code": "x", "timeout": "soon"}, "timeout", "timeout"),
                ({"code": "x", "timeout": True}, "timeout", "timeout"),
                ({"code": "x", "timeout": -1}, "timeout", "timeout"),
                ({"code": "x", "timeout": 6}, "timeout", "exceeds the maximum"),
                ({"code": "x", "memory": "1G"}, "memory", "exceeds the maximum"),
                ({"code": "x", "memory": "lots"}, "memory", "memory"),
                ({"code": "x", "pids": 1.5}, "pids", "pids"),
                ({"code": "x", "network": "host"}, "network", "network"),
                ({"code": "x", "workspace": "/etc"}, "workspace", "may not be set"),
                ({"code": "x", "rootfs": "/"}, "rootfs", "may not be set"),
                ({"code": "x", "colour": "blue"}, "colour", "unknown field 'colour'"),
                # hostile: huge numbers, deep nesting, NUL bytes
                ('{"code": "x", "timeout": 1e999}', None, "malformed"),
                ('{"code": "x", "timeout": 123456789012345678901234567890}', None, "malformed"),
                ({"code": "x", "memory": 10**18}, "memory", "memory"),
                ('{"code": "x", "timeout": ' + "[" * 100000 + "]" * 100000 + "}", None,
                 "nested"),
                ('{"a":' * 5000 + "1" + "}" * 5000, None, "nested"),
                ('{"code": "print(1)\\u0000"}', None, "malformed"),
                (b'{"code": "\xff\xfe"}', None, "malformed"),
            ]
            for body, field, words in cases:
                st, hd, r = s.execute(body)
                assert st == 400, (body if len(str(body)) < 200 else str(body)[:200], st, r)
                err = r["error"]
                assert err["code"] == "bad_request" and words in err["message"], (body, err) \
                    if len(str(body)) < 200 else err
                assert err.get("field") == field, (field, err)
                # Our words only: never the JSON library's (its option names, "near '...'").
                assert "JSON_" not in err["message"] and " near " not in err["message"], err
                assert hd["x-request-id"]
                if field:
                    assert field in err["message"], err
            # Within the maximum is fine; per-request limits apply.
            st, _, r = s.execute({"code": "import time; time.sleep(5)", "timeout": 0.5})
            assert st == 200 and r["timed_out"] and r["exit_code"] == 124, r
            st, _, r = s.execute({"code": "print(1)", "timeout": 5, "memory": "128M",
                                  "output_limit": 1024, "language": None})
            assert st == 200 and r["stdout"] == "1\n", r
            # The server is still healthy after all that.
            assert s.request("GET", "/v1/health")[0] == 200
            assert s.stop() == 0

    def test_content_type_and_origin(self):
        """A web page cannot run code through a local serve: a body not sent as
        application/json gets 415 (so no cross-site "simple request" runs), and a request
        from a page whose Origin is not allowed gets 403, preflight included."""
        with tempfile.TemporaryDirectory(prefix="serve-ct-") as ws:
            marker = os.path.join(ws, "ran")
            code = "open('ran', 'w').write('x')\nprint('ran')"  # the cwd is the workspace
            body = json.dumps({"code": code})
            with Server("-w", ws) as s:
                # What a page can send without a preflight: text/plain, form types; and none.
                for ct in ("text/plain", "text/plain;charset=UTF-8",
                           "application/x-www-form-urlencoded", "multipart/form-data",
                           "application/jsonp", "application/json-seq", ""):
                    c = s.conn()
                    c.putrequest("POST", "/v1/execute")
                    if ct:
                        c.putheader("Content-Type", ct)
                    c.putheader("Content-Length", str(len(body)))
                    c.endheaders(body.encode())
                    r = c.getresponse()
                    data = json.loads(r.read())
                    c.close()
                    assert r.status == 415, (ct, r.status, data)
                    assert data["error"]["code"] == "unsupported_media_type", data
                    assert not os.path.exists(marker), f"{ct!r}: the code ran"
                # Parameters and case are fine.
                for ct in ("application/json", "application/json; charset=utf-8",
                           "Application/JSON;charset=UTF-8"):
                    st, _, r = s.execute(body, headers={"Content-Type": ct})
                    assert st == 200 and r["stdout"] == "ran\n", (ct, st, r)
                os.unlink(marker)
                # No --allow-origin: any page's request is refused, even as JSON.
                for origin in ("http://evil.example", "null", "http://127.0.0.1:8080"):
                    st, hd, r = s.execute(body, headers={"Origin": origin})
                    assert st == 403 and r["error"]["code"] == "forbidden_origin", (origin, r)
                    assert "access-control-allow-origin" not in hd, hd
                    st, hd, _ = s.request("OPTIONS", "/v1/execute", headers={
                        "Origin": origin, "Access-Control-Request-Method": "POST",
                        "Access-Control-Request-Headers": "content-type"})
                    assert st == 403 and "access-control-allow-origin" not in hd, (st, hd)
                    st, _, _ = s.request("GET", "/v1/health", headers={"Origin": origin})
                    assert st == 403, st
                assert not os.path.exists(marker), "a cross-origin request ran code"
                # Without Origin (curl, SDKs, the remote backend) nothing changes.
                assert s.execute(body)[0] == 200
                assert s.stop() == 0
            ok, other = "https://app.example:8443", "https://app.example"
            with Server("--allow-origin", ok, "--allow-origin", "http://localhost:3000") as s:
                st, hd, _ = s.request("OPTIONS", "/v1/execute", headers={
                    "Origin": ok, "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "content-type, authorization"})
                assert st == 204, st
                assert hd["access-control-allow-origin"] == ok, hd
                assert "POST" in hd["access-control-allow-methods"], hd
                assert "content-type" in hd["access-control-allow-headers"].lower(), hd
                st, hd, r = s.execute({"code": "print(2)"}, headers={"Origin": ok})
                assert st == 200 and r["stdout"] == "2\n", r
                assert hd["access-control-allow-origin"] == ok and "Origin" in hd["vary"], hd
                # Whole origins only: another port, scheme or a suffix is another origin.
                for bad in (other, "https://app.example:8443.evil", "http://app.example:8443",
                            ok + "/"):
                    st, hd, r = s.execute({"code": "print(3)"}, headers={"Origin": bad})
                    assert st == 403 and "access-control-allow-origin" not in hd, (bad, st)
                # An allowed page still needs application/json.
                st, _, r = s.execute(json.dumps({"code": "print(4)"}),
                                     headers={"Origin": ok, "Content-Type": "text/plain"})
                assert st == 415, (st, r)
                assert s.stop() == 0
        # A bad --allow-origin is refused at start.
        s = Server("--allow-origin", "evil.example/path", expect_start=False)
        assert s.proc.wait(20) == 125
        s.__exit__()

    def test_auth(self):
        token = "s3cret-" + uuid.uuid4().hex
        for how in ("flag", "env"):
            args = ["--token", token] if how == "flag" else []
            env = {"EXECBOX_TOKEN": token} if how == "env" else None
            with Server(*args, env=env) as s:
                body = {"code": "print('authed')"}
                st, hd, r = s.execute(body)
                assert st == 401 and r["error"]["code"] == "unauthorized", (st, r)
                assert hd.get("www-authenticate", "").startswith("Bearer"), hd
                for bad in ("Bearer wrong", "Bearer " + token + "x", "Bearer " + token[:-1],
                            "Basic " + token, token, "Bearer "):
                    st, _, _ = s.execute(body, headers={"Authorization": bad})
                    assert st == 401, (bad, st)
                st, _, r = s.execute(body, headers={"Authorization": "Bearer " + token})
                assert st == 200 and r["stdout"] == "authed\n", r
                # health is open (for load balancers); metrics need the token
                assert s.request("GET", "/v1/health")[0] == 200
                assert s.request("GET", "/metrics")[0] == 401
                assert s.request("GET", "/metrics",
                                 headers={"Authorization": "Bearer " + token})[0] == 200
                assert s.stop() == 0
        # auth off: no header needed
        with Server() as s:
            assert s.execute({"code": "print(1)"})[0] == 200
            assert s.stop() == 0

    def test_refuses_public_listen_without_token(self):
        s = Server(listen="0.0.0.0:0", expect_start=False)
        with s:
            rc = s.proc.wait(30)
            log = open(s.logf.name).read()
            assert rc == 125 and "refusing to listen" in log and "--insecure" in log, (rc, log)
        s = Server(listen="[::]:0", expect_start=False)
        with s:
            assert s.proc.wait(30) == 125
        # With a token, or --insecure, it starts (we only ever connect over loopback).
        for args in (["--token", "t0k"], ["--insecure"]):
            with Server(*args, listen="0.0.0.0:0") as s:
                c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
                c.request("GET", "/v1/health")
                assert c.getresponse().status == 200
                c.close()
                assert s.stop() == 0

    def test_unix_socket(self):
        d = tempfile.mkdtemp(prefix="serve-unix-")
        path = os.path.join(d, "execbox.sock")
        with Server(listen="unix:" + path) as s:
            assert s.addr == "unix:" + path
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(30)
            sock.connect(path)
            body = json.dumps({"code": "print('over unix')"}).encode()
            sock.sendall(b"POST /v1/execute HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                         b"Content-Type: application/json\r\nContent-Length: " +
                         str(len(body)).encode() + b"\r\n\r\n" + body)
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
            sock.close()
            head, _, payload = data.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            assert json.loads(payload)["stdout"] == "over unix\n", payload
            assert s.stop() == 0
        assert not os.path.exists(path), "socket file left behind"
        os.rmdir(d)

    def test_body_limit(self):
        with Server("--max-body", "64K") as s:
            code = "print(len('" + "x" * 60000 + "'))"
            st, _, r = s.execute({"code": code})
            assert st == 200 and r["stdout"] == "60000\n", (st, r)
            big = json.dumps({"code": "#" + "y" * 70000})
            st, hd, r = s.execute(big)
            assert st == 413 and r["error"]["code"] == "payload_too_large", (st, r)
            # Without Content-Length (chunked), the limit holds all the same.
            c = s.conn()
            c.putrequest("POST", "/v1/execute")
            c.putheader("Content-Type", JSON)
            c.putheader("Transfer-Encoding", "chunked")
            c.endheaders()
            for _ in range(20):
                piece = b"z" * 8192
                c.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            c.send(b"0\r\n\r\n")
            resp = c.getresponse()
            assert resp.status == 413, resp.status
            resp.read()
            c.close()
            # A huge declared length is refused at once, without reading it.
            sock = socket.create_connection((s.host, s.port), timeout=30)
            sock.sendall(b"POST /v1/execute HTTP/1.1\r\nHost: localhost\r\n"
                         b"Content-Length: 99999999999\r\n\r\n")
            head = sock.recv(4096)
            sock.close()
            assert head.startswith(b"HTTP/1.1 413"), head
            assert s.request("GET", "/v1/health")[0] == 200
            assert s.stop() == 0

    def test_malformed_framing_gets_json_errors(self):
        """A Content-Length or Transfer-Encoding that cannot frame a body is answered by us: one
        JSON error with the right status, exactly one status line and header block, then the
        connection is closed; also when it comes as a later request on a kept-alive
        connection. A request whose framing a proxy and we could read differently (two
        lengths, a length and chunked, another coding) is refused, never guessed."""
        ok = b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n"
        post = b"POST /v1/execute HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        cases = [
            (b"Content-Length: -1\r\n", 400, "bad_request"),
            (b"Content-Length: abc\r\n", 400, "bad_request"),
            (b"Content-Length: 12abc\r\n", 400, "bad_request"),
            (b"Content-Length: \r\n", 400, "bad_request"),
            (b"Content-Length: 99999999999999999999999\r\n", 413, "payload_too_large"),
            (b"Content-Length: 5\r\nContent-Length: 10\r\n", 400, "bad_request"),
            (b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 400, "bad_request"),
            (b"Transfer-Encoding: gzip, chunked\r\n", 400, "bad_request"),
            (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400, "bad_request"),
            (b"Content-Length : 5\r\n", 400, "bad_request"),
            (b" Content-Length: 5\r\n", 400, "bad_request"),
        ]

        def exchange(s, data):
            sock = socket.create_connection((s.host, s.port), timeout=30)
            try:
                sock.sendall(data)
                out = b""
                while True:  # the server must close the connection after the error
                    chunk = sock.recv(65536)
                    if not chunk:
                        return out
                    out += chunk
            finally:
                sock.close()

        def check(raw, status, code, what):
            statuses = re.findall(rb"HTTP/1\.[01] \d{3} ", raw)
            assert len(statuses) == 1, (what, raw)
            head, sep, body = raw.partition(b"\r\n\r\n")
            assert sep and head.startswith(b"HTTP/1.1 %d " % status), (what, raw)
            hd = {}
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                assert k.lower() not in hd, (what, "header twice", raw)
                hd[k.lower()] = v.strip()
            assert hd.get(b"content-type") == b"application/json", (what, raw)
            assert hd.get(b"connection", b"").lower() == b"close", (what, raw)
            assert hd.get(b"x-request-id"), (what, raw)
            assert int(hd[b"content-length"]) == len(body), (what, raw)
            e = json.loads(body)["error"]
            assert e["code"] == code and e["message"], (what, e)

        with Server() as s:
            for hdr, status, code in cases:
                raw = exchange(s, post + hdr + b"\r\n" + b"x" * 5)
                check(raw, status, code, hdr)
                # The same as the second request on a kept-alive connection.
                raw = exchange(s, ok + post + hdr + b"\r\n" + b"x" * 5)
                first, sep, rest = raw.partition(b"\r\n\r\n")
                assert first.startswith(b"HTTP/1.1 200 "), (hdr, raw)
                n = int(re.search(rb"(?i)content-length: *(\d+)", first).group(1))
                check(rest[n:], status, code, b"second: " + hdr)
                assert s.request("GET", "/v1/health")[0] == 200
            # Framing that is fine still works, pipelined too, and the connection stays open.
            body = json.dumps({"code": "print(1)"}).encode()
            sock = socket.create_connection((s.host, s.port), timeout=60)
            sock.sendall(post + b"Content-Length: %d\r\n\r\n" % len(body) + body + ok)
            out = b""
            while out.count(b"HTTP/1.1 200 ") < 2:
                chunk = sock.recv(65536)
                assert chunk, out
                out += chunk
            sock.sendall(ok)
            out = b""
            while b"\r\n\r\n" not in out:
                chunk = sock.recv(65536)
                assert chunk, out
                out += chunk
            assert out.startswith(b"HTTP/1.1 200 "), out
            sock.close()
            # A chunked body is not followed by the front door: its answer closes the connection.
            body = json.dumps({"code": "print(2)"}).encode()
            raw = exchange(s, post + b"Transfer-Encoding: chunked\r\n\r\n" +
                           b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body) + ok)
            assert raw.startswith(b"HTTP/1.1 200 ") and raw.count(b"HTTP/1.1 ") == 1, raw
            assert re.search(rb"(?i)\r\nconnection: close\r\n", raw), raw
            assert b'"stdout":"2\\n"' in raw, raw
            m = s.metrics()
            assert m['execbox_http_requests_total{status="400"}'] >= 20, m
            assert s.stop() == 0

    def test_fifty_concurrent(self):
        with Server("--queue", "64") as s:
            results = [None] * 50

            def one(i):
                try:
                    results[i] = s.execute({"code": f"import os\nprint({i} * 1000 + 7)\n"
                                                    f"print(os.environ.get('X', 'clean'))"},
                                           headers={"X-Request-Id": f"req-{i}"}, timeout=120)
                except Exception as e:  # noqa: BLE001
                    results[i] = e
            threads = [threading.Thread(target=one, args=(i,)) for i in range(50)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(180)
            for i, res in enumerate(results):
                assert not isinstance(res, Exception) and res is not None, (i, res)
                st, hd, r = res
                assert st == 200, (i, st, r)
                assert hd["x-request-id"] == f"req-{i}", (i, hd)
                assert r["stdout"] == f"{i * 1000 + 7}\nclean\n", (i, r)
            m = s.metrics()
            assert m['execbox_runs_total{outcome="ok"}'] == 50, m
            assert m['execbox_http_requests_total{status="200"}'] >= 50, m
            assert s.stop() == 0

    def test_low_fd_limit_is_raised_for_a_burst(self):
        """A server holds fds per sandbox (the pool's, the template's forks, the cgroups kept for
        reuse, each run's pipes): at --pool 8 and eight at once some 500. Started with a soft
        limit of 256 (a service manager's default is 1024) it raises its own soft limit to the
        hard one, and a burst of 160 runs, 8 at a time, all succeed; the runs themselves still
        get the sandbox's own limit."""
        if BACKEND not in (None, "jail") or os.geteuid() != 0:
            print("     (the jail backend as root only: its pool and templates)")
            return
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        low = min(256, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
        try:
            s = Server("--pool", "8", "--workers", "8", "--queue", "64", "--preload", "json")
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        with s:
            with open(f"/proc/{s.proc.pid}/limits") as f:
                line = [ln for ln in f if ln.startswith("Max open files")][0].split()
            assert (int(line[3]), int(line[4])) == (hard, hard), line
            results = []
            lock = threading.Lock()

            def worker(k):
                for i in range(20):
                    try:
                        st, _, r = s.execute({"code": f"import resource\nprint({k * 100 + i}, "
                                                      "resource.getrlimit(resource.RLIMIT_NOFILE))"},
                                             timeout=120)
                        res = (st, r.get("stdout"), r.get("error"))
                    except Exception as e:  # noqa: BLE001
                        res = (None, None, repr(e))
                    with lock:
                        results.append((k * 100 + i, res))
            threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            assert len(results) == 160, len(results)
            for n, (st, out, error) in results:
                assert st == 200 and error is None, (n, st, out, error)
                assert out.startswith(f"{n} "), (n, out)
                assert out.split(" ", 1)[1] == "(1024, 1024)\n", (n, out)  # the sandbox's own
            assert s.stop() == 0

    def test_queue_overflow_429_and_accepted_complete(self):
        with Server("--workers", "1", "--queue", "2") as s:
            results = [None] * 12

            def one(i):
                try:
                    results[i] = s.execute({"code": f"import time\ntime.sleep(1)\nprint({i})"},
                                           timeout=120)
                except Exception as e:  # noqa: BLE001
                    results[i] = e
            # One running, then fill the queue, then everything else must be turned away.
            first = threading.Thread(target=one, args=(0,))
            first.start()
            wait_for(lambda: s.metrics()["execbox_sandboxes_in_flight"] == 1, what="a run")
            threads = [threading.Thread(target=one, args=(i,)) for i in range(1, 12)]
            for t in threads:
                t.start()
            for t in [first] + threads:
                t.join(120)
            ok = [i for i, r in enumerate(results) if r[0] == 200]
            full = [i for i, r in enumerate(results) if r[0] == 429]
            assert len(ok) + len(full) == 12, results
            assert 0 in ok and len(ok) >= 3 and len(full) >= 1, (ok, full)
            for i in ok:
                assert results[i][2]["stdout"] == f"{i}\n", results[i]
            for i in full:
                st, hd, r = results[i]
                assert r["error"]["code"] == "queue_full", r
                assert int(hd["retry-after"]) >= 1, hd
            m = s.metrics()
            assert m['execbox_http_requests_total{status="429"}'] == len(full), m
            assert m['execbox_runs_total{outcome="ok"}'] == len(ok), m
            # the job runner's own counters agree
            assert m["execbox_jobs_rejected_total"] == len(full), m
            assert m["execbox_jobs_accepted_total"] == len(ok), m
            assert m['execbox_jobs_ended_total{end="ran"}'] == len(ok), m
            assert m["execbox_queue_depth"] == 0 and m["execbox_sandboxes_in_flight"] == 0, m
            assert s.stop() == 0

    def test_restart_sweeps_after_kill(self):
        """A serve killed with runs in flight leaves cgroups behind; the next serve removes
        them as it starts, before any request (not at its first run)."""
        if BACKEND not in (None, "jail"):
            return
        import glob

        def leftovers(pid):
            groups = glob.glob(f"/sys/fs/cgroup/**/execbox-{pid}-*", recursive=True)
            procs = []
            for d in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{d}/cgroup") as f:
                        if f"execbox-{pid}-" in f.read():
                            procs.append(int(d))
                except OSError:
                    pass
            return groups, procs

        with tempfile.TemporaryDirectory(prefix="serve-ws-") as ws:
            with Server("--workers", "2", "-w", ws) as s:
                conns = []
                for i in range(2):
                    c = s.conn()
                    c.request("POST", "/v1/execute", headers={"Content-Type": JSON}, body=json.dumps(
                        {"code": f"import time\nopen('up-{i}', 'w').close()\ntime.sleep(60)"}))
                    conns.append(c)
                wait_for(lambda: all(os.path.exists(os.path.join(ws, f"up-{i}")) for i in range(2)),
                         what="both runs to start")
                old = s.proc.pid
                assert leftovers(old)[0], "the runs' cgroups exist while they run"
                s.proc.kill()
                s.proc.wait()
                for c in conns:
                    c.close()
            # Nothing of it runs any more (the sandboxes die with their server)...
            wait_for(lambda: leftovers(old)[1] == [], timeout=10, what="the sandboxes to die")
            with Server() as s2:
                # ... and once the next server listens, its cgroups are gone too.
                groups, procs = leftovers(old)
                assert groups == [] and procs == [], (groups, procs)
                assert s2.stop() == 0

    def test_client_disconnect_kills_sandbox(self):
        with tempfile.TemporaryDirectory(prefix="serve-ws-") as ws, \
                Server("--workspace", ws, "--timeout", "30") as s:
            for stream in (False, True):
                tag = uuid.uuid4().hex[:8]
                code = (f"import time\nopen('started-{tag}', 'w').close()\nprint('up', flush=True)"
                        f"\ntime.sleep(3)\nopen('finished-{tag}', 'w').close()\n")
                c = s.conn()
                headers = {"Content-Type": "application/json"}
                if stream:
                    headers["Accept"] = "text/event-stream"
                c.request("POST", "/v1/execute", body=json.dumps({"code": code}),
                          headers=dict(headers, **{"Content-Type": JSON}))
                wait_for(lambda: os.path.exists(os.path.join(ws, f"started-{tag}")),
                         what="the run to start")
                if stream:
                    r = c.getresponse()
                    assert r.status == 200
                    events = sse_events(r)
                    assert next(events)[0] == "start"
                    ev, data = next(events)
                    assert ev == "stdout" and json.loads(data)["data"].startswith("up"), (ev, data)
                # Hang up mid-run.
                c.sock.shutdown(socket.SHUT_RDWR)
                c.close()
                wait_for(lambda: s.metrics()["execbox_sandboxes_in_flight"] == 0, timeout=10,
                         what="the sandbox to be killed")
                assert descendants(s.proc.pid) == [], descendants(s.proc.pid)
                time.sleep(3.5)
                assert not os.path.exists(os.path.join(ws, f"finished-{tag}")), \
                    "the run went on after its client left"
            m = s.metrics()
            assert m["execbox_runs_cancelled_total"] == 2, m
            assert m['execbox_jobs_ended_total{end="cancelled"}'] == 2, m
            assert sum(v for k, v in m.items() if k.startswith("execbox_runs_total")) == 0, m
            assert m['execbox_http_requests_total{status="499"}'] == 2, m
            gone = [e for e in s.log_lines() if e.get("client_gone")]
            assert len(gone) == 2 and all(e["status"] == 499 for e in gone), gone
            # It still serves.
            assert s.execute({"code": "print(2)"})[2]["stdout"] == "2\n"
            assert s.stop() == 0

    def test_sse_streaming(self):
        with Server() as s:
            code = ("import sys, time\nprint('first', flush=True)\n"
                    "print('to stderr', file=sys.stderr, flush=True)\ntime.sleep(1)\n"
                    "print('second')\nsys.stdout.buffer.write(b'\\xff\\n')\n")
            c = s.conn()
            c.request("POST", "/v1/execute", body=json.dumps({"code": code}),
                      headers={"Accept": "text/event-stream", "Content-Type": JSON})
            r = c.getresponse()
            assert r.status == 200 and r.getheader("Content-Type") == "text/event-stream"
            rid = r.getheader("X-Request-Id")
            seen, out, err = [], "", ""
            running_when_first = None
            for ev, data in sse_events(r):
                seen.append(ev)
                obj = json.loads(data)
                if ev == "start":
                    assert obj["request_id"] == rid, obj
                elif ev == "stdout":
                    out += obj["data"]
                    if running_when_first is None:
                        # The run is still going when its first output arrives.
                        running_when_first = s.metrics()["execbox_sandboxes_in_flight"]
                elif ev == "stderr":
                    err += obj["data"]
                elif ev == "result":
                    result = obj
            c.close()
            assert seen[0] == "start" and seen[-1] == "result", seen
            assert "stdout" in seen and "stderr" in seen, seen
            assert running_when_first == 1, running_when_first
            assert out == "first\nsecond\n\ufffd\n", repr(out)
            assert err == "to stderr\n", repr(err)
            assert result["stdout"] == "first\nsecond\n\ufffd\n" and result["exit_code"] == 0
            # Errors before the run are plain JSON errors, not a stream.
            st, hd, data = s.request("POST", "/v1/execute", body="{}",
                                     headers={"Accept": "text/event-stream"})
            assert st == 400 and json.loads(data)["error"]["field"] == "code", data
            assert s.stop() == 0

    def test_sse_output_limit(self):
        """A flood streamed as SSE stops at the output_limit per stream, then one note naming
        the bytes held back; the result keeps its head-and-tail cut; the run still times out."""
        note = re.compile(r"\n\[\.\.\. execbox: ([0-9]+) bytes omitted \.\.\.\]\n")
        code = ("import sys\nwhile True:\n    print('x' * 100)\n"
                "    print('y' * 100, file=sys.stderr)\n")
        with Server() as s:
            c = s.conn()
            c.request("POST", "/v1/execute",
                      body=json.dumps({"code": code, "timeout": 2, "output_limit": 1024}),
                      headers={"Accept": "text/event-stream", "Content-Type": JSON})
            r = c.getresponse()
            assert r.status == 200, r.status
            got, result = {"stdout": "", "stderr": ""}, None
            for ev, data in sse_events(r):
                if ev in got:
                    got[ev] += json.loads(data)["data"]
                elif ev == "result":
                    result = json.loads(data)
            c.close()
            assert result and result["timed_out"], result
            for name, ch in (("stdout", "x"), ("stderr", "y")):
                text = got[name]
                m = note.search(text)
                assert m and m.start() == 1024 and m.end() == len(text), (name, text[-300:])
                assert text[:1024] == ((ch * 100 + "\n") * 11)[:1024], (name, text[:200])
                # The note names what the stream held back of all the run wrote.
                assert int(m.group(1)) == result[name + "_bytes"] - 1024, (m.group(0), result)
                # The result: head and tail around the buffered note, as before.
                rm = note.search(result[name])
                assert result[name + "_truncated"] and rm, result[name][:600]
                assert rm.start() == 512 and len(result[name]) - rm.end() == 512, result[name]
            assert s.stop() == 0

    def test_warm_pool(self):
        """--pool: every request answered correctly from warm sandboxes, each used once; the
        pool's thread never takes the server's SIGTERM; nothing is left after the drain."""
        with Server("--pool", "2", "--preload", "json", "--workers", "2") as s:
            pids = set()
            for i in range(12):
                wait_for(lambda: s.metrics()["execbox_pool_ready"] >= 1, timeout=60,
                         what="a warm sandbox")
                st, _, r = s.execute({"code": f"import os, random\nprint({i})\n"
                                              f"print(random.random(), os.getpid())"})
                assert st == 200 and r["exit_code"] == 0, (st, r)
                out = r["stdout"].split("\n")
                assert out[0] == str(i), r
                pids.add(out[1])
            assert len(pids) == 12, pids  # fresh random state every time
            # Another policy (a shorter timeout) is served too, cold or from its own pool.
            st, _, r = s.execute({"code": "print('short')", "timeout": 2})
            assert st == 200 and r["stdout"] == "short\n", r
            m = s.metrics()
            warm, cold = (m['execbox_pool_runs_total{sandbox="warm"}'],
                          m['execbox_pool_runs_total{sandbox="cold"}'])
            assert warm + cold == 13 and warm >= 12, m  # each of the 12 found one ready
            assert m["execbox_pool_started_total"] >= warm, m
            assert s.stop() == 0
            assert descendants(s.proc.pid) == []

    def test_sigterm_drains(self):
        with Server("--workers", "1", "--queue", "4") as s:
            results = {}

            def one(i):
                results[i] = s.execute({"code": f"import time\ntime.sleep(1)\nprint({i})"},
                                       timeout=60)
            keep = s.conn()
            keep.request("GET", "/v1/health")
            assert keep.getresponse().read() and True
            t = [threading.Thread(target=one, args=(i,)) for i in range(2)]
            for x in t:
                x.start()
            # One running and one queued: a queue of one alone may be the first request before
            # the worker took it, with the second not yet sent.
            wait_for(lambda: (lambda m: m["execbox_queue_depth"] == 1 and
                              m["execbox_sandboxes_in_flight"] == 1)(s.metrics()),
                     what="one running and one queued")
            s.proc.send_signal(signal.SIGTERM)
            wait_for(lambda: any(e.get("event") == "draining" for e in s.log_lines()),
                     what="draining")
            # A new request on a connection that was already open: 503 + Retry-After.
            keep.request("POST", "/v1/execute", body=json.dumps({"code": "print(1)"}),
                         headers={"Content-Type": JSON})
            r = keep.getresponse()
            body = json.loads(r.read())
            assert r.status == 503 and body["error"]["code"] == "draining", (r.status, body)
            assert int(r.getheader("Retry-After")) >= 1
            keep.close()
            # New connections are refused (also while sandboxes forked before the drain run).
            try:
                socket.create_connection((s.host, s.port), timeout=10).close()
                refused = False
            except OSError:
                refused = True
            assert refused, "still accepting after SIGTERM"
            for x in t:
                x.join(60)
            # The running and the queued one both finished with their own result.
            for i in range(2):
                st, _, r = results[i]
                assert st == 200 and r["stdout"] == f"{i}\n", (i, results[i])
            assert s.proc.wait(30) == 0
            assert descendants(s.proc.pid) == []

    def test_sigterm_leaves_first_with_drain_grace(self):
        """--drain-grace: health says 503 first while runs are still taken (their answers close
        the connection), then the listener closes and the drain goes on."""
        with Server("--drain-grace", "2") as s:
            assert s.request("GET", "/v1/health")[0] == 200
            t0 = time.time()
            s.proc.send_signal(signal.SIGTERM)
            wait_for(lambda: any(e.get("event") == "leaving" for e in s.log_lines()),
                     what="leaving")
            st, _, data = s.request("GET", "/v1/health")
            assert st == 503 and json.loads(data)["status"] == "draining", (st, data)
            assert s.metrics()["execbox_draining"] == 1
            st, hd, r = s.execute({"code": "print('still taken')"})
            assert st == 200 and r["stdout"] == "still taken\n", (st, r)
            assert hd.get("connection", "").lower() == "close", hd
            assert time.time() - t0 < 2, "the grace ended before the checks ran"
            wait_for(lambda: any(e.get("event") == "draining" for e in s.log_lines()),
                     timeout=10, what="draining after the grace")
            assert time.time() - t0 >= 1.9
            try:
                socket.create_connection((s.host, s.port), timeout=10).close()
                refused = False
            except OSError:
                refused = True
            assert refused, "still accepting after the grace"
            assert s.proc.wait(30) == 0

    def test_metrics_counts(self):
        with Server("--timeout", "5") as s:
            m0 = s.metrics()
            assert m0['execbox_build_info{version="0.1.0",backend="%s"}' %
                      json.loads(s.request("GET", "/v1/health")[2])["backend"]] == 1, m0
            for o in ("ok", "error", "timeout", "oom"):
                assert m0[f'execbox_runs_total{{outcome="{o}"}}'] == 0, m0
            assert m0["execbox_workers"] >= 1 and m0["execbox_queue_capacity"] == 64, m0
            s.execute({"code": "print(1)"})
            s.execute({"code": "print(2)"})
            s.execute({"code": "import sys; sys.exit(3)"})
            s.execute({"code": "import time; time.sleep(3)", "timeout": 0.3})
            s.execute({"code": 5})
            s.request("GET", "/nope")
            m = s.metrics()
            assert m['execbox_runs_total{outcome="ok"}'] == 2, m
            assert m['execbox_runs_total{outcome="error"}'] == 1, m
            assert m['execbox_runs_total{outcome="timeout"}'] == 1, m
            assert m['execbox_http_requests_total{status="400"}'] == 1, m
            assert m['execbox_http_requests_total{status="404"}'] == 1, m
            # 1 health + 4 runs + the first metrics scrape
            assert m['execbox_http_requests_total{status="200"}'] == 6, m
            assert m["execbox_request_duration_seconds_count"] == 5, m
            assert m['execbox_request_duration_seconds_bucket{le="+Inf"}'] == 5, m
            assert m["execbox_request_duration_seconds_sum"] >= 0.3, m
            buckets = [v for k, v in m.items() if k.startswith("execbox_request_duration_"
                                                                "seconds_bucket")]
            assert buckets == sorted(buckets), buckets
            assert m["execbox_queue_depth"] == 0 and m["execbox_sandboxes_in_flight"] == 0
            assert s.stop() == 0

    def test_churn_of_disconnects_leaks_nothing(self):
        """Plain and streaming clients that hang up at random moments, with a small queue:
        the server stays consistent, kills what nobody waits for, and exits cleanly (under
        ASan, a leak or a use-after-free fails the exit status)."""
        import random
        rnd = random.Random(7)
        with Server("--workers", "2", "--queue", "6") as s:
            statuses = []

            def client(i):
                stream = i % 2 == 0
                c = s.conn(timeout=30)
                try:
                    code = f"import time\nprint({i}, flush=True)\ntime.sleep({rnd.random() / 2:.2f})"
                    c.request("POST", "/v1/execute", body=json.dumps({"code": code}),
                              headers={"Accept": "text/event-stream", "Content-Type": JSON}
                              if stream else {"Content-Type": JSON})
                    if i % 3 == 0:
                        time.sleep(rnd.random() / 4)
                        c.sock.shutdown(socket.SHUT_RDWR)  # hang up mid-way
                        return
                    r = c.getresponse()
                    body = r.read()
                    statuses.append(r.status)
                    if r.status == 200:
                        text = body.decode()
                        assert f'"stdout":"{i}\\n"' in text, text[:300]
                finally:
                    c.close()
            threads = [threading.Thread(target=client, args=(i,)) for i in range(40)]
            for t in threads:
                t.start()
                time.sleep(0.01)
            for t in threads:
                t.join(120)
            assert statuses and set(statuses) <= {200, 429}, statuses
            wait_for(lambda: (lambda m: m["execbox_sandboxes_in_flight"] == 0 and
                              m["execbox_queue_depth"] == 0)(s.metrics()), what="quiet")
            wait_for(lambda: descendants(s.proc.pid) == [], what="no sandbox processes")
            assert s.execute({"code": "print('still fine')"})[2]["stdout"] == "still fine\n"
            assert s.stop() == 0


if __name__ == "__main__":
    ServeTests().main()
