# SPDX-License-Identifier: MIT
# `execbox agent`: the self-debugging loop against the Anthropic Messages API and the OpenAI
# Chat Completions API, over libcurl (docs/agent.md). A program of its own
# (execbox-agent) that `execbox agent` executes, so that `execbox run` never loads libcurl.
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
eb_program(execbox_agent execbox-agent
  SOURCES agent/main.c agent/agent.c agent/http.c agent/provider.c
  LIBS PkgConfig::CURL)
list(APPEND EB_CLI_DEFINES HAVE_AGENT)
