# SPDX-License-Identifier: MIT
"""A misbehaving `execbox serve` on 127.0.0.1, for the remote backend's tests.

GET /v1/health answers as execbox does (so that a client's probe passes); POST /v1/execute
misbehaves as MODE says:
  garbage    200 with a body that is not JSON
  notrecord  200 with JSON that is not a result record
  hang       reads the request and never answers (the connection stays open)
  midbody    200 with Content-Length 4096, sends a few bytes of it, closes
  reset      closes the connection without any answer
  unavailable  503 with execbox's error body (the client should fail over)
  huge       200 with a body larger than any result the client accepts (64 MiB of spaces)
Every request is appended to the file named by --log (one JSON line: method, path).

Run:  python3 fake_execbox.py MODE [--log FILE]   (prints the port on stdout, then serves)
"""
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]
LOG = sys.argv[sys.argv.index("--log") + 1] if "--log" in sys.argv else None
HEALTH = {"status": "ok", "version": "0.1.0", "backend": "fake", "workers": 1, "in_flight": 0,
          "queue_depth": 0, "queue_capacity": 1}
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def record(self):
        if LOG:
            with lock, open(LOG, "a", encoding="utf-8") as f:
                f.write(json.dumps({"method": self.command, "path": self.path,
                                    "time": time.time()}) + "\n")

    def send(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.record()
        if self.path == "/v1/health":
            self.send(200, json.dumps(HEALTH).encode())
        else:
            self.send(404, b'{"error":{"code":"not_found","message":"no such endpoint"}}')

    def do_POST(self):
        self.record()
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        if MODE == "garbage":
            self.send(200, b"<html>this is not the service you are looking for</html>",
                      "text/html")
        elif MODE == "notrecord":
            self.send(200, b'{"stdout": 42, "exit_code": "zero"}')
        elif MODE == "hang":
            while True:
                time.sleep(3600)
        elif MODE == "midbody":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(b'{"stdout":"partial')
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif MODE == "reset":
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif MODE == "unavailable":
            self.send(503, b'{"error":{"code":"draining","message":"the server is shutting down"}}')
        elif MODE == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(64 << 20))
            self.end_headers()
            chunk = b" " * (1 << 20)
            try:
                for _ in range(64):
                    self.wfile.write(chunk)
            except OSError:
                pass
            self.close_connection = True
        else:
            self.send(500, b"unknown mode")


class Server(ThreadingHTTPServer):
    daemon_threads = True


def main():
    srv = Server(("127.0.0.1", 0), Handler)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
