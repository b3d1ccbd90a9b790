# SPDX-License-Identifier: MIT
"""One number format on every surface: a result's reals (cpu_time, execution_time, ...) print
with at most EXECBOX_JSON_REAL_DIGITS (6) significant digits, as `run --json` prints them, in
MCP replies, the agent's --json, its transcript and what it sends the model, and serve's JSON and
SSE bodies; never jansson's default 17 (`"cpu_time":0.022505000000000001`)."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from agent import Run  # noqa: E402
from common import EXECBOX, Tests, run  # noqa: E402
from serve import Server  # noqa: E402

DIGITS = 6
# A JSON number with a fraction or an exponent, outside a word (escaped JSON inside strings,
# such as the tool results the agent sends, counts too).
REAL = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)(?:[eE][-+]?\d+)?|(?<![\w.])-?\d+[eE][-+]?\d+")
CODE = "s = 0\nfor i in range(200000):\n    s += i * i\nprint(s)\n"


def significant(num):
    mant = re.split(r"[eE]", num.lstrip("-"))[0].replace(".", "").lstrip("0")
    return len(mant)


def check_text(where, text, at_least=1):
    """Every real in text has at most DIGITS significant digits; there are at_least of them."""
    found = REAL.findall(text)
    assert len(found) >= at_least, f"{where}: {len(found)} reals in {text[:300]!r}"
    long = [n for n in found if significant(n) > DIGITS]
    assert not long, f"{where}: reals with more than {DIGITS} significant digits: {long[:5]}"
    return found


class NumberTests(Tests):
    def test_run_json(self):
        p = run(["run", "--json", "-c", CODE])
        assert p.returncode == 0, p.stderr
        check_text("run --json", p.stdout)

    def test_mcp(self):
        # Whether %.17g shows noise depends on the value: five calls give some twenty reals.
        msgs = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-03-26", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ] + [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "execute_python", "arguments": {"code": CODE}}} for i in range(2, 7)]
        p = subprocess.run([EXECBOX, "mcp"], input="".join(json.dumps(m) + "\n" for m in msgs),
                           text=True, capture_output=True, timeout=300)
        replies = [r for r in map(json.loads, p.stdout.splitlines()) if r.get("id", 0) >= 2]
        assert len(replies) == 5, (p.stdout[-500:], p.stderr[-500:])
        for r in replies:
            res = r["result"]["structuredContent"]
            assert res["exit_code"] == 0 and res["cpu_time"] is not None, res
        check_text("mcp replies", p.stdout, at_least=10)

    def test_agent(self):
        for provider in ("anthropic", "openai"):
            r = Run(provider, "first_try")
            r.check(r.proc.returncode == 0, "exit status")
            check_text(f"agent --json ({provider})", r.proc.stdout)
            check_text(f"what the agent sent the model ({provider})", r.requests[-1]["raw"])

    def test_serve(self):
        with Server() as s:
            bodies = []
            for _ in range(3):
                st, _, data = s.request("POST", "/v1/execute", {"code": CODE}, timeout=120)
                assert st == 200, (st, data[:300])
                bodies.append(data.decode())
            check_text("POST /v1/execute", "\n".join(bodies), at_least=6)
            events = []
            for _ in range(3):
                st, _, data = s.request("POST", "/v1/execute", {"code": CODE},
                                        {"Accept": "text/event-stream"}, timeout=120)
                assert st == 200, (st, data[:300])
                events.append([ln for ln in data.decode().splitlines()
                               if ln.startswith("data:")][-1])
            check_text("SSE result events", "\n".join(events), at_least=6)


if __name__ == "__main__":
    NumberTests().main()
