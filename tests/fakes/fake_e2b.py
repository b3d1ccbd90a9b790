# SPDX-License-Identifier: MIT
"""A scripted E2B on 127.0.0.1: the REST API (POST /sandboxes, DELETE /sandboxes/{id}) and the
code interpreter's POST /execute NDJSON stream, as E2B's SDKs speak them with E2B_API_URL and
E2B_SANDBOX_URL pointing here (one URL serves every sandbox, named by the E2b-Sandbox-Id
header).

What it checks, as the real service does: the X-API-Key header on the API, the sandbox's
X-Access-Token (envdAccessToken) on /execute, the create body's types. Errors come back in
E2B's shapes: {"code", "message"} from the API, plain text from the code interpreter, and the
proxy's 502 {"sandboxId", "message": "The sandbox was not found", "code": 502} for a sandbox
that does not exist (any more).

A sandbox's code runs for real, as a python3 child of this test process (the fake stands in for
the VM; this is test code running test code): stdout and stderr stream as typed lines, an
uncaught exception comes back as an "error" line with an IPython-style coloured traceback, and
DELETE or the end of the sandbox's lifetime (`timeout` seconds from create) kills the child.

Knobs (attributes, set by a test between runs):
  create_429 = N        the next N creates answer 429 with Retry-After: 1
  create_status = (S, message)   every create answers S
  execute_mode = None | "drop" | "unexpected" | "garbage" | "gone" | "http500"
Every request is recorded in .requests (method, path, headers, body)."""
import json
import os
import secrets
import signal
import selectors
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Runs one cell: the code from argv[1], the error (if any) as one JSON line on fd argv[2].
RUNNER = r'''
import json, os, sys, traceback
code = open(sys.argv[1], encoding="utf-8").read()
err = os.fdopen(int(sys.argv[2]), "w")
try:
    exec(compile(code, "<cell>", "exec"), {"__name__": "__main__"})
except SystemExit as e:
    err.write(json.dumps({"name": "SystemExit", "value": "" if e.code is None else str(e.code),
                          "traceback": ""}))
except BaseException as e:
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    # IPython colours the exception's name; the client must strip the escapes.
    name = type(e).__name__
    tb = tb.replace(name + ":", "\x1b[0;31m" + name + "\x1b[0m:", 1)
    err.write(json.dumps({"name": name, "value": str(e), "traceback": tb}))
'''


class Sandbox:
    def __init__(self, sid, token, lifetime, template):
        self.id = sid
        self.token = token
        self.deadline = time.monotonic() + lifetime
        self.template = template
        self.proc = None
        self.lock = threading.Lock()

    def kill(self):
        with self.lock:
            if self.proc and self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


class FakeE2B:
    def __init__(self, key="e2b_0123456789abcdef", workdir="/tmp"):
        self.key = key
        self.workdir = workdir
        self.sandboxes = {}
        self.deleted = []
        self.expired = []
        self.requests = []
        self.lock = threading.Lock()
        self.create_429 = 0
        self.create_status = None
        self.execute_mode = None
        self.server = None
        self.stop = threading.Event()

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self):
        fake = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                fake.handle(self, "POST")

            def do_DELETE(self):
                fake.handle(self, "DELETE")

            def do_GET(self):
                fake.handle(self, "GET")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        threading.Thread(target=self.reaper, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.stop.set()
        for sb in list(self.sandboxes.values()):
            sb.kill()
        self.server.shutdown()
        self.server.server_close()

    def reaper(self):
        """Ends sandboxes whose lifetime ran out, as E2B does (autoPause false: killed)."""
        while not self.stop.wait(0.2):
            now = time.monotonic()
            with self.lock:
                gone = [s for s in self.sandboxes.values() if s.deadline <= now]
                for s in gone:
                    del self.sandboxes[s.id]
                    self.expired.append(s.id)
            for s in gone:
                s.kill()

    def live(self):
        with self.lock:
            return list(self.sandboxes)

    # ---- HTTP --------------------------------------------------------------------------------

    def reply(self, h, status, body, ctype="application/json", headers=None):
        data = body if isinstance(body, bytes) else (
            json.dumps(body) if ctype == "application/json" else body).encode()
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    def handle(self, h, method):
        n = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(n) if n else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = "<not json>"
        with self.lock:
            self.requests.append({"method": method, "path": h.path,
                                  "headers": {k.lower(): v for k, v in h.headers.items()},
                                  "body": body})
        if method == "POST" and h.path == "/execute":
            return self.execute(h, body)
        if h.headers.get("X-API-Key") != self.key:
            return self.reply(h, 401, {"code": 401, "message": "Invalid API key, it must start "
                                       "with 'e2b_' prefix and be followed by 40 hex characters"})
        if method == "POST" and h.path == "/sandboxes":
            return self.create(h, body)
        if method == "DELETE" and h.path.startswith("/sandboxes/"):
            return self.delete(h, h.path[len("/sandboxes/"):])
        self.reply(h, 404, {"code": 404, "message": f"no route {method} {h.path}"})

    def create(self, h, body):
        if self.create_429 > 0:
            self.create_429 -= 1
            return self.reply(h, 429, {"code": 429, "message": "Rate limit exceeded, please try "
                                       "again later."}, headers={"Retry-After": "1"})
        if self.create_status:
            status, msg = self.create_status
            return self.reply(h, status, {"code": status, "message": msg})
        ok = (isinstance(body, dict) and isinstance(body.get("templateID"), str)
              and isinstance(body.get("timeout"), int) and body["timeout"] > 0
              and isinstance(body.get("allow_internet_access", True), bool)
              and isinstance(body.get("envVars", {}), dict))
        if not ok:
            return self.reply(h, 400, {"code": 400, "message": "invalid create body"})
        if body["templateID"] not in ("code-interpreter-v1", "custom-tpl"):
            return self.reply(h, 404, {"code": 404, "message":
                                       f"template '{body['templateID']}' not found"})
        sid = "i" + secrets.token_hex(10)
        token = secrets.token_hex(16) if body.get("secure") else ""
        sb = Sandbox(sid, token, body["timeout"], body["templateID"])
        with self.lock:
            self.sandboxes[sid] = sb
        self.reply(h, 201, {"sandboxID": sid, "templateID": body["templateID"],
                            "clientID": "6532622b", "envdVersion": "0.2.4",
                            "envdAccessToken": token or None, "domain": None,
                            "alias": "code-interpreter-v1"})

    def delete(self, h, sid):
        with self.lock:
            sb = self.sandboxes.pop(sid, None)
        if not sb:
            return self.reply(h, 404, {"code": 404, "message": f"sandbox '{sid}' not found"})
        sb.kill()
        with self.lock:
            self.deleted.append(sid)
        h.send_response(204)
        h.send_header("Content-Length", "0")
        h.end_headers()

    # ---- the code interpreter ------------------------------------------------------------------

    def line(self, h, obj):
        data = (json.dumps(obj) + "\n").encode()
        h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        h.wfile.flush()

    def execute(self, h, body):
        sid = h.headers.get("E2b-Sandbox-Id", "")
        with self.lock:
            sb = self.sandboxes.get(sid)
        if not sb or self.execute_mode == "gone":
            return self.reply(h, 502, {"sandboxId": sid, "message": "The sandbox was not found",
                                       "code": 502})
        if sb.token and h.headers.get("X-Access-Token") != sb.token:
            return self.reply(h, 401, "Unauthorized: bad access token", "text/plain")
        if self.execute_mode == "http500":
            return self.reply(h, 500, "Internal Server Error: kernel not ready", "text/plain")
        if not isinstance(body, dict) or not isinstance(body.get("code"), str):
            return self.reply(h, 400, "code is required", "text/plain")
        h.send_response(200)
        h.send_header("Content-Type", "application/x-ndjson")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        if self.execute_mode == "garbage":
            data = b"this is not json\n"
            h.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
            return
        path = os.path.join(self.workdir, f"fake-e2b-{sid}.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(body["code"])
        r_err, w_err = os.pipe()
        with sb.lock:
            sb.proc = subprocess.Popen([sys.executable, "-c", RUNNER, path, str(w_err)], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       pass_fds=(w_err,), start_new_session=True, cwd=self.workdir)
        os.close(w_err)
        proc = sb.proc
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
        sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
        sent = 0
        try:
            while sel.get_map():
                for key, _ in sel.select():
                    chunk = os.read(key.fileobj.fileno(), 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    self.line(h, {"type": key.data, "text": chunk.decode("utf-8", "replace"),
                                  "timestamp": time.time_ns()})
                    sent += 1
                    if self.execute_mode == "drop" and sent >= 1:
                        h.close_connection = True
                        h.wfile.flush()
                        h.connection.shutdown(2)
                        return
            proc.wait()
            err = os.read(r_err, 1 << 20)
            if err:
                self.line(h, dict(json.loads(err), type="error"))
            if self.execute_mode == "unexpected":
                self.line(h, {"type": "unexpected_end_of_execution"})
            else:
                self.line(h, {"type": "number_of_executions", "execution_count": 1})
                self.line(h, {"type": "end_of_execution"})
            h.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client went away (deadline, cancel): the DELETE kills the child
        finally:
            os.close(r_err)
            os.unlink(path)
