#!/usr/bin/env bash
# The GPU check's ptx-ab stage (tools/gpu/check.sh): a command run with the PTX modules
# of an earlier commit in place of the embedded ones, then as built, in turn on the same
# card:
#
#   ptx-ab.sh PTXDIR PROFILE AGAIN_ARGS CMD...
#
# Each round runs CMD with GPTKIT_PTX_DIR=PTXDIR (kernels/cuda/ptx.go) and then with this
# build's PTX and AGAIN_ARGS (split on spaces: say, another --out) appended; PTX_AB_ROUNDS
# rounds (default 1), so that neither side always runs first on a card that warms up. The
# first run has GPTKIT_PROFILE=PROFILE when PROFILE is not empty. Lines "== the PTX of ..."
# and "== this build's PTX" come before each run, for tools/gpu/report.py. The status is
# the first failure's.
set -u
if [ $# -lt 4 ]; then
  echo "usage: $0 PTXDIR PROFILE AGAIN_ARGS CMD... (PROFILE and AGAIN_ARGS may be \"\"; say, $0 /tmp/ptx-old \"\" \"--out /tmp/b\" ./train --device cuda ...)" >&2
  exit 2
fi
dir=$1 prof=$2 again=$3
shift 3
rounds=${PTX_AB_ROUNDS:-1}
for ((r = 1; r <= rounds; r++)); do
  echo "== the PTX of $dir"
  if [ "$r" = 1 ] && [ -n "$prof" ]; then
    GPTKIT_PTX_DIR=$dir GPTKIT_PROFILE=$prof "$@" || exit
  else
    GPTKIT_PTX_DIR=$dir "$@" || exit
  fi
  echo "== this build's PTX"
  # shellcheck disable=SC2086 # AGAIN_ARGS is words
  "$@" $again || exit
done
