#!/bin/sh
# Installs Hypercore (^11, from npm) into bench/hypercore/node_modules and
# runs the benchmark. Usage: bench/hypercore/run.sh
set -eu
cd "$(dirname "$0")"
npm install --no-audit --no-fund --silent
node bench.js
