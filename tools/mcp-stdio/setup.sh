#!/usr/bin/env bash
# Installs the stdio MCP test client (client.mjs + the official TypeScript SDK,
# @modelcontextprotocol/sdk pinned by the committed package-lock.json, `npm ci`) into DIR
# (default: a scratch folder) and prints the path of the runnable client.mjs. .ci/run uses it
# for CROW_MCP_STDIO (e2e TestMCPStdio); npm ci runs again only when the lockfile changed.
set -euo pipefail
SRC=$(cd "$(dirname "$0")" && pwd)
DIR=${1:-$(dirname "$(mktemp -u)")/crow-mcp-stdio}
mkdir -p "$DIR"
cp "$SRC/package.json" "$SRC/package-lock.json" "$SRC/client.mjs" "$DIR/"
if ! cmp -s "$DIR/package-lock.json" "$DIR/node_modules/.crow-installed-lock.json" 2>/dev/null; then
  (cd "$DIR" && npm ci --no-audit --no-fund >npm-ci.log 2>&1) || { cat "$DIR/npm-ci.log" >&2; echo "npm ci failed in $DIR" >&2; exit 1; }
  cp "$DIR/package-lock.json" "$DIR/node_modules/.crow-installed-lock.json"
fi
echo "$DIR/client.mjs"
