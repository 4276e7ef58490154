#!/usr/bin/env bash
# (Copied from the shared tools: .ci/run and e2e TestMCPConformance use it.)
# Installs the official MCP conformance suite (npm @modelcontextprotocol/conformance 0.1.16) into DIR
# (default: a scratch folder) and patches its one Node 22 dependency (fs.globSync) to the glob package,
# so it runs on Node 20. Prints the path of the runnable index.js.
set -euo pipefail
DIR=${1:-$(dirname "$(mktemp -u)")/mcpconf}
mkdir -p "$DIR"; cd "$DIR"
if [ ! -f node_modules/@modelcontextprotocol/conformance/dist/index.js.orig ]; then
  [ -f package.json ] || npm init -y >/dev/null
  npm install --no-audit --no-fund --silent @modelcontextprotocol/conformance@0.1.16 glob@11 >/dev/null 2>&1
  f=node_modules/@modelcontextprotocol/conformance/dist/index.js
  cp "$f" "$f.orig"
  python3 - "$f" <<'PY'
import sys
p=sys.argv[1]; s=open(p).read()
head, body = s.split('\n', 1)
body = body.replace('existsSync as a,globSync as o,mkdtempSync', 'existsSync as a,mkdtempSync', 1)
open(p, 'w').write(head + '\nimport{globSync as o}from"glob";' + body)
PY
fi
echo "$DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
