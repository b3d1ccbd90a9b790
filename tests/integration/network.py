# SPDX-License-Identifier: MIT
"""network "allow": the allow-list proxy end to end, on loopback only. Local HTTP servers on
127.0.0.2-4 play the internet; their names come from an /etc/hosts bind-mounted over the real
one inside a private mount namespace that only this test (and the execbox it starts) sees, and
/etc/resolv.conf points at 127.0.0.1 so that no lookup can ever leave the machine. Each test runs
the real attack or workload inside a real jail and checks what the servers saw."""
import http.client
import http.server
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
import hashlib
import atexit
import base64

sys.path.insert(0, os.path.dirname(__file__))
from common import EXECBOX, SKIP, SkipTest, Tests, run, run_json  # noqa: E402
from serve import Server, parse_metrics, wait_for  # noqa: E402

HOSTS = {
    "web.test": "127.0.0.2",
    "other.test": "127.0.0.3",
    "pkgs.test": "127.0.0.4",
    "private.test": "10.9.9.9",
    "meta.test": "169.254.169.254",
}


class Origin(http.server.ThreadingHTTPServer):
    """A loopback "internet" host: /hello, /bytes/N, or files under a directory; counts hits."""
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, name, ip, root=None):
        self.name, self.root, self.hits = name, root, 0
        self.lock = threading.Lock()
        super().__init__((ip, 0), Handler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        srv = self.server
        with srv.lock:
            srv.hits += 1
        if self.path == "/hello":
            body = f"hello from {srv.name}\n".encode()
        elif self.path.startswith("/bytes/"):
            body = b"x" * int(self.path[7:])
        elif srv.root:
            p = os.path.normpath(os.path.join(srv.root, self.path.lstrip("/").split("?")[0]))
            if os.path.isdir(p):
                p = os.path.join(p, "index.html")
            if not p.startswith(srv.root) or not os.path.isfile(p):
                self.send_error(404)
                return
            with open(p, "rb") as f:
                body = f.read()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if self.path.endswith("/") else
                         "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Origin6(Origin):
    address_family = socket.AF_INET6


def socket_has_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def enter_private_hosts():
    """Re-runs this script in a private mount namespace with our /etc/hosts and resolv.conf."""
    if os.environ.get("EXECBOX_NET_TEST_NS") != "1":
        if not shutil.which("unshare"):
            print("skip: unshare(1) missing")
            sys.exit(SKIP)
        env = dict(os.environ, EXECBOX_NET_TEST_NS="1")
        os.execvpe("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable,
                               os.path.abspath(__file__)] + sys.argv[1:], env)
    d = tempfile.mkdtemp(prefix="execbox-nettest-")
    atexit.register(shutil.rmtree, d, True)  # the binds are this namespace's only
    with open(os.path.join(d, "hosts"), "w") as f:
        f.write("127.0.0.1 localhost\n")
        for n, ip in HOSTS.items():
            f.write(f"{ip} {n}\n")
    with open(os.path.join(d, "resolv.conf"), "w") as f:
        f.write("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
    for name in ("hosts", "resolv.conf"):
        subprocess.run(["mount", "--bind", os.path.join(d, name), "/etc/" + name], check=True)


def fd_links(pid):
    """{fd: what it points to} of process pid; an fd closed while it is read is left out."""
    links = {}
    for f in os.listdir(f"/proc/{pid}/fd"):
        try:
            links[f] = os.readlink(f"/proc/{pid}/fd/{f}")
        except OSError:
            pass
    return links


class NetworkTests(Tests):
    def __init__(self):
        self.web = Origin("web", HOSTS["web.test"])
        self.other = Origin("other", HOSTS["other.test"])
        self.local = Origin("local", "127.0.0.1")
        P = self.web.port
        self.allow_web = ["--allow-host", f"web.test:{P}", "--allow-host", f"127.0.0.2:{P}"]

    def py(self, code, *flags, timeout=20, network="allow"):
        res, p = run_json(["--network", network, "--timeout", str(timeout)] + list(flags) +
                          ["-c", code], timeout=timeout + 60)
        assert not res.get("timed_out"), res
        return res

    def out(self, res):
        assert res["exit_code"] == 0, (res["stdout"], res["stderr"])
        return json.loads(res["stdout"].strip().splitlines()[-1])

    def test_check_reports_the_allow_list(self):
        p = run(["check"])
        line = [ln for ln in p.stdout.splitlines() if "network allow-list" in ln]
        assert line and line[0].split()[0] == "ok", p.stdout
        p = run(["check", "-b", "subprocess"])
        line = [ln for ln in p.stdout.splitlines() if "network allow-list" in ln]
        assert line and line[0].split()[0] != "ok" and "refused" in line[0], p.stdout

    def test_allowed_host_answers_and_egress_counts_bytes(self):
        P = self.web.port
        hits = self.web.hits
        code = f"""
import json, os, socket, urllib.request
body = urllib.request.urlopen("http://web.test:{P}/hello", timeout=5).read().decode()
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT 127.0.0.2:{P} HTTP/1.1\\r\\nHost: 127.0.0.2:{P}\\r\\n\\r\\n")
head = b""
while b"\\r\\n\\r\\n" not in head:
    head += s.recv(1)
req = b"GET /bytes/5000 HTTP/1.0\\r\\nHost: web.test\\r\\n\\r\\n"
s.sendall(req)
got = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    got += d
print(json.dumps({{"body": body, "head": head.decode(), "sent": len(req), "got": len(got),
                  "proxy": os.environ.get("HTTPS_PROXY"), "no_proxy": os.environ.get("NO_PROXY")}}))
"""
        res = self.py(code, *self.allow_web)
        o = self.out(res)
        assert o["body"] == "hello from web\n", o
        assert o["head"].startswith("HTTP/1.1 200"), o
        assert o["proxy"] == "http://127.0.0.1:3128" and o["no_proxy"] == "", o
        assert o["got"] > 5000, o
        eg = res["egress"]
        assert len(eg) == 2, eg
        assert eg[0]["host"] == "web.test" and eg[0]["port"] == P and eg[0]["allowed"], eg
        assert eg[0]["bytes_out"] > 0 and eg[0]["bytes_in"] > len(o["body"]), eg
        # The tunnel's counts are exactly the bytes through it (not the proxy's own 200 line).
        # (A tunnel to a name must carry TLS naming it: test_tunnel_sni_must_name_the_host.
        # This one carries plain HTTP, so it goes to the allowed address.)
        assert eg[1]["host"] == "127.0.0.2" and eg[1]["allowed"], eg
        assert eg[1]["bytes_out"] == o["sent"] and eg[1]["bytes_in"] == o["got"], (eg, o)
        assert self.web.hits == hits + 2

    def test_runs_are_what_the_suite_says(self):
        """With EXECBOX_TEST_WARM=1 (integration.network_warm) every run here is a fork of a
        template, its proxy made in the fork's own namespace: pid 1 is the template run's init
        (execbox-init with its arguments; a cold run's init is named so too, with none: the host's
        command line it had is blanked) and the allow-list still holds; otherwise every run is
        cold."""
        P = self.web.port
        code = f"""
import json, time, urllib.request
for _ in range(500):  # a fork may run a moment before its init's exec has set its arguments
    init = [a for a in open("/proc/1/cmdline").read().split(chr(0)) if a]
    if init:
        break
    time.sleep(0.01)
body = urllib.request.urlopen("http://web.test:{P}/hello", timeout=5).read().decode()
print(json.dumps({{"init": init, "body": body}}))
"""
        res = self.py(code, *self.allow_web)
        o = self.out(res)
        warm = os.environ.get("EXECBOX_TEST_WARM") == "1"
        assert o["init"][0] == "execbox-init", o
        assert (len(o["init"]) > 1) == warm, (o, res["stderr"])
        assert o["body"] == "hello from web\n", o
        assert "no warm sandbox could be started" not in res["stderr"], res["stderr"]

    def test_refusals(self):
        P, P2 = self.web.port, self.other.port
        hits = (self.web.hits, self.other.hits)
        code = f"""
import http.client, json, urllib.request, urllib.error
out = []
for url in ["http://web.test:{P}/hello", "http://web.test:{P + 1}/hello",
            "http://other.test:{P2}/hello", "http://private.test/", "http://meta.test/",
            "http://169.254.169.254/latest/meta-data/", "http://127.0.0.2:{P}/hello",
            "http://localhost:{P}/hello", "http://2130706434:{P}/hello"]:
    try:
        urllib.request.urlopen(url, timeout=5)
        out.append([url, 200, ""])
    except urllib.error.HTTPError as e:
        out.append([url, e.code, e.read().decode()])
c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=5)
c.set_tunnel("other.test", {P2})
try:
    c.request("GET", "/hello")
    out.append(["CONNECT", 200, c.getresponse().read().decode()])
except OSError as e:
    out.append(["CONNECT", 0, str(e)])
print(json.dumps(out))
"""
        # web.test is listed by name only: it resolves to loopback, which no entry names.
        res = self.py(code, "--allow-host", f"web.test:{P}", "--allow-host", "private.test",
                      "--allow-host", "meta.test")
        o = self.out(res)
        why = {u: (st, body) for u, st, body in o}
        expect = {
            f"http://web.test:{P}/hello": "resolves to a loopback address",
            f"http://web.test:{P + 1}/hello": "the host is, on other ports",
            f"http://other.test:{P2}/hello": "not in the allow-list",
            "http://private.test/": "resolves to a private address",
            "http://meta.test/": "resolves to a cloud metadata address",
            "http://169.254.169.254/latest/meta-data/": "not in the allow-list",
            f"http://127.0.0.2:{P}/hello": "not in the allow-list",
            f"http://localhost:{P}/hello": "not in the allow-list",
            f"http://2130706434:{P}/hello": "not a host name or address",
        }
        for url, text in expect.items():
            st, body = why[url]
            assert st in (403, 400) and text in body, (url, st, body)
            assert body.count("\n") == 1, body  # one line
        assert why["CONNECT"][0] == 0 and "403" in why["CONNECT"][1], why["CONNECT"]
        assert (self.web.hits, self.other.hits) == hits, "a refused request reached a server"
        eg = res["egress"]
        assert len(eg) == 10 and not any(e["allowed"] for e in eg), eg
        assert all(e["bytes_out"] == 0 and e["bytes_in"] == 0 for e in eg), eg
        assert eg[-1]["host"] == "other.test" and eg[-1]["port"] == P2, eg

    def test_odd_request_heads(self):
        P = self.web.port
        code = f"""
import json, socket
def ask(data):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(data)
    got = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        got += d
    return got.split(b"\\r\\n")[0].decode()
out = [
    # bare-LF headers (as many as the server takes): the forwarded head grows (LF -> CRLF)
    ask(b"GET http://web.test:{P}/hello HTTP/1.1\\n" +
        b"".join(b"x%d: y\\n" % i for i in range(97)) + b"\\n"),
    ask(b"GET http://web.test:{P}/hello HTTP/1.0\\n\\n"),
    ask(b"GET /hello HTTP/1.1\\r\\n\\r\\n"),
    ask(b"GET https://web.test:{P}/ HTTP/1.1\\r\\n\\r\\n"),
    ask(b"GET http://user@web.test:{P}/ HTTP/1.1\\r\\n\\r\\n"),
    ask(b"CONNECT web.test HTTP/1.1\\r\\n\\r\\n"),
    ask(b"NONSENSE\\r\\n\\r\\n"),
    ask(b"CONNECT \\xff\\xfe\\x01bad:443 HTTP/1.1\\r\\n\\r\\n"),
    ask(b"GET http://web.test:{P}/" + b"a" * 9000 + b" HTTP/1.1\\r\\n\\r\\n"),
]
print(json.dumps(out))
"""
        res = self.py(code, *self.allow_web)
        o = self.out(res)
        assert o[0] == "HTTP/1.0 200 OK" and o[1] == "HTTP/1.0 200 OK", o
        assert [x.split(" ")[1] for x in o[2:]] == ["400"] * 6 + ["431"], o
        # A host of bytes that are no text still makes a valid record.
        assert res["egress"][-1]["host"] == "???bad" and not res["egress"][-1]["allowed"], res

    def test_egress_list_is_capped(self):
        code = """
import socket
n = 0
for i in range(300):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT h%d.unlisted.test:443 HTTP/1.1\\r\\n\\r\\n" % i)
    n += s.recv(100).startswith(b"HTTP/1.1 403")
    s.close()
print(n)
"""
        res = self.py(code, *self.allow_web)
        assert res["stdout"] == "300\n", res
        eg = res["egress"]
        assert len(eg) == 256 and res.get("egress_truncated") is True, (len(eg), res.keys())
        assert eg[0]["host"] == "h0.unlisted.test" and eg[255]["host"] == "h255.unlisted.test"

    def tls_origin(self, ip):
        """A TLS server on ip with a self-signed certificate made here: records the server
        name of every hello it gets and the handshakes it completes."""
        import ssl
        d = tempfile.mkdtemp(prefix="execbox-tls-")
        atexit.register(shutil.rmtree, d, True)
        crt, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                        "1", "-subj", "/CN=web.test", "-keyout", key, "-out", crt],
                       check=True, capture_output=True)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(crt, key)
        seen = {"sni": [], "done": 0, "conns": 0}
        ctx.sni_callback = lambda sock, name, c: seen["sni"].append(name) and None
        ls = socket.socket()
        ls.bind((ip, 0))
        ls.listen(64)

        def serve():
            while True:
                c, _ = ls.accept()
                seen["conns"] += 1
                try:
                    c.settimeout(5)
                    t = ctx.wrap_socket(c, server_side=True)
                    seen["done"] += 1
                    t.sendall(b"tls hello\n")
                    t.close()
                except (OSError, ssl.SSLError):
                    c.close()
        threading.Thread(target=serve, daemon=True).start()
        return ls.getsockname()[1], seen

    def test_tunnel_sni_must_name_the_host(self):
        """Domain fronting through an allowed name: CONNECT web.test, then a TLS hello whose
        server name is forbidden.example. Before the fix the hello reached the server (which,
        on a shared front, would serve the forbidden name); now the tunnel closes before any of
        its bytes go. A hello naming the CONNECT host (any case, a trailing dot) passes; no
        server name to a name is refused; to an allowed address the tunnel is not checked."""
        TP, seen = self.tls_origin(HOSTS["web.test"])
        code = f"""
import json, socket, ssl
def tunnel(target, sni):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(("CONNECT %s:{TP} HTTP/1.1\\r\\n\\r\\n" % target).encode())
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        head += s.recv(1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        return t.recv(100).decode()
    except (OSError, ssl.SSLError) as e:
        return "refused: " + type(e).__name__
out = {{}}
for target, sni in [("web.test", "forbidden.example"), ("web.test", "web.test"),
                    ("web.test", "WEB.Test."), ("web.test", None),
                    ("127.0.0.2", "forbidden.example")]:
    out["%s/%s" % (target, sni)] = tunnel(target, sni)
print(json.dumps(out))
"""
        res = self.py(code, "--allow-host", f"web.test:{TP}", "--allow-host", f"127.0.0.2:{TP}")
        o = self.out(res)
        print(f"     (tunnels: {o}; server names the server saw: {seen['sni']})")
        assert "forbidden.example" not in seen["sni"][:-1], seen  # only the address's one
        assert o["web.test/forbidden.example"].startswith("refused"), o
        assert o["web.test/None"].startswith("refused"), o
        assert o["web.test/web.test"] == "tls hello\n", o
        assert o["web.test/WEB.Test."] == "tls hello\n", o
        assert o["127.0.0.2/forbidden.example"] == "tls hello\n", o
        assert seen["done"] == 3 and seen["sni"][-1] == "forbidden.example", seen

    def test_plain_connection_carries_one_request(self):
        """A keep-alive origin (it ignores "Connection: close", as a careless or hostile
        front may) on the allowed web.test: a second request on the same client connection,
        for Host other.test, must not reach it. Before the fix it did (the origin saw two
        requests, the second for other.test); now only the first goes upstream."""
        hosts = []
        ls = socket.socket()
        ls.bind((HOSTS["web.test"], 0))
        ls.listen(16)
        KP = ls.getsockname()[1]

        def serve():
            while True:
                c, _ = ls.accept()
                c.settimeout(5)
                buf = b""
                try:
                    while True:
                        while b"\r\n\r\n" not in buf:
                            d = c.recv(4096)
                            if not d:
                                raise OSError("eof")
                            buf += d
                        head, buf = buf.split(b"\r\n\r\n", 1)
                        h = [ln.split(b":", 1)[1].strip().decode() for ln in head.split(b"\r\n")
                             if ln.lower().startswith(b"host:")]
                        hosts.append(h[0] if h else "")
                        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
                except OSError:
                    c.close()
        threading.Thread(target=serve, daemon=True).start()
        P2 = self.other.port
        code = f"""
import json, socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
s.sendall(b"GET http://web.test:{KP}/a HTTP/1.1\\r\\nHost: web.test:{KP}\\r\\n"
          b"Content-Length: 4\\r\\n\\r\\nbody"
          b"GET /b HTTP/1.1\\r\\nHost: other.test:{P2}\\r\\n\\r\\n")
got = b""
try:
    while got.count(b"ok\\n") < 2:
        d = s.recv(4096)
        if not d:
            break
        got += d
except OSError:
    pass
print(json.dumps({{"responses": got.count(b"HTTP/1.1 200")}}))
"""
        res = self.py(code, "--allow-host", f"web.test:{KP}", "--allow-host", f"127.0.0.2:{KP}")
        o = self.out(res)
        time.sleep(0.5)
        print(f"     (Host values the origin saw: {hosts}; responses: {o['responses']})")
        assert hosts == [f"web.test:{KP}"], hosts
        assert o["responses"] == 1, o

    def test_explicit_entries_and_localhost(self):
        P, L = self.web.port, self.local.port
        code = f"""
import json, urllib.request
print(json.dumps([urllib.request.urlopen(u, timeout=5).read().decode() for u in
                  ["http://localhost:{L}/hello", "http://web.test:{P}/hello"]]))
"""
        # localhost always means loopback; web.test's loopback address is named by a range.
        res = self.py(code, "--allow-host", f"localhost:{L}", "--allow-host", "web.test",
                      "--allow-host", "127.0.0.0/8", "--policy", self.ports_file(P))
        assert self.out(res) == ["hello from local\n", "hello from web\n"], res

    def test_catch_all_range_does_not_open_loopback(self):
        """The review's attack: --allow-host 0.0.0.0/0:PORT (or ::/0) reached a host service on
        127.0.0.1. A range wider than loopback says "the internet"; only an entry naming
        loopback (an address, a range within 127.0.0.0/8 or ::1, localhost) opens it."""
        L = self.local.port
        six = Origin6("local6", "::1") if socket_has_ipv6_loopback() else None
        hits = (self.local.hits, six.hits if six else 0)
        urls = [f"http://127.0.0.1:{L}/hello", f"http://[::ffff:127.0.0.1]:{L}/hello"]
        if six:
            urls.append(f"http://[::1]:{six.port}/hello")
        code = f"""
import json, urllib.request, urllib.error
out = []
for url in {urls!r}:
    try:
        out.append([url, urllib.request.urlopen(url, timeout=5).status, ""])
    except urllib.error.HTTPError as e:
        out.append([url, e.code, e.read().decode()])
print(json.dumps(out))
"""
        flags = ["--allow-host", f"0.0.0.0/0:{L}", "--allow-host", f"[::/0]:{L}"]
        if six:
            flags += ["--allow-host", f"[::/0]:{six.port}", "--allow-host",
                      f"0.0.0.0/0:{six.port}"]
        o = self.out(self.py(code, *flags))
        for url, st, body in o:
            assert st == 403 and "loopback address, which no entry names" in body, (url, st, body)
        assert (self.local.hits, six.hits if six else 0) == hits, "a catch-all reached loopback"
        # Naming loopback still opens it.
        named = ["--allow-host", f"127.0.0.1:{L}", "--allow-host", f"[::ffff:127.0.0.0/104]:{L}"]
        if six:
            named += ["--allow-host", f"[::1]:{six.port}"]
        o = self.out(self.py(code, *named))
        assert all(st == 200 for _, st, _ in o), o
        if six:
            six.shutdown()

    def ports_file(self, port):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump({"network": "allow", "allow_ports": [port]}, f)
        f.close()
        atexit.register(os.unlink, f.name)
        return f.name

    def test_raw_sockets_reach_nothing(self):
        P = self.web.port
        hits = self.web.hits
        code = f"""
import json, socket
out = {{}}
def tcp(addr):
    return lambda: socket.create_connection(addr, timeout=2)
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.sendto(b"x", ("127.0.0.2", {P}))
    s.recv(10)
for name, fn in [("loopback_server", tcp(("127.0.0.2", {P}))), ("host_lo", tcp(("127.0.0.1", 22))),
                 ("private", tcp(("10.0.0.1", 80))), ("public", tcp(("192.0.2.1", 443))),
                 ("v6", tcp(("::1", {P}))), ("udp", udp),
                 ("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW)),
                 ("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))]:
    try:
        fn()
        out[name] = "REACHED"
    except OSError as e:
        out[name] = type(e).__name__
out["interfaces"] = [ln.split(":")[0].strip() for ln in open("/proc/net/dev").readlines()[2:]]
print(json.dumps(out))
"""
        o = self.out(self.py(code, *self.allow_web))
        assert "REACHED" not in o.values(), o
        assert o["interfaces"] == ["lo"], o
        assert self.web.hits == hits

    def test_dns_fails_fast(self):
        code = """
import json, socket, time
t = time.monotonic()
try:
    socket.getaddrinfo("web.test", 80)
    r = "RESOLVED"
except socket.gaierror as e:
    r = "gaierror"
print(json.dumps({"r": r, "s": time.monotonic() - t}))
"""
        res = self.py(code, *self.allow_web, timeout=5)
        o = self.out(res)
        assert o["r"] == "gaierror", o
        print(f"     (lookup failed after {o['s'] * 1000:.1f} ms)")

    def test_per_call_policy_cannot_widen(self):
        P, P2 = self.web.port, self.other.port
        get = f"""
import urllib.request
print(urllib.request.urlopen("http://web.test:{P}/hello", timeout=5).read().decode(), end="")
"""
        with Server("--workers", "2", "--network", "allow", *self.allow_web) as s:
            for extra in ({"allow_hosts": [f"other.test:{P2}"]}, {"allow_hosts": ["*.test"]},
                          {"allow_hosts": ["web.test"], "allow_ports": [P, 22]},
                          {"allow_hosts": ["127.0.0.0/8"]}):
                st, _, body = s.execute(dict({"code": get}, **extra))
                assert st == 400 and "allow_hosts" in json.dumps(body), (extra, st, body)
            # Narrower is fine: the run gets exactly what it asked for.
            st, _, r = s.execute({"code": get, "allow_hosts": [f"web.test:{P}", f"127.0.0.2:{P}"]})
            assert st == 200 and r["stdout"] == "hello from web\n", r
            st, _, r = s.execute({"code": get, "allow_hosts": [f"web.test:{P}"]})
            assert st == 200 and r["exit_code"] != 0 and "HTTP Error 403" in r["stderr"], r
            assert "loopback" in r["egress"][0]["reason"], r
            st, _, r = s.execute({"code": get, "network": "none"})
            assert st == 200 and r["exit_code"] != 0 and "egress" not in r, r
            m = s.metrics()
            assert m['execbox_egress_total{decision="allowed"}'] >= 1, m
            assert m['execbox_egress_total{decision="refused"}'] >= 1, m
        with Server("--workers", "1") as s:
            st, _, body = s.execute({"code": get, "network": "allow",
                                     "allow_hosts": [f"web.test:{P}"]})
            assert st == 400 and "network" in json.dumps(body), body

    def test_javascript_through_the_proxy(self):
        P = self.web.port
        code = ('require("http").get({host: "127.0.0.1", port: 3128, path: '
                f'"http://web.test:{P}/hello"}}, r => {{ let b = ""; r.on("data", d => b += d); '
                'r.on("end", () => console.log(r.statusCode, b.trim(), '
                'process.env.NODE_USE_ENV_PROXY)); });')
        res, p = run_json(["-l", "javascript", "--network", "allow", "-c", code] + self.allow_web)
        assert res["stdout"] == "200 hello from web 1\n", res

    def test_mcp_surface(self):
        P = self.web.port
        msgs = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "execute_python", "arguments": {"code": (
                    "import urllib.request\n"
                    f"print(urllib.request.urlopen('http://web.test:{P}/hello').read().decode())")}}},
        ]
        p = subprocess.run([EXECBOX, "mcp", "--network", "allow"] + self.allow_web,
                           input="".join(json.dumps(m) + "\n" for m in msgs), text=True,
                           capture_output=True, timeout=60)
        replies = {r["id"]: r for r in map(json.loads, p.stdout.splitlines()) if "id" in r}
        # What the model is told matches what the sandbox gets.
        assert f"web.test:{P}" in replies[1]["result"]["instructions"], replies[1]
        desc = replies[2]["result"]["tools"][0]["description"]
        assert f"web.test:{P}" in desc and "no network" not in desc, desc
        res = replies[3]["result"]["structuredContent"]
        assert res["stdout"] == "hello from web\n\n", res
        assert res["egress"][0]["host"] == "web.test" and res["egress"][0]["allowed"], res

    def test_other_backends_refuse(self):
        res, p = run_json(["-b", "subprocess", "--network", "allow", "--allow-host", "web.test",
                           "-c", "print('ran')"])
        assert res["exit_code"] != 0 and "ran" not in res["stdout"], res
        assert res["error"]["name"] == "SandboxError", res
        assert "not available with the 'subprocess' backend" in res["stderr"], res

    def test_slowloris_does_not_starve_other_runs(self):
        P = self.web.port
        slow = f"""
import json, socket, time
conns, busy = [], 0
for i in range(70):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"GET http://web.test:{P}/hello HTTP/1.1\\r\\nX-Slow: ")
    conns.append(s)
time.sleep(0.5)
live = []
for s in conns:
    s.setblocking(False)
    try:
        d = s.recv(200)
        busy += b" 503 " in d
    except BlockingIOError:
        live.append(s)
closed, t0 = 0, time.monotonic()
while live and time.monotonic() - t0 < 14:
    time.sleep(1)
    for s in list(live):
        try:
            s.send(b"a")
            if s.recv(1) == b"":
                closed += 1
                live.remove(s)
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
            live.remove(s)
print(json.dumps({{"busy": busy, "held": len(conns) - busy, "closed": closed}}))
"""
        fast = f"""
import urllib.request
for i in range(10):
    assert urllib.request.urlopen("http://web.test:{P}/hello", timeout=5).read() == b"hello from web\\n"
print("ten ok")
"""
        with Server("--workers", "2", "--timeout", "30", "--network", "allow",
                    *self.allow_web) as s:
            done = {}

            def slow_run():
                done["slow"] = s.execute({"code": slow}, timeout=60)
                done["slow_at"] = time.monotonic()

            t = threading.Thread(target=slow_run)
            t.start()
            time.sleep(2)  # the slow run now holds every connection its proxy allows
            st, _, r = s.execute({"code": fast})
            fast_at = time.monotonic()
            t.join()
            assert st == 200 and r["stdout"] == "ten ok\n", r
            assert fast_at < done["slow_at"], "the other run had to wait for the slow one"
            st, _, r = done["slow"]
            o = json.loads(r["stdout"])
            # 64 connections held, the rest refused at once, the held ones cut at the head
            # deadline.
            assert o["busy"] == 6 and o["held"] == 64 and o["closed"] == 64, o

    def test_200_tunnels_from_8_sandboxes_release_every_fd(self):
        P = self.web.port
        code = f"""
import socket, threading
N, SIZE = 25, 100000
ok, barrier, lock = [0], threading.Barrier(25), threading.Lock()
def one():
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(b"CONNECT 127.0.0.2:{P} HTTP/1.1\\r\\n\\r\\n")  # plain HTTP inside: an address
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 200"), head
    barrier.wait()  # all 25 tunnels of this sandbox are open at once
    s.sendall(b"GET /bytes/%d HTTP/1.0\\r\\n\\r\\n" % SIZE)
    got = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        got += d
    if got.endswith(b"x" * SIZE):
        with lock:
            ok[0] += 1
ts = [threading.Thread(target=one) for _ in range(N)]
[t.start() for t in ts]
[t.join() for t in ts]
print(ok[0])
"""
        with Server("--workers", "8", "--timeout", "60", "--network", "allow",
                    *self.allow_web) as s:
            st, _, r = s.execute({"code": "print(1)"})  # warm-up: the server's own fds settle
            assert st == 200, r
            pid = s.proc.pid

            def fds():
                # The kinds of fd a run's proxy holds (sockets, splice pipes, eventfds, its
                # epoll). Not counted: the executor's pool of fresh namespaces and the pidfds of
                # sandboxes whose teardown is deferred past the result, which are bounded by
                # the executor, not by runs.
                n = 0
                for f in os.listdir(f"/proc/{pid}/fd"):
                    try:
                        link = os.readlink(f"/proc/{pid}/fd/{f}")
                    except OSError:
                        continue
                    n += link.startswith(("socket:", "pipe:", "anon_inode:[eventfd]",
                                          "anon_inode:[eventpoll]"))
                return n

            def threads():
                return len(os.listdir(f"/proc/{pid}/task"))

            base_fds, base_threads = fds(), threads()
            base_list = fd_links(pid)
            hits = self.web.hits
            results = [None] * 8

            def go(i):
                results[i] = s.execute({"code": code}, timeout=120)

            ts = [threading.Thread(target=go, args=(i,)) for i in range(8)]
            [t.start() for t in ts]
            [t.join() for t in ts]
            for st, _, r in results:
                assert st == 200 and r["stdout"] == "25\n", r
                assert len(r["egress"]) == 25 and all(e["allowed"] for e in r["egress"]), r
                assert all(e["bytes_in"] > 100000 for e in r["egress"]), r["egress"]
            assert self.web.hits == hits + 200
            try:
                wait_for(lambda: fds() <= base_fds, what=f"serve's fds back to {base_fds}")
            except AssertionError:
                now = fd_links(pid)
                raise AssertionError(f"fds before {base_list}, after {now}")
            wait_for(lambda: threads() <= base_threads, what=f"threads back to {base_threads}")

    def test_pip_download_from_a_local_index(self):
        if subprocess.run(["/usr/bin/python3", "-m", "pip", "--version"],
                          capture_output=True).returncode != 0:
            raise SkipTest("Debian's python3-pip is not installed")
        root = tempfile.mkdtemp(prefix="execbox-index-")
        atexit.register(shutil.rmtree, root, True)
        whl = "tinypkg-1.0-py3-none-any.whl"
        files = {
            "tinypkg/__init__.py": b"VALUE = 42\n",
            "tinypkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\n"
                                              b"Version: 1.0\n",
            "tinypkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
                                           b"Root-Is-Purelib: true\nTag: py3-none-any\n",
        }
        record = io.StringIO()
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for name, data in files.items():
                z.writestr(name, data)
                h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                record.write(f"{name},sha256={h.decode()},{len(data)}\n")
            record.write("tinypkg-1.0.dist-info/RECORD,,\n")
            z.writestr("tinypkg-1.0.dist-info/RECORD", record.getvalue())
        data = buf.getvalue()
        os.makedirs(os.path.join(root, "simple", "tinypkg"))
        os.makedirs(os.path.join(root, "files"))
        with open(os.path.join(root, "files", whl), "wb") as f:
            f.write(data)
        digest = hashlib.sha256(data).hexdigest()
        with open(os.path.join(root, "simple", "tinypkg", "index.html"), "w") as f:
            f.write(f'<html><body><a href="/files/{whl}#sha256={digest}">{whl}</a></body></html>')
        pkgs = Origin("pkgs", HOSTS["pkgs.test"], root=root)
        Q = pkgs.port
        res, p = run_json(["-l", "bash", "--timeout", "60", "--memory", "512M", "--network",
                           "allow", "--allow-host", f"pkgs.test:{Q}", "--allow-host",
                           f"127.0.0.4:{Q}", "-c",
                           f"python3 -m pip download --no-cache-dir --disable-pip-version-check "
                           f"--no-deps --index-url http://pkgs.test:{Q}/simple/ --trusted-host "
                           f"pkgs.test -d /tmp/dl tinypkg && sha256sum /tmp/dl/{whl}"],
                          timeout=120)
        assert res["exit_code"] == 0, (res["stdout"], res["stderr"])
        assert digest in res["stdout"], res["stdout"]
        eg = res["egress"]
        assert eg and all(e["host"] == "pkgs.test" and e["allowed"] for e in eg), eg
        assert sum(e["bytes_in"] for e in eg) > len(data), eg
        pkgs.shutdown()


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skip: network allow needs root (the jail's root mode)")
        sys.exit(SKIP)
    enter_private_hosts()
    NetworkTests().main()
