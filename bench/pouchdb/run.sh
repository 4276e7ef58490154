#!/bin/sh
# The side-by-side benchmark from this checkout: builds crow from the
# repository, then runs PouchDB and crow interleaved on the same workload and
# prints the table of ratios (run-all.sh).
#   bench/pouchdb/run.sh [RUNS=3]      env: N (default 100000), WORK
# Needs Node >= 18 with npm (the PouchDB side runs npm ci) and Go.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=$here/bin/crow   # not under WORK: each run wipes its data directory
mkdir -p "$(dirname "$bin")"
(cd "$repo" && go build -o "$bin" ./cmd/crow)
exec "$here/run-all.sh" "$bin" "${1:-3}"
