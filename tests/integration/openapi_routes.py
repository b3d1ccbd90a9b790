# SPDX-License-Identifier: MIT
"""docs/openapi.yaml against a real `execbox serve` on loopback: every route the server answers
is documented (the /v1 and /metrics ones and E2B's /e2b/ wire), and a request to each documented
operation gets one of the statuses the document lists for it."""
import json
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(__file__))
from common import SKIP, SOURCE, Tests, run  # noqa: E402
from serve import Server  # noqa: E402

SPEC = os.path.join(SOURCE, "docs", "openapi.yaml")
# The routes the server has (src/httpd/route.c, v1.c, e2b.c), each with its methods.
SERVED = {
    "/v1/execute": {"post"},
    "/v1/health": {"get"},
    "/metrics": {"get"},
    "/v1/sessions": {"get", "post"},
    "/v1/sessions/{id}": {"get", "delete"},
    "/v1/sessions/{id}/execute": {"post"},
    "/v1/sessions/{id}/files": {"get"},
    "/v1/sessions/{id}/files/{path}": {"get", "put", "delete"},
    "/e2b/health": {"get"},
    "/e2b/execute": {"post"},
    "/e2b/contexts": {"get", "post"},
    "/e2b/contexts/{context_id}": {"delete"},
    "/e2b/contexts/{context_id}/restart": {"post"},
    "/e2b/files": {"get", "post"},
    "/e2b/filesystem.Filesystem/Stat": {"post"},
    "/e2b/filesystem.Filesystem/ListDir": {"post"},
    "/e2b/filesystem.Filesystem/MakeDir": {"post"},
    "/e2b/filesystem.Filesystem/Remove": {"post"},
    "/e2b/filesystem.Filesystem/Move": {"post"},
    "/e2b/process.Process/Start": {"post"},
    "/e2b/process.Process/SendSignal": {"post"},
    "/e2b/v2/sandboxes": {"get", "post"},
    "/e2b/v2/sandboxes/{sandbox_id}/connect": {"post"},
    "/e2b/sandboxes/{sandbox_id}": {"get", "delete"},
    "/e2b/sandboxes/{sandbox_id}/timeout": {"post"},
}
METHODS = {"get", "post", "put", "delete"}


def spec():
    with open(SPEC) as f:
        return yaml.safe_load(f)


class OpenApiRoutes(Tests):
    def test_every_served_route_is_documented(self):
        doc = {p: {m for m in ops if m in METHODS} for p, ops in spec()["paths"].items()}
        missing = {p: sorted(m - doc.get(p, set())) for p, m in SERVED.items()
                   if m - doc.get(p, set())}
        extra = sorted(set(doc) - set(SERVED))
        print(f"  {len(doc)} documented paths; missing {missing}; not served {extra}", flush=True)
        assert not missing and not extra, (missing, extra)

    def test_each_operation_answers_a_documented_status(self):
        paths = spec()["paths"]
        with Server() as s:
            st, _, data = s.request("POST", "/v1/sessions", {})
            assert st == 201, (st, data)
            sid = json.loads(data)["id"]
            st, _, data = s.request("POST", "/e2b/contexts", {"language": "python"})
            assert st == 200, (st, data)
            cid = json.loads(data)["id"]
            st, _, data = s.request("POST", "/e2b/v2/sandboxes", {"templateID": "base"})
            assert st == 201, (st, data)
            sbid = json.loads(data)["sandboxID"]
            bodies = {
                ("/e2b/v2/sandboxes", "post"): {},
                ("/e2b/sandboxes/{sandbox_id}/timeout", "post"): {"timeout": 60},
                ("/e2b/v2/sandboxes/{sandbox_id}/connect", "post"): {},
                ("/v1/execute", "post"): {"code": "print(1)"},
                ("/v1/sessions/{id}/execute", "post"): {"code": "x = 1"},
                ("/e2b/execute", "post"): {"code": "1 + 1", "context_id": cid},
                ("/e2b/contexts", "post"): {},
            }
            # Deletions last, so that the other calls find the session and the context.
            order = sorted(((p, m) for p, ops in paths.items() for m in ops if m in METHODS),
                           key=lambda pm: pm[1] == "delete")
            for p, m in order:
                url = (p.replace("{id}", sid).replace("{context_id}", cid)
                       .replace("{sandbox_id}", sbid).replace("{path}", "a.txt"))
                body = bodies.get((p, m))
                headers = {}
                if m == "put":
                    body, headers = b"hello", {"Content-Type": "application/octet-stream"}
                st, _, data = s.request(m.upper(), url, body, headers)
                listed = {str(k) for k in paths[p][m]["responses"]}
                print(f"  {m.upper():6} {p}: {st}", flush=True)
                assert str(st) in listed, (m, p, st, sorted(listed), data[:200])
            assert s.stop() == 0


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skip: sessions and E2B contexts need the jail as root")
        sys.exit(SKIP)
    if run(["check"]).returncode != 0:
        print("skip: the jail is not usable here")
        sys.exit(SKIP)
    OpenApiRoutes().main()
