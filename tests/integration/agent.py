# SPDX-License-Identifier: MIT
"""`execbox agent` end to end against the scripted LLM server (tests/fakes/fake_llm.py), for
both wire formats: the loop, the history it sends, retries, errors, and the key's secrecy."""
import email.utils
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fakes"))
from common import EXECBOX, Tests, run  # noqa: E402
from fake_llm import FakeLLM, load_scenario  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "agent")
KEY = "sk-test-SECRET-" + os.urandom(6).hex()
PROVIDERS = ("anthropic", "openai")
KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def steps(name):
    return load_scenario(os.path.join(DATA, name + ".json"))["steps"]


class Run:
    """One `execbox agent` run against a fresh fake: .proc, .out (parsed --json), .requests,
    .transcript (the saved file)."""

    def __init__(self, provider, scenario, args=(), key=KEY, json_out=True, env_key=KEY,
                 task="Compute the thing exactly."):
        self.provider = provider
        sc = steps(scenario) if isinstance(scenario, str) else scenario
        self.fake = FakeLLM(provider, sc, key=key)
        base = self.fake.start()
        env = {k: v for k, v in os.environ.items() if k not in KEY_ENV.values()}
        if env_key is not None:
            env[KEY_ENV[provider]] = env_key
        with tempfile.TemporaryDirectory() as d:
            tpath = os.path.join(d, "transcript.json")
            argv = ["agent", "--provider", provider, "--base-url", base, "--model", "test-model",
                    "--retry-base-ms", "1", "--transcript", tpath]
            if os.environ.get("EXECBOX_TEST_BACKEND"):
                argv += ["--backend", os.environ["EXECBOX_TEST_BACKEND"]]
            if json_out:
                argv.append("--json")
            argv += list(args) + [task]
            try:
                self.proc = run(argv, env=env, timeout=120)
            finally:
                self.fake.stop()
            self.transcript = None
            if os.path.exists(tpath):
                with open(tpath, encoding="utf-8") as f:
                    self.transcript = json.load(f)
        self.requests = self.fake.requests
        self.out = None
        if json_out and self.proc.stdout.strip():
            self.out = json.loads(self.proc.stdout)
        # The key is sent, and never shown anywhere.
        secrets = [s for s in (key, env_key) if s]
        for where, text in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr),
                            ("transcript", json.dumps(self.transcript))):
            for s in secrets:
                assert s not in text, f"the API key leaked into {where}"

    def fail(self, msg):
        raise AssertionError(f"{self.provider}: {msg}\nrc={self.proc.returncode}\n"
                             f"stdout={self.proc.stdout[-2000:]}\nstderr={self.proc.stderr[-3000:]}")

    def check(self, cond, msg):
        if not cond:
            self.fail(msg)

    def messages(self, i):
        return self.requests[i]["body"]["messages"]


def exchanges(provider, messages):
    """[(calls, results)] in history order: calls = [(id, input)], results = [(id, content,
    is_error)]. Asserts every reply with calls is followed at once by its results."""
    out = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        if provider == "anthropic":
            calls = [(c["id"], c["input"]) for c in m["content"] if c["type"] == "tool_use"]
            if not calls:
                continue
            nxt = messages[i + 1]
            assert nxt["role"] == "user", "a tool_result message must follow the reply"
            results = [(c["tool_use_id"], c["content"], c.get("is_error", False))
                       for c in nxt["content"]]
        else:
            calls = [(c["id"], c["function"]["arguments"]) for c in m.get("tool_calls") or []]
            if not calls:
                continue
            results = []
            for n in messages[i + 1:]:
                if n["role"] != "tool":
                    break
                results.append((n["tool_call_id"], n["content"], n["content"].startswith("Error")))
        assert [c[0] for c in calls] == [r[0] for r in results], \
            f"result ids {[r[0] for r in results]} do not match call ids {[c[0] for c in calls]}"
        out.append((calls, results))
    return out


def result_record(content):
    """The result record inside a tool result's text."""
    return json.loads(content[content.index("{"):])


class AgentTests(Tests):
    CHECK_TEMP_LEFTOVERS = True

    def test_first_try(self):
        for p in PROVIDERS:
            r = Run(p, "first_try")
            r.check(r.proc.returncode == 0, "exit status")
            r.check("338350" in r.out["answer"], "answer")
            r.check(r.out["attempts"] == 1 and r.out["failed_runs"] == 0, "attempts")
            r.check(r.out["runs"][0]["result"]["stdout"] == "338350\n", "run record")
            if os.environ.get("EXECBOX_TEST_BACKEND"):
                r.check(r.out["runs"][0]["result"]["backend"] ==
                        os.environ["EXECBOX_TEST_BACKEND"], "the backend asked for")
            r.check(r.out["stopped"] == "answered", "stopped")
            r.check(len(r.requests) == 2, f"{len(r.requests)} requests")
            r.check(r.out["usage"]["input_tokens"] > 0 and r.out["usage"]["output_tokens"] > 0,
                    "usage")
            ex = exchanges(p, r.messages(1))
            r.check(len(ex) == 1 and not ex[0][1][0][2], "one successful exchange")
            rec = result_record(ex[0][1][0][1])
            r.check(rec["exit_code"] == 0 and rec["stdout"] == "338350\n", "result sent back")
            # History order: the task, the model's reply, then the result.
            msgs = r.messages(1)
            roles = [m["role"] for m in msgs]
            want = ["user", "assistant", "user"] if p == "anthropic" else \
                ["system", "user", "assistant", "tool"]
            r.check(roles == want, f"roles {roles}")
            r.check(r.transcript["messages"][:len(msgs)] == msgs, "transcript = history")
            r.check(r.transcript["messages"][-1]["role"] == "assistant", "transcript ends")
            r.check(r.out["transcript"] == r.transcript, "--json transcript")

    def test_wire_format(self):
        for p in PROVIDERS:
            r = Run(p, "first_try", args=["--max-tokens", "321"])
            h, b = r.requests[0]["headers"], r.requests[0]["body"]
            fmt = "anthropic" if p == "anthropic" else "openai"
            schema = json.loads(run(["schema", "--format", fmt]).stdout)
            r.check(b["tools"] == [schema], "the library's tool definition is sent")
            r.check(b["model"] == "test-model", "model")
            r.check(h["content-type"] == "application/json", "content-type")
            if p == "anthropic":
                r.check(h["x-api-key"] == KEY and h["anthropic-version"] == "2023-06-01",
                        "headers")
                r.check("authorization" not in h, "no bearer header")
                r.check(b["max_tokens"] == 321, "max_tokens")
                system = b["system"]
                r.check(b["messages"][0] == {"role": "user",
                                             "content": "Compute the thing exactly."}, "task")
            else:
                r.check(h["authorization"] == "Bearer " + KEY, "bearer")
                r.check("x-api-key" not in h, "no anthropic header")
                # A compatible server (any --base-url) gets the classic max_tokens.
                r.check(b["max_tokens"] == 321, "max_tokens")
                system = b["messages"][0]["content"]
                r.check(b["messages"][0]["role"] == "system", "system message first")
            for word in ("numpy", "pandas", "matplotlib", "/workspace", "no network",
                         "10 seconds", "plain Python math"):
                r.check(word in system, f"system prompt lacks {word!r}")

    def test_name_error_then_fix(self):
        for p in PROVIDERS:
            r = Run(p, "name_error_fix")
            r.check(r.proc.returncode == 0, "exit status")
            r.check(len(r.requests) == 3, "three requests")
            r.check(r.out["attempts"] == 2 and r.out["failed_runs"] == 1, "attempts")
            ex = exchanges(p, r.messages(2))
            r.check(len(ex) == 2, "two exchanges")
            (_, [(_, first, err1)]), (_, [(_, second, err2)]) = ex
            r.check(err1 and not err2, "first flagged as error, second not")
            rec = result_record(first)
            # The whole traceback goes back, never a summary.
            r.check(rec["exit_code"] == 1 and rec["error"]["name"] == "NameError", "NameError")
            r.check("Traceback (most recent call last)" in rec["stderr"] and
                    "name 'valeus' is not defined" in rec["stderr"], "whole traceback")
            r.check(result_record(second)["stdout"] == "12\n", "the fix ran")
            r.check("12" in r.out["answer"], "answer")

    def test_three_failures_honest_answer(self):
        for p in PROVIDERS:
            r = Run(p, "three_failures")
            r.check(r.proc.returncode == 1, "gave up: exit 1")
            r.check(len(r.requests) == 3, f"no fourth request ({len(r.requests)})")
            r.check(r.out["stopped"] == "max_attempts", "stopped")
            r.check(r.out["attempts"] == 3 and r.out["failed_runs"] == 3, "three failed runs")
            ans = r.out["answer"]
            r.check("could not compute" in ans, "honest")
            r.check("ValueError: still broken: attempt three" in ans, "the last error quoted")
            r.check("Traceback (most recent call last)" in ans, "the whole traceback")
            head = ans.split("The last error was:")[0]
            r.check(re.findall(r"\d+", head) == ["3"], f"a number invented: {head!r}")
            r.check("4242" not in r.proc.stdout, "the scripted answer was never asked for")
            # All three results are in the transcript, flagged.
            ex = exchanges(p, r.transcript["messages"])
            r.check([res[0][2] for _, res in ex] == [True] * 3, "three error results")
        r = Run("anthropic", "three_failures", args=["--max-attempts", "2"], json_out=False)
        r.check(r.proc.returncode == 1 and len(r.requests) == 2, "--max-attempts 2")
        r.check("ZeroDivisionError" in r.proc.stdout, "last error on stdout")

    def test_timeout_inside_the_code(self):
        for p in PROVIDERS:
            r = Run(p, "timeout", args=["--timeout", "1"])
            r.check(r.proc.returncode == 0, "exit status")
            ex = exchanges(p, r.messages(2))
            content, is_err = ex[0][1][0][1], ex[0][1][0][2]
            rec = result_record(content)
            r.check(is_err and rec["timed_out"] and rec["exit_code"] == 124, "timed out")
            r.check("1024" in r.out["answer"], "answer")

    def test_two_calls_in_one_reply(self):
        for p in PROVIDERS:
            r = Run(p, "two_calls")
            r.check(r.proc.returncode == 0, "exit status")
            ex = exchanges(p, r.messages(1))
            r.check(len(ex) == 1 and len(ex[0][0]) == 2, "one reply with two calls")
            calls, results = ex[0]
            r.check(len({c[0] for c in calls}) == 2, "distinct ids")
            one, two = result_record(results[0][1]), result_record(results[1][1])
            r.check(one["stdout"] == "first 42\n" and not results[0][2], "first ran, in order")
            r.check(two["exit_code"] == 3 and "second" in two["stderr"] and results[1][2],
                    "second ran and was flagged")
            r.check([x["id"] for x in r.out["runs"]] == [c[0] for c in calls], "runs by id")
            if p == "anthropic":
                r.check(len(r.messages(1)) == 3, "both results in one user message")

    def test_retry_after_429(self):
        for p in PROVIDERS:
            r = Run(p, "retry_after")
            r.check(r.proc.returncode == 0, "exit status")
            r.check([q["status"] for q in r.requests] == [429, 200, 200], "statuses")
            gap = r.requests[1]["time"] - r.requests[0]["time"]
            r.check(gap >= 0.9, f"Retry-After: 1 not honoured ({gap:.3f} s)")
            r.check("HTTP 429" in r.proc.stderr, "retry shown")
            r.check(r.requests[0]["body"] == r.requests[1]["body"], "the same request again")
        # Retry-After as an HTTP-date, two seconds ahead (one-second resolution).
        sc = steps("retry_after")
        sc[0]["headers"] = {"Retry-After": email.utils.formatdate(time.time() + 2, usegmt=True)}
        r = Run("anthropic", sc)
        gap = r.requests[1]["time"] - r.requests[0]["time"]
        r.check(r.proc.returncode == 0 and gap >= 0.9, f"HTTP-date not honoured ({gap:.3f} s)")

    def test_server_errors_then_success(self):
        for p in PROVIDERS:
            r = Run(p, "server_error")
            r.check(r.proc.returncode == 0, "exit status")
            r.check([q["status"] for q in r.requests] == [500, 529, 200], "500, 529, then 200")
            r.check(r.out["answer"] == "Hello.", "answer")
        r = Run("openai", "server_error", args=["--retries", "1"])
        r.check(r.proc.returncode == 125 and len(r.requests) == 2, "retries are capped")
        r.check("529" in r.proc.stderr and "Overloaded" in r.proc.stderr, "the last error shown")

    def test_connection_dropped_then_success(self):
        for p in PROVIDERS:
            r = Run(p, "drop")
            r.check(r.proc.returncode == 0 and len(r.requests) == 2, "retried after the drop")

    def test_401_no_retry(self):
        for p in PROVIDERS:
            r = Run(p, "first_try", env_key="sk-wrong-" + os.urandom(4).hex())
            r.check(r.proc.returncode == 125, "exit 125")
            r.check(len(r.requests) == 1, f"exactly one request ({len(r.requests)})")
            r.check("401" in r.proc.stderr and KEY_ENV[p] in r.proc.stderr, "clear message")
            api_msg = "invalid x-api-key" if p == "anthropic" else "Incorrect API key provided"
            r.check(api_msg in r.proc.stderr, "the API's own message")
            # --json: the failure as the success's object; without it nothing on stdout.
            r.check(r.out and r.out["stopped"] == "error" and "401" in r.out["error"],
                    "a JSON failure on stdout")
            r = Run(p, "first_try", env_key="sk-wrong-" + os.urandom(4).hex(), json_out=False)
            r.check(r.proc.returncode == 125 and r.proc.stdout == "", "nothing on stdout")

    def test_400_no_retry(self):
        for p in PROVIDERS:
            r = Run(p, "bad_request")
            r.check(r.proc.returncode == 125 and len(r.requests) == 1, "one request, exit 125")
            r.check("HTTP 400" in r.proc.stderr and "max_tokens: 999999 > 64000" in
                    r.proc.stderr, "the API's message")

    def test_json_on_failure(self):
        """--json prints an object on failure too: the success's keys, stopped "error", the
        reason in error (null on success), answer null; the exit status stays 125."""
        ok = Run("anthropic", "first_try")
        ok.check(ok.out["error"] is None, "error is null on success")
        for p in PROVIDERS:
            r = Run(p, "bad_request")
            r.check(r.proc.returncode == 125, "exit 125")
            r.check(r.out is not None, "no JSON on stdout")
            r.check(set(r.out) == set(ok.out), f"keys {sorted(r.out)} != {sorted(ok.out)}")
            r.check(r.out["stopped"] == "error" and r.out["answer"] is None, "stopped, answer")
            r.check("HTTP 400" in r.out["error"] and "max_tokens: 999999 > 64000" in
                    r.out["error"], f"the reason: {r.out['error']!r}")
            r.check(r.out["usage"]["turns"] == 1 and r.out["runs"] == [], "usage and runs")
            r.check(r.out["transcript"]["messages"][-1]["role"] == "user", "the transcript")
            r.check(r.out["provider"] == p and r.out["model"] == "test-model", "provider, model")
        # The sandbox cannot start (a workspace that is not there): failed before the model.
        r = Run("openai", "first_try", args=["-w", "/nonexistent/execbox-agent-test"])
        r.check(r.proc.returncode == 125 and r.out["stopped"] == "error", "a JSON failure")
        r.check(r.out["error"] and r.out["usage"]["turns"] == 0, f"why: {r.out['error']!r}")
        # A failure before anything started (no key) has the same shape.
        env = {k: v for k, v in os.environ.items() if k not in KEY_ENV.values()}
        p = run(["agent", "--json", "--provider", "anthropic", "--base-url",
                 "http://127.0.0.1:9", "x"], env=env)
        out = json.loads(p.stdout)
        assert p.returncode == 125 and set(out) == set(ok.out), (p.returncode, p.stdout)
        assert out["stopped"] == "error" and "ANTHROPIC_API_KEY" in out["error"], out

    def test_malformed_body(self):
        for p in PROVIDERS:
            r = Run(p, "malformed")
            r.check(r.proc.returncode == 125 and len(r.requests) == 1, "one request, exit 125")
            r.check("not valid JSON" in r.proc.stderr, "says why")
            r.check(r.transcript is not None, "the transcript is still saved")
        # Valid JSON of the wrong shape.
        r = Run("openai", [{"status": 200, "raw": "{\"choices\": []}"}])
        r.check(r.proc.returncode == 125 and "malformed" in r.proc.stderr, "wrong shape")

    def test_bad_tool_arguments(self):
        for p in PROVIDERS:
            r = Run(p, "bad_arguments")
            r.check(r.proc.returncode == 0, "no crash")
            ex = exchanges(p, r.messages(2))
            content, is_err = ex[0][1][0][1], ex[0][1][0][2]
            why = "not valid JSON" if p == "openai" else "no string 'code'"
            r.check(is_err and why in content, f"error result: {content!r}")
            r.check(r.out["attempts"] == 1 and "10" in r.out["answer"], "then the good call ran")

    def test_missing_key(self):
        env = {k: v for k, v in os.environ.items() if k not in KEY_ENV.values()}
        p = run(["agent", "--provider", "anthropic", "--base-url", "http://127.0.0.1:9", "x"],
                env=env)
        assert p.returncode == 125 and "ANTHROPIC_API_KEY" in p.stderr, p.stderr
        p = run(["agent", "--provider", "openai", "x"], env=env)
        assert p.returncode == 125 and "OPENAI_API_KEY" in p.stderr, p.stderr
        # A compatible local server needs no key: no Authorization header is sent.
        r = Run("openai", "first_try", key=None, env_key=None)
        r.check("authorization" not in r.requests[0]["headers"], "no key, no header")

    def test_plain_output_and_progress(self):
        r = Run("anthropic", "name_error_fix", json_out=False)
        r.check(r.proc.stdout == "The total is 12.\n", "only the answer on stdout")
        err = r.proc.stderr
        r.check("attempt 1: `total = sum(valeus)` -> exit 1 (NameError)" in err, "attempt 1")
        r.check(re.search(r"attempt 2: `values = \[3, 4, 5\]` -> exit 0 in \d+\.\d+ s", err),
                "attempt 2")

    def test_system_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("You are a terse calculator.")
        try:
            for p in PROVIDERS:
                r = Run(p, "first_try", args=["--system", f.name])
                b = r.requests[0]["body"]
                system = b["system"] if p == "anthropic" else b["messages"][0]["content"]
                r.check(system == "You are a terse calculator.", "--system replaces the prompt")
        finally:
            os.unlink(f.name)

    def test_max_turns_guard(self):
        loop = [{"tool_calls": [{"code": "print('again')"}]}] * 5
        for p in PROVIDERS:
            r = Run(p, loop, args=["--max-turns", "2"])
            r.check(r.proc.returncode == 1 and len(r.requests) == 2, "stopped at two turns")
            r.check(r.out["stopped"] == "max_turns" and "could not" in r.out["answer"], "honest")
            # The last reply's call was still run and answered.
            r.check(r.out["attempts"] == 2, "both calls ran")
            r.check(len(exchanges(p, r.transcript["messages"])) == 2, "both answered")

    def test_unknown_tool(self):
        sc = [{"tool_calls": [{"name": "web_search", "code": "x"}]}, {"answer": "ok"}]
        for p in PROVIDERS:
            r = Run(p, sc)
            ex = exchanges(p, r.messages(1))
            r.check(ex[0][1][0][2] and "no tool named 'web_search'" in ex[0][1][0][1],
                    "unknown tool answered with an error")
            r.check(r.out["attempts"] == 0, "nothing ran")

    def test_model_timeout_never_above_policy(self):
        slow = "import time\ntime.sleep(30)"
        # The model asks for less than the policy: it gets less.
        r = Run("anthropic", [{"tool_calls": [{"code": slow, "timeout": 1}]}, {"answer": "ok"}],
                args=["--timeout", "20"])
        rec = result_record(exchanges("anthropic", r.messages(1))[0][1][0][1])
        r.check(rec["timed_out"] and rec["execution_time"] < 15, "the model's shorter limit")
        # The model asks for more than the policy: the policy wins.
        r = Run("openai", [{"tool_calls": [{"code": slow, "timeout": 600}]}, {"answer": "ok"}],
                args=["--timeout", "1"])
        rec = result_record(exchanges("openai", r.messages(1))[0][1][0][1])
        r.check(rec["timed_out"] and rec["execution_time"] < 15, "the policy's limit")

    def test_http_timeout_then_retry(self):
        slow = [{"answer": "too late", "delay": 3}, {"answer": "Hello in time."}]
        for p in PROVIDERS:
            r = Run(p, slow, args=["--http-timeout", "1"])
            r.check(r.proc.returncode == 0 and len(r.requests) == 2, "retried after the timeout")
            r.check(r.out["answer"] == "Hello in time.", "the second answer")
        r = Run("anthropic", slow, args=["--http-timeout", "1", "--retries", "0"])
        r.check(r.proc.returncode == 125 and "timed out" in r.proc.stderr.lower(), "gives up")

    def test_response_size_capped(self):
        huge = "{\"pad\": \"" + "x" * (9 << 20) + "\"}"
        r = Run("openai", [{"status": 200, "raw": huge}])
        r.check(r.proc.returncode == 125 and len(r.requests) == 1, "refused, not retried")
        r.check("larger than 8388608 bytes" in r.proc.stderr, "says why")

    def test_sandbox_error_stops(self):
        # The sandbox itself cannot run the code (here: the workspace, checked at start-up,
        # is removed once the model has been asked): the model cannot fix that, so the agent
        # stops at once instead of burning attempts.
        global FakeLLM
        ws = tempfile.mkdtemp(prefix="execbox-it-agent-ws-")

        class WorkspaceGoes(FakeLLM):
            def _respond(self, rec):
                if os.path.isdir(ws):
                    os.rmdir(ws)
                return super()._respond(rec)

        saved, FakeLLM = FakeLLM, WorkspaceGoes
        try:
            r = Run("openai", "first_try", args=["-w", ws])
        finally:
            FakeLLM = saved
            if os.path.isdir(ws):
                os.rmdir(ws)
        r.check(r.proc.returncode == 125 and len(r.requests) == 1, "stopped after one turn")
        r.check("sandbox could not run the code" in r.proc.stderr, "says why")
        # A workspace already missing at start-up is refused before the model is asked.
        r = Run("openai", "first_try", args=["-w", "/nonexistent/execbox-agent-test"])
        r.check(r.proc.returncode == 125 and len(r.requests) == 0, "refused at start-up")
        r.check("workspace" in r.proc.stderr, "says why")

    def test_interrupt_saves_transcript(self):
        sc = [{"tool_calls": [{"code": "import time\ntime.sleep(60)"}]}, {"answer": "never"}]
        fake = FakeLLM("anthropic", sc, key=KEY)
        base = fake.start()
        env = dict(os.environ, ANTHROPIC_API_KEY=KEY)
        with tempfile.TemporaryDirectory() as d:
            tpath = os.path.join(d, "t.json")
            argv = [EXECBOX, "agent", "--provider", "anthropic", "--base-url", base,
                    "--timeout", "60", "--transcript", tpath]
            if os.environ.get("EXECBOX_TEST_BACKEND"):
                argv += ["--backend", os.environ["EXECBOX_TEST_BACKEND"]]
            proc = subprocess.Popen(argv + ["task"], env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            try:
                deadline = time.monotonic() + 30
                while not fake.requests and time.monotonic() < deadline:
                    time.sleep(0.05)
                time.sleep(1.0)  # the sandbox is running its 60 s sleep now
                proc.send_signal(signal.SIGINT)
                out, err = proc.communicate(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                fake.stop()
            assert proc.returncode == 130, (proc.returncode, err)
            assert "interrupted" in err and out == "", err
            assert len(fake.requests) == 1, "no request after the interrupt"
            with open(tpath, encoding="utf-8") as f:
                t = json.load(f)
            assert [m["role"] for m in t["messages"]] == ["user", "assistant", "user"], t
            assert t["messages"][2]["content"][0]["is_error"] is True


if __name__ == "__main__":
    AgentTests().main()
