# SPDX-License-Identifier: MIT
"""A scripted LLM API on 127.0.0.1 that speaks both wire formats: the Anthropic Messages API
(POST /v1/messages) and the OpenAI Chat Completions API (POST /v1/chat/completions).

It replays a scenario (tests/data/agent/*.json): a list of steps, one per request, each rendered
in the wire format of the provider asked for, with realistic ids, usage and stop reasons. It
checks each request as the real APIs do (key header, version header, body shape, and that every
tool call of the previous reply is answered by id right after it) and answers 401/400 with the
API's own error bodies when a check fails. Every request is recorded (time, path, headers, body)
so tests assert on what the agent sent.

Steps:
  {"tool_calls": [{"code": "..."} | {"arguments_raw": "..."}], "text": "optional prose"}
  {"answer": "final text"}
  {"status": 429, "headers": {"Retry-After": "1"}, "error": "message"}   an API error
  {"status": 200, "raw": "body text"}                                   a literal body
  {"drop": true}                                                         close, no response
  any step may add "delay": seconds to wait before answering (to test client timeouts)

Run standalone:  python3 fake_llm.py SCENARIO.json --provider anthropic --key KEY
"""
import json
import random
import string
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANTHROPIC_VERSION = "2023-06-01"
TOOL_NAME = "execute_python"


def _rand(n):
    return "".join(random.choice(string.ascii_letters + string.digits) for _ in range(n))


def load_scenario(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class FakeLLM:
    """One server for one provider and one scenario. start() returns the base URL."""

    def __init__(self, provider, steps, key="sk-test-key"):
        assert provider in ("anthropic", "openai")
        self.provider = provider
        self.steps = list(steps)
        self.key = key
        self.requests = []  # {"time", "path", "headers", "body", "raw", "status"}
        self.lock = threading.Lock()
        self.server = None
        self.thread = None
        self.pending_ids = []  # tool call ids of the last reply, to be answered next

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):  # quiet
                pass

            def do_POST(self):
                fake._handle(self)

            def do_GET(self):
                fake._send(self, 404, {"error": {"message": "not found"}})

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                # A client that hung up (a timeout, a size cap) is part of the tests.
                if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        port = self.server.server_address[1]
        root = f"http://127.0.0.1:{port}"
        return root if self.provider == "anthropic" else root + "/v1"

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    def __enter__(self):
        self.base_url = self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    # ---- wire ------------------------------------------------------------------------------

    def _send(self, h, status, body, headers=None, raw=None):
        data = raw.encode() if raw is not None else json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        if self.provider == "anthropic":
            h.send_header("request-id", "req_" + _rand(24))
        else:
            h.send_header("x-request-id", "req_" + _rand(32))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
        h.wfile.flush()

    def _error_body(self, status, message):
        if self.provider == "anthropic":
            kind = {400: "invalid_request_error", 401: "authentication_error",
                    403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                    429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
            return {"type": "error", "error": {"type": kind, "message": message},
                    "request_id": "req_" + _rand(24)}
        kind = {400: "invalid_request_error", 401: "invalid_request_error",
                429: "rate_limit_exceeded"}.get(status, "server_error")
        code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    def _handle(self, h):
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length).decode("utf-8", "replace")
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        rec = {"time": time.monotonic(), "path": h.path,
               "headers": {k.lower(): v for k, v in h.headers.items()}, "body": body, "raw": raw}
        with self.lock:
            self.requests.append(rec)
            status, resp, headers, rawresp, drop, delay = self._respond(rec)
            rec["status"] = status
        if delay:
            time.sleep(delay)
        if drop:
            h.close_connection = True
            try:
                h.connection.shutdown(2)
            except OSError:
                pass
            return
        self._send(h, status, resp, headers, rawresp)

    def _respond(self, rec):
        """(status, body, headers, raw, drop) for one request."""
        want = "/v1/messages" if self.provider == "anthropic" else "/v1/chat/completions"
        if rec["path"] != want:
            return 404, self._error_body(404, f"Not found: {rec['path']}"), None, None, False, 0
        problem = self._check_auth(rec["headers"])
        if problem:
            return 401, self._error_body(401, problem), None, None, False, 0
        if rec["body"] is None:
            return 400, self._error_body(400, "The request body is not valid JSON."), None, None, False, 0
        problem = (self._check_anthropic if self.provider == "anthropic"
                   else self._check_openai)(rec["body"])
        if problem:
            return 400, self._error_body(400, problem), None, None, False, 0
        if not self.steps:
            return 500, self._error_body(500, "fake_llm: the scenario has no more steps"), None, None, False, 0
        step = self.steps.pop(0)
        return self._render(rec, step) + (step.get("delay", 0),)

    def _render(self, rec, step):
        if step.get("drop"):
            return 0, None, None, None, True
        if "raw" in step:
            return step.get("status", 200), None, step.get("headers"), step["raw"], False
        if "error" in step:
            st = step.get("status", 500)
            return st, self._error_body(st, step["error"]), step.get("headers"), None, False
        render = self._anthropic_reply if self.provider == "anthropic" else self._openai_reply
        return 200, render(rec["body"], step), step.get("headers"), None, False

    def _check_auth(self, headers):
        if self.provider == "anthropic":
            if headers.get("x-api-key") != self.key:
                return "invalid x-api-key"
            if headers.get("anthropic-version") != ANTHROPIC_VERSION:
                return "anthropic-version header is required"
            return None
        if headers.get("authorization") != f"Bearer {self.key}":
            return ("Incorrect API key provided. You can find your API key at "
                    "https://platform.openai.com/account/api-keys.")
        return None

    # ---- request checks, as the real APIs make them ---------------------------------------

    def _check_anthropic(self, b):
        if not isinstance(b.get("model"), str):
            return "model: Field required"
        if not isinstance(b.get("max_tokens"), int):
            return "max_tokens: Field required"
        tools = b.get("tools", [])
        for t in tools:
            if not isinstance(t.get("name"), str) or not isinstance(t.get("input_schema"), dict):
                return "tools: each tool needs name and input_schema"
        msgs = b.get("messages")
        if not isinstance(msgs, list) or not msgs:
            return "messages: at least one message is required"
        if msgs[0].get("role") != "user":
            return "messages: first message must use the \"user\" role"
        for i, m in enumerate(msgs):
            if m.get("role") not in ("user", "assistant"):
                return f"messages.{i}.role: Input should be 'user' or 'assistant'"
            if i and m["role"] == msgs[i - 1]["role"]:
                return "messages: roles must alternate between \"user\" and \"assistant\""
            content = m.get("content")
            if not isinstance(content, (str, list)):
                return f"messages.{i}.content: Input should be a valid list"
            if m["role"] == "assistant" and isinstance(content, list):
                ids = [c["id"] for c in content if c.get("type") == "tool_use"]
                if ids:
                    nxt = msgs[i + 1] if i + 1 < len(msgs) else None
                    got = []
                    if nxt and isinstance(nxt.get("content"), list):
                        for c in nxt["content"]:
                            if c.get("type") != "tool_result":
                                break
                            got.append(c.get("tool_use_id"))
                    if not nxt or any(x not in got for x in ids):
                        return (f"messages.{i + 1}: `tool_use` ids were found without "
                                f"`tool_result` blocks immediately after: {', '.join(ids)}. "
                                "Each `tool_use` block must have a corresponding `tool_result` "
                                "block in the next message.")
            if m["role"] == "user" and isinstance(content, list):
                prev = msgs[i - 1] if i else None
                prev_ids = ([c["id"] for c in prev["content"] if c.get("type") == "tool_use"]
                            if prev and isinstance(prev.get("content"), list) else [])
                for c in content:
                    if c.get("type") == "tool_result":
                        if c.get("tool_use_id") not in prev_ids:
                            return (f"messages.{i}.content: unexpected `tool_use_id` found in "
                                    "`tool_result` blocks: "
                                    f"{c.get('tool_use_id')}. Each `tool_result` block must have "
                                    "a corresponding `tool_use` block in the previous message.")
                        if "is_error" in c and not isinstance(c["is_error"], bool):
                            return f"messages.{i}.content: is_error must be a boolean"
        return None

    def _check_openai(self, b):
        if not isinstance(b.get("model"), str):
            return "you must provide a model parameter"
        msgs = b.get("messages")
        if not isinstance(msgs, list) or not msgs:
            return "[] is too short - 'messages'"
        for t in b.get("tools", []):
            fn = t.get("function") or {}
            if t.get("type") != "function" or not isinstance(fn.get("name"), str) \
                    or not isinstance(fn.get("parameters"), dict):
                return "Invalid 'tools': each tool must be a function with name and parameters"
        for i, m in enumerate(msgs):
            role = m.get("role")
            if role not in ("system", "developer", "user", "assistant", "tool"):
                return f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'tool'"
            if role == "assistant" and m.get("tool_calls"):
                for tc in m["tool_calls"]:
                    fn = tc.get("function") or {}
                    if not isinstance(fn.get("arguments"), str):
                        return f"Invalid type for 'messages[{i}].tool_calls[0].function.arguments': expected a string"
                want = [tc.get("id") for tc in m["tool_calls"]]
                got = []
                for n in msgs[i + 1:]:
                    if n.get("role") != "tool":
                        break
                    got.append(n.get("tool_call_id"))
                missing = [x for x in want if x not in got]
                if missing:
                    return ("An assistant message with 'tool_calls' must be followed by tool "
                            "messages responding to each 'tool_call_id'. The following "
                            f"tool_call_ids did not have response messages: {', '.join(missing)}")
            if role == "tool":
                j = i - 1
                while j >= 0 and msgs[j].get("role") == "tool":
                    j -= 1
                ids = [tc.get("id") for tc in (msgs[j].get("tool_calls") or [])] if j >= 0 else []
                if m.get("tool_call_id") not in ids:
                    return ("Invalid parameter: messages with role 'tool' must be a response to "
                            "a preceeding message with 'tool_calls'.")
                if not isinstance(m.get("content"), str):
                    return f"Invalid type for 'messages[{i}].content': expected a string"
        return None

    # ---- replies ---------------------------------------------------------------------------

    def _usage_in(self, body):
        return max(1, len(json.dumps(body)) // 4)

    def _anthropic_reply(self, req, step):
        content = []
        if step.get("text"):
            content.append({"type": "text", "text": step["text"]})
        if "answer" in step:
            content.append({"type": "text", "text": step["answer"]})
        for call in step.get("tool_calls", []):
            inp = {"code": call["code"]} if "code" in call else call.get("input", {})
            if "timeout" in call:
                inp["timeout"] = call["timeout"]
            content.append({"type": "tool_use", "id": "toolu_01" + _rand(22),
                            "name": call.get("name", TOOL_NAME), "input": inp})
        stop = "tool_use" if step.get("tool_calls") else step.get("stop_reason", "end_turn")
        return {"id": "msg_01" + _rand(22), "type": "message", "role": "assistant",
                "model": req.get("model"), "content": content, "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": self._usage_in(req), "output_tokens":
                          max(1, len(json.dumps(content)) // 4),
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}

    def _openai_reply(self, req, step):
        msg = {"role": "assistant", "content": step.get("answer", step.get("text")),
               "refusal": None, "annotations": []}
        calls = []
        for call in step.get("tool_calls", []):
            if "arguments_raw" in call:
                args = call["arguments_raw"]
            else:
                inp = {"code": call["code"]} if "code" in call else call.get("input", {})
                if "timeout" in call:
                    inp["timeout"] = call["timeout"]
                args = json.dumps(inp)
            calls.append({"id": "call_" + _rand(24), "type": "function",
                          "function": {"name": call.get("name", TOOL_NAME), "arguments": args}})
        if calls:
            msg["tool_calls"] = calls
        finish = "tool_calls" if calls else step.get("finish_reason", "stop")
        out_tokens = max(1, len(json.dumps(msg)) // 4)
        in_tokens = self._usage_in(req)
        return {"id": "chatcmpl-" + _rand(29), "object": "chat.completion",
                "created": int(time.time()), "model": req.get("model"),
                "choices": [{"index": 0, "message": msg, "logprobs": None,
                             "finish_reason": finish}],
                "usage": {"prompt_tokens": in_tokens, "completion_tokens": out_tokens,
                          "total_tokens": in_tokens + out_tokens,
                          "prompt_tokens_details": {"cached_tokens": 0},
                          "completion_tokens_details": {"reasoning_tokens": 0}},
                "system_fingerprint": "fp_" + _rand(10)}


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("--provider", default="anthropic", choices=["anthropic", "openai"])
    ap.add_argument("--key", default="sk-test-key")
    a = ap.parse_args()
    fake = FakeLLM(a.provider, load_scenario(a.scenario)["steps"], a.key)
    print(fake.start(), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
