#!/usr/bin/env python3
"""Rewrites the data files the repository ships from the team's shared/ directory.

    python3 tools/make-testdata.py [SHARED]      (default: ../shared beside the repository)

Writes, all zstd-compressed (zstd --ultra -22, decompressed by klauspost/compress):
  tokenize/embedded/<name>/<file>.zst   the named tokenizers' files, byte for byte
  internal/tinyshakespeare/input.txt.zst tiny Shakespeare, byte for byte
  testdata/tokenizers/gpt2/tokenizer.json.zst
  testdata/corpora/parity.jsonl.zst     a sample of shared/corpora/parity-public.jsonl
  testdata/golden/<name>.ids.zst        the golden ids of those documents, one JSON array
                                        per line, in the sample's order
and, uncompressed, tokenize/internal/gen/classes/hf-bytelevel-classes.json (make generate's input).
The sample keeps every short document (<= 300 bytes), every document holding an added
token (<|endoftext|>, <|padding|>), the documents NFC changes (neox-20b's round-trip
failures: all up to 2,000 bytes and every 4th longer one), those with code points newer
than Unicode 14 (same rule), and every 16th of the others. NOTICE records provenance,
licences and the sha256 of every file; run this, then `go test ./internal/testfiles
./tokenize/... ./internal/tinyshakespeare` (they check the digests) and update NOTICE.
"""
import hashlib
import json
import os
import subprocess
import sys
import unicodedata

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
shared = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "..", "shared"))


def zstd(data: bytes, dest: str) -> None:
    dest = os.path.join(root, dest)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    out = subprocess.run(["zstd", "-q", "--ultra", "-22", "-c"], input=data, check=True, stdout=subprocess.PIPE).stdout
    with open(dest, "wb") as f:
        f.write(out)
    print(f"{dest[len(root)+1:]}: {len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()}, {len(out):,} compressed")


def read(rel: str) -> bytes:
    with open(os.path.join(shared, rel), "rb") as f:
        return f.read()


for src, dest in [
    ("tokenizers/gpt2/vocab.json", "tokenize/embedded/gpt2/vocab.json.zst"),
    ("tokenizers/gpt2/merges.txt", "tokenize/embedded/gpt2/merges.txt.zst"),
    ("tokenizers/neox-20b/tokenizer.json", "tokenize/embedded/neox-20b/tokenizer.json.zst"),
    ("tokenizers/tiktoken/cl100k_base.tiktoken", "tokenize/embedded/cl100k_base/cl100k_base.tiktoken.zst"),
    ("tokenizers/tiktoken/o200k_base.tiktoken", "tokenize/embedded/o200k_base/o200k_base.tiktoken.zst"),
    ("corpora/tinyshakespeare.txt", "internal/tinyshakespeare/input.txt.zst"),
    ("tokenizers/gpt2/tokenizer.json", "testdata/tokenizers/gpt2/tokenizer.json.zst"),
]:
    zstd(read(src), dest)

with open(os.path.join(root, "tokenize/internal/gen/classes/hf-bytelevel-classes.json"), "wb") as f:
    f.write(read("tokenizers/hf-bytelevel-classes.json"))

lines = read("corpora/parity-public.jsonl").decode().split("\n")[:-1]
texts = [json.loads(line)["text"] for line in lines]
report = json.loads(read("tokenizers/golden/neox-20b-public.report.json"))
nfc = {r["line"] - 1 for r in report["roundtrip_fail"]}
new = {i for i, t in enumerate(texts) if any(unicodedata.category(c) == "Cn" for c in t)}
picked, seen = [], {"nfc": 0, "new": 0, "other": 0}
for i, text in enumerate(texts):
    size = len(text.encode())
    kind = "nfc" if i in nfc else "new" if i in new else "other"
    if size <= 300 or "<|endoftext|>" in text or "<|padding|>" in text:
        keep = True
    elif kind == "other":
        keep = seen[kind] % 16 == 0
    else:
        keep = size <= 2000 or seen[kind] % 4 == 0
    if size > 300 and "<|" not in text:
        seen[kind] += 1
    if keep:
        picked.append(i)
print(f"sample: {len(picked)} of {len(texts)} documents, {sum(len(texts[i].encode()) for i in picked):,} bytes of text")
zstd("".join(lines[i] + "\n" for i in picked).encode(), "testdata/corpora/parity.jsonl.zst")
for name in ["gpt2", "neox-20b", "cl100k_base", "o200k_base"]:
    golden = read(f"tokenizers/golden/{name}-public.jsonl").decode().split("\n")[:-1]
    assert len(golden) == len(texts), name
    out = []
    for i in picked:
        doc = json.loads(golden[i])
        assert doc["text"] == texts[i], (name, i)
        out.append(json.dumps(doc["ids"], separators=(",", ":")) + "\n")
    zstd("".join(out).encode(), f"testdata/golden/{name}.ids.zst")
