#!/usr/bin/env bash
# Rebuilds ProjectStateAnchor.abi, ProjectStateAnchor.bin and bindings.go from
# ProjectStateAnchor.sol, reproducibly:
#
#   - solc-js from the npm registry, pinned to SOLC_VERSION, its tarball
#     checked against SOLC_INTEGRITY and the compiler against SOLC_LONG_VERSION
#     (the commit-qualified version it reports), installed into a throw-away
#     directory;
#   - standard-JSON input with fixed settings (optimizer on, 200 runs,
#     evmVersion paris, default metadata), so the same source always gives the
#     same bytecode;
#   - abigen from go-ethereum ABIGEN_VERSION (the module's own version).
#
# Usage:  anchor/contract/build.sh          rebuild in place
#         anchor/contract/build.sh --check  rebuild into a temp dir and fail if
#                                           any committed artifact differs
#
# Needs node, npm (registry access) and go. go test ./anchor/... does not need
# any of this: it checks that bindings.go matches the committed .abi/.bin.
set -euo pipefail

SOLC_VERSION=0.8.37
SOLC_LONG_VERSION=0.8.37+commit.f401782d.Emscripten.clang
SOLC_INTEGRITY=sha512-ieUYdPDRGNKMsZpCfi9tY64Q+ASoL8tyhLuvf9cFiqDs+6ijlx8Wn2CRi0N71AlCvRx0V092rlUYu3b3PuxWlA==
ABIGEN_VERSION=v1.17.10
OPTIMIZER_RUNS=200
EVM_VERSION=paris

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
check=0
if [[ "${1:-}" == "--check" ]]; then check=1; fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "installing solc@${SOLC_VERSION} from npm into ${work}" >&2
(
	cd "$work"
	npm init -y >/dev/null
	npm install --no-audit --no-fund --ignore-scripts --save-exact "solc@${SOLC_VERSION}" >/dev/null
	got="$(node -p "require('./package-lock.json').packages['node_modules/solc'].integrity")"
	if [[ "$got" != "$SOLC_INTEGRITY" ]]; then
		echo "solc@${SOLC_VERSION} tarball integrity is $got, build.sh pins $SOLC_INTEGRITY" >&2
		exit 1
	fi
)

out="$here"
if [[ $check == 1 ]]; then out="$work/out"; mkdir -p "$out"; fi

cat >"$work/compile.js" <<'JS'
const fs = require('fs');
const path = require('path');
const solc = require(path.join(process.argv[2], 'node_modules', 'solc'));
const [, , , srcPath, outDir, runs, evmVersion, wantVersion] = process.argv;
const got = solc.version();
if (wantVersion && got !== wantVersion) {
  console.error(`solc reports ${got}, build.sh pins ${wantVersion}`);
  process.exit(1);
}
const input = {
  language: 'Solidity',
  sources: { 'ProjectStateAnchor.sol': { content: fs.readFileSync(srcPath, 'utf8') } },
  settings: {
    optimizer: { enabled: true, runs: Number(runs) },
    evmVersion,
    outputSelection: { 'ProjectStateAnchor.sol': { ProjectStateAnchor: ['abi', 'evm.bytecode.object'] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
let failed = false;
for (const e of output.errors || []) {
  console.error(e.formattedMessage);
  if (e.severity === 'error') failed = true;
}
if (failed) process.exit(1);
const c = output.contracts['ProjectStateAnchor.sol'].ProjectStateAnchor;
fs.writeFileSync(path.join(outDir, 'ProjectStateAnchor.abi'), JSON.stringify(c.abi, null, 2) + '\n');
fs.writeFileSync(path.join(outDir, 'ProjectStateAnchor.bin'), c.evm.bytecode.object + '\n');
console.error(`compiled with solc ${got}`);
JS

node "$work/compile.js" "$work" "$here/ProjectStateAnchor.sol" "$out" \
	"$OPTIMIZER_RUNS" "$EVM_VERSION" "$SOLC_LONG_VERSION"

abigen=(go run "github.com/ethereum/go-ethereum/cmd/abigen@${ABIGEN_VERSION}")
if command -v abigen >/dev/null && abigen --version 2>/dev/null | grep -q "${ABIGEN_VERSION#v}"; then
	abigen=(abigen)
fi
"${abigen[@]}" --abi "$out/ProjectStateAnchor.abi" --bin "$out/ProjectStateAnchor.bin" \
	--pkg contract --type ProjectStateAnchor --out "$out/bindings.go"
gofmt -w "$out/bindings.go"
chmod 0644 "$out/bindings.go"

if [[ $check == 1 ]]; then
	status=0
	for f in ProjectStateAnchor.abi ProjectStateAnchor.bin bindings.go; do
		if ! cmp -s "$here/$f" "$out/$f"; then
			echo "$f differs from a fresh build" >&2
			status=1
		fi
	done
	if [[ $status == 0 ]]; then echo "artifacts are up to date" >&2; fi
	exit $status
fi
echo "wrote ProjectStateAnchor.abi, ProjectStateAnchor.bin, bindings.go in $here" >&2
