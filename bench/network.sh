#!/bin/bash
# SPDX-License-Identifier: MIT
# network "allow": what the allow-list proxy costs, on loopback only. One local HTTP server on
# 127.0.0.2 (sendfile); the same clients fetch from it directly on the host and, inside a jail
# with --network allow, through the proxy:
#  - throughput: a 100 MB download with curl, REPS rounds of one each way; medians and the ratio
#    (target: proxy >= 80% of direct);
#  - latency: one small request on a fresh connection (as the proxy serves plain HTTP: one
#    request per connection), N times each way with the same Python client; medians and the
#    difference.
# Root only (network allow needs the jail's root mode). Usage: bench/network.sh [EXECBOX]
set -euo pipefail
cd "$(dirname "$0")/.."
EXECBOX=${1:-build-release/execbox}
[ -x "$EXECBOX" ] || { cmake --preset release >/dev/null && cmake --build --preset release >/dev/null; }
[ "$(id -u)" = 0 ] || { echo "bench network: needs root (skipped)"; exit 0; }
PY=/usr/bin/python3
REPS=${REPS:-7}
N=${N:-300}
out=$(mktemp -d)
trap 'kill $srv 2>/dev/null; rm -rf "$out"' EXIT

head -c $((100 << 20)) /dev/zero >"$out/100M"
cat >"$out/server.py" <<'PY'
import http.server, os, sys
root = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.path == "/small":
            body = b"ok\n"
            self.send_response(200)
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(body)
            return
        p = os.path.join(root, "100M")
        with open(p, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.wfile.flush()
            self.connection.sendfile(f)
s = http.server.ThreadingHTTPServer(("127.0.0.2", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
$PY "$out/server.py" "$out" >"$out/port" &
srv=$!
for _ in $(seq 100); do [ -s "$out/port" ] && break; sleep 0.05; done
P=$(cat "$out/port")
URL="http://127.0.0.2:$P"

cat >"$out/lat.py" <<PY
import socket, statistics, sys, time
via_proxy = sys.argv[1] == "proxy"
addr = ("127.0.0.1", 3128) if via_proxy else ("127.0.0.2", $P)
target = "$URL/small" if via_proxy else "/small"
req = ("GET %s HTTP/1.1\r\nHost: 127.0.0.2:$P\r\nConnection: close\r\n\r\n" % target).encode()
ts = []
for i in range($N + 20):
    t = time.perf_counter()
    s = socket.create_connection(addr)
    s.sendall(req)
    got = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        got += d
    s.close()
    assert got.endswith(b"ok\n"), got
    if i >= 20:
        ts.append(time.perf_counter() - t)
print(statistics.median(ts) * 1e6)
PY

# Alternating, one download each way per round, so that a machine busy with other work slows
# both sides alike. The proxied curl runs in a fresh sandbox each time (its start-up is not in
# the figure: curl times the transfer only).
fetch="curl -sS -o /dev/null -w '%{speed_download}\n' $URL/100M"
direct="" proxied=""
for _ in $(seq "$REPS"); do
    direct+="$(bash -c "$fetch" </dev/null) "
    proxied+="$("$EXECBOX" run -l bash --timeout 300 --network allow \
                  --allow-host "127.0.0.2:$P" -c "$fetch") "
done
lat_direct=$($PY "$out/lat.py" direct)
lat_proxy=$("$EXECBOX" run --timeout 300 --network allow --allow-host "127.0.0.2:$P" \
            -c "$(sed 's/sys.argv\[1\]/"proxy"/' "$out/lat.py")")

$PY - "$direct" "$proxied" "$lat_direct" "$lat_proxy" <<'PY'
import statistics, sys
d = statistics.median(float(x) for x in sys.argv[1].split())
p = statistics.median(float(x) for x in sys.argv[2].split())
ld, lp = float(sys.argv[3]), float(sys.argv[4])
print(f"100 MB download, median of {len(sys.argv[1].split())}:")
print(f"  direct   {d / 2**20:9.1f} MiB/s")
print(f"  proxied  {p / 2**20:9.1f} MiB/s   ratio {p / d:.2f} (target >= 0.80)")
print("one small request on a fresh connection, median:")
print(f"  direct   {ld:9.1f} us")
print(f"  proxied  {lp:9.1f} us   added {lp - ld:+.1f} us")
PY
