# SPDX-License-Identifier: MIT
"""`execbox serve` against three attacks, each run for real over loopback and the real jail:
a streaming client that reads steadily while the code prints without end (the server's memory
must stay bounded, what the client cannot take is dropped with a note), twenty slow downloads
of a 64 MiB workspace file (served from the file, not from memory), and DNS rebinding against a
server without a token (a request whose Host is not a name of this server gets 421, on every
route)."""
import hashlib
import http.client
import json
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import SkipTest, Tests  # noqa: E402
from serve import JSON, Server, wait_for  # noqa: E402

MiB = 1 << 20


def rss(pid):
    """The process's resident set, bytes (VmRSS in /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def raw_request(s, method, path, body=b"", headers=None, rcvbuf=None):
    """A socket with one request sent on it (Connection: close)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(60)
    sock.connect((s.host, s.port))
    h = {"Host": f"127.0.0.1:{s.port}", "Connection": "close"}
    h.update(headers or {})
    if body:
        h["Content-Length"] = str(len(body))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items())
    sock.sendall(head.encode() + b"\r\n" + body)
    return sock


class Dechunk:
    """Incremental decoder of a chunked body; keeps the last `keep` bytes of what it decoded and
    notes which of `marks` (each under 128 bytes) went by."""

    def __init__(self, keep, marks=()):
        self.raw = bytearray()
        self.tail = bytearray()
        self.keep = keep
        self.marks, self.found = marks, set()
        self.state, self.need = "size", 0  # "size" line, "data" (need bytes), "crlf"
        self.total = 0
        self.ended = False

    def feed(self, data):
        self.raw += data
        while not self.ended:
            if self.state == "size":
                i = self.raw.find(b"\r\n")
                if i < 0:
                    return
                self.need = int(bytes(self.raw[:i]).split(b";")[0], 16)
                del self.raw[:i + 2]
                self.state = "data"
                if self.need == 0:
                    self.ended = True
            elif self.state == "data":
                take = min(self.need, len(self.raw))
                if take == 0:
                    return
                self.tail += self.raw[:take]
                window = bytes(self.tail[-(take + 128):])
                self.found.update(m for m in self.marks if m in window)
                if len(self.tail) > 2 * self.keep:
                    del self.tail[:len(self.tail) - self.keep]
                del self.raw[:take]
                self.need -= take
                self.total += take
                if self.need == 0:
                    self.state = "crlf"
            else:
                if len(self.raw) < 2:
                    return
                del self.raw[:2]
                self.state = "size"


class HardeningTests(Tests):
    CHECK_TEMP_LEFTOVERS = True

    def test_sse_flood_with_a_steady_reader_keeps_memory_bounded(self):
        """Code prints at 16 MB/s until its timeout (15 s; 40 s under ASan, slower to relay it);
        the client reads steadily at 8 MB/s,
        slower than the code prints. A stream carries at most output_limit bytes, here a large
        128 MiB, which the record's head and tail also hold in serve's memory. Before the fix,
        the stream's buffer was compacted only when fully drained, which a steady reader never
        lets happen: serve's RSS grew by the bytes streamed as well (~75 MB here). Now it stays
        within the record's limit plus the stream's bound, and the stream says how many bytes
        it dropped."""
        rate = 8 * MiB
        limit = 128 * MiB
        # ASan holds what is freed in a quarantine of 256 MiB by default (to catch a use after
        # free), which is its memory, not the server's: cap it, so that RSS measures serve.
        asan = os.environ.get("ASAN_OPTIONS")
        env = {"ASAN_OPTIONS": asan + ":quarantine_size_mb=8"} if asan else None
        # The stream must carry more than 48 MiB for the bound below to mean anything. An ASan
        # build relays it more slowly than the reader reads: 2-4 MB/s on a slow machine (35 MiB
        # in 15 s), so it gets 40 s to carry them; the reader still stops at 60 s.
        timeout = "40" if asan else "15"
        with Server("--timeout", timeout, "--workers", "1", "--output-limit", "128M",
                    env=env) as s:
            # Paced so that the stream outlasts its first seconds: a limit's worth at full speed
            # would be written (and mostly dropped) before the reader got far.
            code = ("import sys, time\nb = 'x' * 65535 + '\\n'\nt0 = time.monotonic()\nn = 0\n"
                    "while True:\n    sys.stdout.write(b)\n    n += len(b)\n"
                    "    d = n / 16e6 - (time.monotonic() - t0)\n    if d > 0:\n"
                    "        sys.stdout.flush()\n        time.sleep(d)\n")
            base = rss(s.proc.pid)
            sock = raw_request(s, "POST", "/v1/execute", json.dumps({"code": code}).encode(),
                               {"Content-Type": JSON, "Accept": "text/event-stream"})
            head = b""
            while b"\r\n\r\n" not in head:
                d = sock.recv(4096)
                assert d, head
                head += d
            head, rest = head.split(b"\r\n\r\n", 1)
            assert head.startswith(b"HTTP/1.1 200"), head
            assert b"transfer-encoding: chunked" in head.lower(), head
            # The record (128 MiB of stdout in its JSON) is the last event: the events before it
            # are noted as they go by.
            slow = b"bytes of output were not streamed: the client read too slowly"
            omitted, result = b"bytes omitted ...]", b"event: result"
            body = Dechunk(keep=4 * MiB, marks=(slow, omitted, result))
            body.feed(rest)
            t0 = time.time()
            got = len(rest)
            peak, samples, next_sample = base, [], t0
            stream_peak = base  # until the stream's end note: the record is not made yet
            behind = 0  # the most the reader was behind its pace while the stream ran
            while not body.ended:
                now = time.time()
                if now >= next_sample:
                    v = rss(s.proc.pid)
                    samples.append((round(now - t0, 1), v // MiB))
                    peak = max(peak, v)
                    if omitted not in body.found:
                        stream_peak = max(stream_peak, v)
                        behind = max(behind, int(rate * (now - t0)) - got)
                    next_sample = now + 0.5
                    # Fail early: no need to let the unfixed server eat the machine.
                    if v - base > 3 * limit + 128 * MiB:
                        break
                want = int(rate * (now - t0)) - got
                if want <= 0:
                    time.sleep(0.005)
                    continue
                d = sock.recv(min(want, 256 * 1024))
                if not d:
                    break
                got += len(d)
                body.feed(d)
                if now - t0 > 60:
                    break
            sock.close()
            print(f"  sse: {got // MiB} MiB read in {time.time() - t0:.1f} s; serve RSS "
                  f"{base // MiB} MiB before, peak {peak // MiB} MiB; samples {samples}")
            assert got > 48 * MiB, f"the stream carried only {got} bytes"
            assert stream_peak - base < limit + 40 * MiB, \
                f"serve's RSS grew by {(stream_peak - base) // MiB} MiB streaming to a steady " \
                "reader"
            # Then the record: its head and tail, their finished copy and its JSON.
            assert peak - base < 3 * limit + 64 * MiB, f"{(peak - base) // MiB} MiB in all"
            assert body.ended, "the stream did not end"
            tail = bytes(body.tail)
            assert result in body.found, tail[-500:]
            m = re.search(rb'"stdout_bytes":(\d+)', tail)
            assert m, tail[-500:]
            written = int(m.group(1))
            print(f"  the program wrote {written // MiB} MiB; the reader was at most "
                  f"{behind // MiB} MiB behind its pace; notes {sorted(body.found)}", flush=True)
            # The end note is owed exactly when the program wrote past the stream's limit.
            assert (omitted in body.found) == (written > limit), (written, body.found)
            # The slow-reader note is owed when the reader set the pace (it got what it asked
            # for, at half the program's rate): serve then had more than it could send. Where
            # serve itself is slower than the reader (an ASan build), the pipe holds the
            # program back instead, nothing is dropped and no note is owed.
            if behind < 16 * MiB:
                assert slow in body.found, (behind, body.found)
            assert '"timed_out":true' in tail.decode(errors="replace"), tail[-500:]

    def test_slow_downloads_are_served_from_the_file(self):
        """Twenty clients download a 64 MiB (sparse) workspace file and read it slowly. Before
        the fix each download was read whole into memory first: 20 x 64 MiB. Now the file is
        sent from its descriptor; one full download still has every byte right."""
        size = 64 * MiB
        with Server() as s:
            st, _, data = s.request("POST", "/v1/sessions", {})
            if st == 501:
                raise SkipTest(f"this server cannot have sessions: {data[:200]!r}")
            assert st == 201, (st, data)
            sid = json.loads(data)["id"]
            code = (f"f = open('big.bin', 'wb')\nf.truncate({size})\nf.seek(1000)\n"
                    f"f.write(b'head')\nf.seek({size - 4})\nf.write(b'tail')\nf.close()\n")
            st, _, data = s.request("POST", f"/v1/sessions/{sid}/execute", {"code": code},
                                    timeout=120)
            assert st == 200 and json.loads(data)["exit_code"] == 0, (st, data)
            expect = bytearray(size)
            expect[1000:1004] = b"head"
            expect[size - 4:] = b"tail"
            digest = hashlib.sha256(expect).hexdigest()
            del expect

            path = f"/v1/sessions/{sid}/files/big.bin"
            base = rss(s.proc.pid)
            socks = [raw_request(s, "GET", path, rcvbuf=16384) for _ in range(20)]
            for k in socks:
                first = k.recv(4096)
                assert first.startswith(b"HTTP/1.1 200"), first[:200]
                assert f"content-length: {size}".encode() in first.lower(), first[:400]
            peak, samples = base, []
            t0 = time.time()
            while time.time() - t0 < 8:
                for k in socks:
                    k.recv(16384)
                v = rss(s.proc.pid)
                samples.append(v // MiB)
                peak = max(peak, v)
                time.sleep(0.25)
            for k in socks:
                k.close()
            print(f"  downloads: serve RSS {base // MiB} MiB before, peak {peak // MiB} MiB "
                  f"with 20 slow readers; samples {samples}")
            assert peak - base < 64 * MiB, \
                f"serve's RSS grew by {(peak - base) // MiB} MiB for 20 slow downloads"

            c = s.conn(timeout=120)
            c.request("GET", path)
            r = c.getresponse()
            assert r.status == 200, r.status
            assert r.getheader("Content-Length") == str(size), r.getheaders()
            assert r.getheader("X-Content-Type-Options") == "nosniff", r.getheaders()
            assert "sandbox" in (r.getheader("Content-Security-Policy") or ""), r.getheaders()
            h = hashlib.sha256()
            n = 0
            while True:
                d = r.read(1 << 20)
                if not d:
                    break
                h.update(d)
                n += len(d)
            c.close()
            assert n == size, n
            assert h.hexdigest() == digest, "the downloaded bytes differ from the file's"
            # A file that a cell truncates under a download ends it (the connection closes
            # short of its Content-Length) at once, rather than leaving the client waiting.
            code = "open('shrinks.bin', 'wb').write(b'a' * (8 << 20))\n"
            st, _, data = s.request("POST", f"/v1/sessions/{sid}/execute", {"code": code})
            assert st == 200, (st, data)
            k = raw_request(s, "GET", f"/v1/sessions/{sid}/files/shrinks.bin", rcvbuf=16384)
            k.settimeout(10)
            first = k.recv(4096)
            assert first.startswith(b"HTTP/1.1 200"), first[:200]
            code = "open('shrinks.bin', 'wb').write(b'b' * 100)\n"
            st, _, data = s.request("POST", f"/v1/sessions/{sid}/execute", {"code": code})
            assert st == 200, (st, data)
            t0, n = time.time(), len(first)
            while True:
                d = k.recv(1 << 20)  # a timeout here fails the test
                if not d:
                    break
                n += len(d)
            k.close()
            assert n < 8 * MiB and time.time() - t0 < 5, (n, time.time() - t0)
            # HEAD: the size, no body; an empty file and a missing one still answer right.
            st, hd, data = s.request("HEAD", path)
            assert st == 200 and hd["content-length"] == str(size) and data == b"", (st, hd)
            code = "open('empty.txt', 'w').close()\n"
            st, _, data = s.request("POST", f"/v1/sessions/{sid}/execute", {"code": code})
            assert st == 200, (st, data)
            st, hd, data = s.request("GET", f"/v1/sessions/{sid}/files/empty.txt")
            assert st == 200 and data == b"" and hd["content-type"].startswith("text/plain"), \
                (st, hd)
            st, _, data = s.request("GET", f"/v1/sessions/{sid}/files/none.txt")
            assert st == 404 and json.loads(data)["error"]["code"] == "file_not_found", data
            wait_for(lambda: s.request("DELETE", f"/v1/sessions/{sid}")[0] == 204,
                     what="the session deleted")
            assert s.stop() == 0

    def test_host_header_checked_without_token(self):
        """DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 makes the
        browser send Host: evil.example. Without a token the server answers only to its own
        names: every route refuses such a request with 421 and a JSON error."""
        with Server() as s:
            port = s.port
            st, _, data = s.request("POST", "/v1/sessions", {})
            if st == 501:
                raise SkipTest(f"this server cannot have sessions: {data[:200]!r}")
            assert st == 201, (st, data)
            sid = json.loads(data)["id"]
            st, _, _ = s.request("PUT", f"/v1/sessions/{sid}/files/secret.txt", b"secret")
            assert st == 201, st
            routes = [
                ("GET", "/v1/health", None),
                ("GET", "/metrics", None),
                ("GET", "/v1/sessions", None),
                ("GET", f"/v1/sessions/{sid}", None),
                ("GET", f"/v1/sessions/{sid}/files", None),
                ("GET", f"/v1/sessions/{sid}/files/secret.txt", None),
                ("HEAD", f"/v1/sessions/{sid}/files/secret.txt", None),
                ("PUT", f"/v1/sessions/{sid}/files/planted.txt", b"planted"),
                ("DELETE", f"/v1/sessions/{sid}/files/secret.txt", None),
                ("POST", f"/v1/sessions/{sid}/execute", {"code": "open('ran', 'w')"}),
                ("POST", "/v1/execute", {"code": "print('ran')"}),
                ("POST", "/v1/sessions", {}),
                ("GET", "/e2b/health", None),
                ("GET", "/e2b/contexts", None),
                ("POST", "/e2b/contexts", {"language": "python"}),
                ("POST", "/e2b/execute", {"code": "open('ran', 'w')"}),
                ("GET", "/nowhere", None),
                ("DELETE", f"/v1/sessions/{sid}", None),
            ]
            bad = ["evil.example", f"evil.example:{port}", "EVIL.example:80",
                   "localhost.evil.example", "127.0.0.1.evil.example", f"evil.example:{port}x",
                   "[::1].evil.example", "", "local host",
                   f"127.0.0.1:{port}@evil.example"]
            for host in bad:
                for method, path, body in routes:
                    st, hd, data = s.request(method, path, body, {"Host": host})
                    assert st == 421, (host, method, path, st, data[:200])
                    if method != "HEAD":
                        e = json.loads(data)["error"]
                        assert e["code"] == "misdirected_request", (host, path, e)
                    assert hd.get("content-type") == "application/json", hd
            # Nothing the refused requests asked for happened.
            st, _, data = s.request("GET", f"/v1/sessions/{sid}/files")
            assert st == 200, (st, data)
            names = sorted(f["path"] for f in json.loads(data)["files"])
            assert names == ["secret.txt"], names
            st, _, data = s.request("GET", f"/v1/sessions/{sid}")
            assert st == 200 and json.loads(data)["execution_count"] == 0, data
            st, _, data = s.request("GET", "/v1/sessions")
            assert len(json.loads(data)["sessions"]) == 1, data
            # The server's own names: loopback and IP addresses, with or without the port.
            good = ["localhost", f"localhost:{port}", "LocalHost", "127.0.0.1",
                    f"127.0.0.1:{port}", "127.9.8.7", "[::1]", f"[::1]:{port}", "10.1.2.3:80",
                    "localhost."]
            for host in good:
                st, _, data = s.request("GET", f"/v1/sessions/{sid}/files/secret.txt",
                                        headers={"Host": host})
                assert st == 200 and data == b"secret", (host, st, data[:200])
                st, _, data = s.request("GET", "/e2b/health", headers={"Host": host})
                assert st == 200, (host, st, data[:200])
            st, _, data = s.request("POST", "/v1/execute", {"code": "print('ok')"},
                                    {"Host": "localhost"})
            assert st == 200 and json.loads(data)["stdout"] == "ok\n", (st, data)
            # A refusal is logged as one.
            assert any(e.get("event") == "access" and e.get("status") == 421
                       for e in s.log_lines())
            assert s.request("DELETE", f"/v1/sessions/{sid}")[0] == 204
            assert s.stop() == 0

    def test_allow_host_header_admits_a_name(self):
        """--allow-host-header NAME: Host NAME (any port, any case) is served, a name that
        merely starts or ends like it is not; the name given with --listen is one of ours."""
        with Server("--allow-host-header", "execbox.internal",
                    "--allow-host-header", "box2.example.") as s:
            port = s.port
            for host in ["execbox.internal", f"execbox.internal:{port}", "EXECBOX.INTERNAL",
                         "box2.example", "box2.example.:1", "localhost", "127.0.0.1"]:
                st, _, data = s.request("GET", "/v1/sessions", headers={"Host": host})
                assert st == 200, (host, st, data[:200])
                st, _, data = s.request("GET", "/e2b/health", headers={"Host": host})
                assert st == 200, (host, st, data[:200])
            for host in ["execbox.internal.evil.example", "evil.execbox.internal",
                         "xexecbox.internal", "execbox.interna", "evil.example"]:
                st, _, data = s.request("GET", "/v1/sessions", headers={"Host": host})
                assert st == 421, (host, st, data[:200])
            assert s.stop() == 0
        with Server(listen="localhost:0") as s:
            st, _, data = s.request("GET", "/v1/sessions", headers={"Host": "localhost"})
            assert st == 200, (st, data)
            st, _, data = s.request("GET", "/v1/sessions", headers={"Host": "evil.example"})
            assert st == 421, (st, data)
            assert s.stop() == 0

    def test_host_header_not_checked_with_token(self):
        """With a token, the token is the defence (a rebinding page does not have it): any
        Host is served to a request that carries it, and none without it."""
        token = "t0k3n-" + "x" * 24
        with Server("--token", token) as s:
            auth = {"Authorization": f"Bearer {token}", "Host": "evil.example"}
            st, _, data = s.request("GET", "/v1/sessions", headers=auth)
            assert st == 200, (st, data)
            st, _, data = s.request("GET", "/v1/sessions", headers={"Host": "evil.example"})
            assert st == 401, (st, data)
            assert s.stop() == 0

    def test_allow_host_header_flag_is_checked(self):
        """A value that is not a host name stops the server at start."""
        for bad in ["evil.example:80", "http://evil.example", "a b", "", "evil/x"]:
            s = Server("--allow-host-header", bad, expect_start=False)
            try:
                assert s.proc.wait(20) == 125, bad
            finally:
                s.__exit__()


if __name__ == "__main__":
    HardeningTests().main()
