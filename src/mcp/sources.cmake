# SPDX-License-Identifier: MIT
# `execbox mcp`: the code tool over the Model Context Protocol on stdio (src/mcp/), with the
# JSON-RPC framing in src/common/ (reusable by the HTTP service).
list(APPEND EB_CLI_SOURCES common/jsonrpc.c common/runner.c mcp/server.c mcp/options.c
     mcp/dispatch.c mcp/tools.c mcp/session.c mcp/render.c)
list(APPEND EB_CLI_DEFINES HAVE_MCP)
