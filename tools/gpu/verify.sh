#!/usr/bin/env bash
# GPU verification on a machine that has a GPU and Go: builds the GPU check's folder
# (tools/gpu/build.sh) and runs the check (tools/gpu/check.sh), which writes the report.
# On a GPU machine without Go, build on a CPU machine and carry gpu-check/ over:
# docs/gpu.md says how. Arguments are ignored (the check brings tiny Shakespeare).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bash "$root/tools/gpu/build.sh"
exec bash "$root/tools/gpu/check.sh"
