#!/usr/bin/env bash
# Installs the peer tokenizers that tests and benchmarks compare against (HF `tokenizers`
# 0.23.2 node binding and tiktoken 1.0.22 WASM) into .cache/peers, once. Needs node + npm.
# Prints the node_modules directory on stdout.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cache/peers"
if [ ! -f "$dir/node_modules/tokenizers/package.json" ] || [ ! -f "$dir/node_modules/tiktoken/package.json" ]; then
  if ! command -v npm >/dev/null; then
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
  fi
  mkdir -p "$dir"
  (cd "$dir" && npm install --no-audit --no-fund --silent tokenizers@0.23.2 tiktoken@1.0.22 >&2)
fi
echo "$dir/node_modules"
