# SPDX-License-Identifier: MIT
# `execbox agent` against the scripted LLM server in tests/fakes/fake_llm.py (both wire formats).
eb_integration_test(agent)
