#!/usr/bin/env bash
# Builds the mixed benchmark corpus of `make bench`: the team's ~80 MB English-ish corpus
# ($SHARED/tools/make-bench-corpus.sh: vim and Debian docs, man pages, prose, Go source:
# code and numbers) followed by the texts of testdata/corpora/parity.jsonl.zst (many
# scripts: Arabic, CJK, Cyrillic, Hindi, Thai, ..., emoji, edge cases), one blank line after
# each. Deterministic for the same files on the machine.
#   make-mixed-corpus.sh OUT [TARGET_MB=80]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
OUT=$1
TARGET_MB=${2:-80}
SHARED=${SHARED:-$root/../shared}
bash "$SHARED/tools/make-bench-corpus.sh" "$OUT.tmp" "$TARGET_MB"
zstd -dc "$root/testdata/corpora/parity.jsonl.zst" | jq -j '.text + "\n\n"' >> "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "wrote $OUT: $(stat -c %s "$OUT") bytes, sha256 $(sha256sum "$OUT" | cut -c1-16)" >&2
