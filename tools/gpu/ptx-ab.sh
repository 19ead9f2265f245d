#!/usr/bin/env bash
# The GPU check's ptx-ab stage (tools/gpu/check.sh): a command run with the PTX modules
# of an earlier commit in place of the embedded ones, then as built, one after the other
# on the same card:
#
#   ptx-ab.sh PTXDIR PROFILE AGAIN_ARGS CMD...
#
# The first run has GPTKIT_PTX_DIR=PTXDIR (kernels/cuda/ptx.go) and, when PROFILE is not
# empty, GPTKIT_PROFILE=PROFILE; the second runs CMD with AGAIN_ARGS (split on spaces:
# say, another --out) appended and this build's PTX. Lines "== the PTX of ..." and
# "== this build's PTX" come before each, for tools/gpu/report.py. The status is the
# first failure's.
set -u
dir=$1 prof=$2 again=$3
shift 3
echo "== the PTX of $dir"
if [ -n "$prof" ]; then
  GPTKIT_PTX_DIR=$dir GPTKIT_PROFILE=$prof "$@" || exit
else
  GPTKIT_PTX_DIR=$dir "$@" || exit
fi
echo "== this build's PTX"
# shellcheck disable=SC2086 # AGAIN_ARGS is words
exec "$@" $again
