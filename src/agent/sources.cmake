# SPDX-License-Identifier: MIT
# `execbox agent`: the self-debugging loop against the Anthropic Messages API and the OpenAI
# Chat Completions API, over libcurl (DESIGN.md section 7).
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
list(APPEND EB_CLI_SOURCES agent/agent.c agent/http.c agent/provider.c)
list(APPEND EB_CLI_DEFINES HAVE_AGENT)
list(APPEND EB_CLI_LIBS PkgConfig::CURL)
