#!/usr/bin/env bash
# Installs the MinIO server that the S3 tests run (internal/miniotest) as
# $(go env GOPATH)/bin/minio, unless it is already there or $MINIO_BIN names one.
# Built from source with the Go toolchain: about 8 minutes on a cold module cache, 150 MB.
# The version is the one measured working here (shared/notes/infra.md §1); override with
# MINIO_VERSION=... at your own risk.
set -euo pipefail

version=${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}

if [ -n "${MINIO_BIN:-}" ]; then
  if [ -x "$MINIO_BIN" ]; then echo "minio: using MINIO_BIN=$MINIO_BIN"; exit 0; fi
  echo "minio: MINIO_BIN=$MINIO_BIN is not an executable file" >&2; exit 1
fi

gopath=$(go env GOPATH)
bindir="${gopath%%:*}/bin"
bin="$bindir/minio"
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  echo "minio: $bin already installed"
  exit 0
fi

echo "minio: building github.com/minio/minio@$version into $bindir (about 8 minutes on a cold module cache)"
start=$(date +%s)
# -mod=mod: resolve MinIO's own go.mod, whatever GOFLAGS the caller set; GOBIN: the tests
# look in GOPATH/bin, not wherever GOBIN points.
(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod GOBIN="$bindir" go install "github.com/minio/minio@$version")
"$bin" --version >/dev/null
echo "minio: installed $bin in $(( $(date +%s) - start ))s"
