#!/usr/bin/env bash
# Installs the peer tokenizers that tests and benchmarks compare against (HF `tokenizers`
# 0.23.2 node binding, tiktoken 1.0.22 WASM, and tiktoken-rs native through its node binding
# tiktoken-rs-node-linux-x64-gnu 1.0.6: tiktoken-rs 0.6.0, the Rust crate) into .cache/peers,
# once. Needs node + npm. Prints the node_modules directory on stdout.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cache/peers"
if [ ! -f "$dir/node_modules/tokenizers/package.json" ] || [ ! -f "$dir/node_modules/tiktoken/package.json" ] ||
  [ ! -f "$dir/node_modules/tiktoken-rs-node-linux-x64-gnu/package.json" ]; then
  if ! command -v npm >/dev/null; then
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
  fi
  mkdir -p "$dir"
  (cd "$dir" && npm install --no-audit --no-fund --silent tokenizers@0.23.2 tiktoken@1.0.22 tiktoken-rs-node-linux-x64-gnu@1.0.6 >&2)
fi
echo "$dir/node_modules"
