# SPDX-License-Identifier: MIT
"""A scripted E2B on 127.0.0.1: the REST API (POST /sandboxes, DELETE /sandboxes/{id}), the
code interpreter (port 49999: POST /contexts, the POST /execute NDJSON stream) and envd's
file API (port 49983: the Connect RPCs filesystem.Filesystem/MakeDir and /ListDir in their JSON
encoding, GET /files?path=&username= for a file's bytes), as E2B's SDKs speak them with
E2B_API_URL and E2B_SANDBOX_URL pointing here (one URL serves every sandbox and port, named by
the E2b-Sandbox-Id and E2b-Sandbox-Port headers).

What it checks, as the real service does: the X-API-Key header on the API, the sandbox's
X-Access-Token (envdAccessToken) on /execute, the create body's types. Errors come back in
E2B's shapes: {"code", "message"} from the API, plain text from the code interpreter, and the
proxy's 502 {"sandboxId", "message": "The sandbox was not found", "code": 502} for a sandbox
that does not exist (any more).

A sandbox's code runs for real, as a python3 child of this test process (the fake stands in for
the VM; this is test code running test code): stdout and stderr stream as typed lines, an
uncaught exception comes back as an "error" line with an IPython-style coloured traceback, and
DELETE or the end of the sandbox's lifetime (`timeout` seconds from create) kills the child.
Each sandbox's file system is a host directory standing for the VM's `/` (its template's home
`/home/user` holds a `.bashrc` and a `README.txt`); the child runs in its context's `cwd` there.

Knobs (attributes, set by a test between runs):
  create_429 = N        the next N creates answer 429 with Retry-After: 1
  create_status = (S, message)   every create answers S
  execute_mode = None | "drop" | "unexpected" | "garbage" | "gone" | "http500"
  files_mode = None | "exists" (the template has /home/user/workspace) | "mkdir500" |
               "context500" | "list500" | "listgarbage" | "listflood" (a 9 MiB ListDir reply) |
               "download500" | "download404" | "badentries" (entries outside the directory,
               with "..", of unknown types or sizes)
Every request is recorded in .requests (method, path, headers, body)."""
import json
import os
import secrets
import shutil
import stat
import urllib.parse
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


JUPYTER_PORT = "49999"
ENVD_PORT = "49983"
# Connect's error codes and the HTTP status each travels with.
CONNECT_STATUS = {"invalid_argument": 400, "unauthenticated": 401, "permission_denied": 403,
                  "not_found": 404, "already_exists": 409, "internal": 500, "unimplemented": 501}
FILE_TYPES = {stat.S_IFREG: "FILE_TYPE_FILE", stat.S_IFDIR: "FILE_TYPE_DIRECTORY",
              stat.S_IFLNK: "FILE_TYPE_SYMLINK"}


class Sandbox:
    def __init__(self, sid, token, lifetime, template, workdir):
        self.id = sid
        self.token = token
        self.deadline = time.monotonic() + lifetime
        self.template = template
        self.proc = None
        self.lock = threading.Lock()
        self.contexts = {}
        self.root = os.path.join(workdir, f"fake-e2b-{sid}")
        home = self.host("/home/user")
        os.makedirs(home)
        with open(os.path.join(home, ".bashrc"), "w") as f:
            f.write("# the template's\n")
        with open(os.path.join(home, "README.txt"), "w") as f:
            f.write("the template's own file\n")

    def host(self, path):
        """The host path of a path in the VM (absolute, normalised, never above the root)."""
        return self.root + os.path.normpath("/" + path.lstrip("/"))

    def kill(self):
        with self.lock:
            if self.proc and self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


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
        self.files_mode = None
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

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                    super().handle_error(request, client_address)  # a client that hung up is not

        self.server = Server(("127.0.0.1", 0), H)
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
        if h.headers.get("E2b-Sandbox-Id"):
            port = h.headers.get("E2b-Sandbox-Port")
            if port == JUPYTER_PORT and method == "POST" and h.path == "/execute":
                return self.execute(h, body)
            if port == JUPYTER_PORT and method == "POST" and h.path == "/contexts":
                return self.context(h, body)
            if port == ENVD_PORT:
                return self.envd(h, method, body)
            return self.reply(h, 502, {"sandboxId": h.headers["E2b-Sandbox-Id"], "code": 502,
                                       "message": f"no service on port {port} {h.path}"})
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
        sb = Sandbox(sid, token, body["timeout"], body["templateID"], self.workdir)
        if self.files_mode == "exists":
            os.makedirs(sb.host("/home/user/workspace"))
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

    def sandbox_of(self, h):
        """The sandbox a request to the sandbox names, after E2B's proxy and envd's checks; or
        None, the error sent."""
        sid = h.headers.get("E2b-Sandbox-Id", "")
        with self.lock:
            sb = self.sandboxes.get(sid)
        if not sb:
            self.reply(h, 502, {"sandboxId": sid, "message": "The sandbox was not found",
                                "code": 502})
            return None
        if sb.token and h.headers.get("X-Access-Token") != sb.token:
            self.reply(h, 401, {"code": 401, "message": "unauthorized access, please provide a "
                                "valid access token"})
            return None
        return sb

    def context(self, h, body):
        sb = self.sandbox_of(h)
        if not sb:
            return
        if self.files_mode == "context500":
            return self.reply(h, 500, "Internal Server Error: kernel failed to start",
                              "text/plain")
        if not isinstance(body, dict) or not isinstance(body.get("cwd", ""), str):
            return self.reply(h, 400, "bad context request", "text/plain")
        cwd = body.get("cwd") or "/home/user"
        if not os.path.isdir(sb.host(cwd)):
            return self.reply(h, 500, f"cwd {cwd} does not exist", "text/plain")
        cid = secrets.token_hex(8)
        ctx = {"id": cid, "language": body.get("language") or "python", "cwd": cwd}
        sb.contexts[cid] = ctx
        self.reply(h, 200, ctx)

    # ---- envd ----------------------------------------------------------------------------------

    def rpc_error(self, h, code, message):
        self.reply(h, CONNECT_STATUS[code], {"code": code, "message": message})

    def entry(self, sb, path):
        st = os.lstat(sb.host(path))
        return {"name": os.path.basename(path), "type": FILE_TYPES.get(stat.S_IFMT(st.st_mode),
                                                                       "FILE_TYPE_UNSPECIFIED"),
                "path": path, "size": str(st.st_size), "mode": st.st_mode & 0o7777,
                "permissions": stat.filemode(st.st_mode), "owner": "user", "group": "user",
                "modifiedTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(st.st_mtime))}

    def envd(self, h, method, body):
        sb = self.sandbox_of(h)
        if not sb:
            return
        if method == "GET" and h.path.startswith("/files?"):
            return self.download(h, sb)
        if method != "POST" or not h.path.startswith("/filesystem.Filesystem/"):
            return self.reply(h, 404, {"code": 404, "message": f"no route {method} {h.path}"})
        if h.headers.get("Content-Type") != "application/json":
            return self.reply(h, 415, {"code": "unknown", "message": "unsupported content type"})
        if h.headers.get("Authorization") != "Basic dXNlcjo=":
            return self.rpc_error(h, "unauthenticated", "expected the user 'user'")
        if not isinstance(body, dict) or not isinstance(body.get("path"), str):
            return self.rpc_error(h, "invalid_argument", "path is required")
        path = os.path.normpath("/" + body["path"].lstrip("/"))
        rpc = h.path[len("/filesystem.Filesystem/"):]
        if rpc == "MakeDir":
            if self.files_mode == "mkdir500":
                return self.rpc_error(h, "internal", "error creating directory: disk full")
            if os.path.lexists(sb.host(path)):
                return self.rpc_error(h, "already_exists", f"directory already exists: {path}")
            os.makedirs(sb.host(path))
            return self.reply(h, 200, {"entry": self.entry(sb, path)})
        if rpc == "ListDir":
            return self.list_dir(h, sb, path, body.get("depth") or 1)
        return self.rpc_error(h, "unimplemented", f"filesystem.Filesystem/{rpc} is not implemented")

    def list_dir(self, h, sb, path, depth):
        if self.files_mode == "list500":
            return self.rpc_error(h, "internal", "error reading directory: I/O error")
        if self.files_mode == "listgarbage":
            return self.reply(h, 200, b"<html>not json</html>", "text/html")
        if not os.path.isdir(sb.host(path)):
            return self.rpc_error(h, "not_found", f"directory not found: {path}")
        entries = []

        def walk(vm, level):
            for name in sorted(os.listdir(sb.host(vm))):
                child = vm.rstrip("/") + "/" + name
                e = self.entry(sb, child)
                entries.append(e)
                if e["type"] == "FILE_TYPE_DIRECTORY" and level < depth:
                    walk(child, level + 1)
        walk(path, 1)
        if self.files_mode == "listflood":
            pad = {"name": "x", "type": "FILE_TYPE_DIRECTORY", "path": "/tmp/" + "x" * 1000}
            entries += [pad] * (9 << 10)
        if self.files_mode == "badentries":
            base = {"type": "FILE_TYPE_FILE", "size": "5"}
            entries += [dict(base, path="/home/user/README.txt"),
                        dict(base, path=path + "/../escape.txt"),
                        dict(base, path=path + "/./dot.txt"),
                        dict(base, path=path + "//double.txt"),
                        dict(base, path=path + "/"),
                        dict(base, path=path + "/nul\x00.txt"),
                        dict(base, path=path + "/odd-type.txt", type="FILE_TYPE_SOCKET"),
                        dict(base, path=path + "/neg.txt", size="-1"),
                        dict(base, path=path + "/num.txt", size=7, type=1),
                        dict(base, path=path + "/huge.txt", size="99999999999999999999")]
        self.reply(h, 200, {"entries": entries})

    def download(self, h, sb):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(h.path).query)
        path = q.get("path", [""])[0]
        if q.get("username", ["user"])[0] != "user":
            return self.reply(h, 401, {"code": 401, "message": "unknown user"})
        if self.files_mode == "download500":
            return self.reply(h, 500, {"code": 500, "message": "error reading file: I/O error"})
        hp = sb.host(path)
        if self.files_mode == "download404" or not os.path.isfile(hp):
            return self.reply(h, 404, {"code": 404, "message": f"path '{path}' does not exist"})
        with open(hp, "rb") as f:
            data = f.read()
        self.reply(h, 200, data, "application/octet-stream")

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
        if body.get("context_id") is not None and body.get("language") is not None:
            return self.reply(h, 400, "context_id and language are exclusive", "text/plain")
        cwd = "/home/user"
        if body.get("context_id") is not None:
            ctx = sb.contexts.get(body["context_id"])
            if not ctx:
                return self.reply(h, 404, f"context {body['context_id']} not found",
                                  "text/plain")
            cwd = ctx["cwd"]
        h.send_response(200)
        h.send_header("Content-Type", "application/x-ndjson")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        if self.execute_mode == "garbage":
            data = b"this is not json\n"
            h.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
            return
        path = os.path.join(self.workdir, f"fake-e2b-{sid}-cell.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(body["code"])
        r_err, w_err = os.pipe()
        with sb.lock:
            sb.proc = subprocess.Popen([sys.executable, "-c", RUNNER, path, str(w_err)], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       pass_fds=(w_err,), start_new_session=True,
                                       cwd=sb.host(cwd))
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
