#!/usr/bin/env bash
# make demo: tokenize tinyshakespeare with GPT-2 and NeoX-20B, decode it back, and train a
# small tokenizer on it, using the real tokenizers in ../shared (or $SHARED).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SHARED:-$root/../shared}
bin=$root/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
text=$shared/corpora/tinyshakespeare.txt
[ -f "$text" ] || { echo "demo: $text is missing (set SHARED to the shared/ directory)" >&2; exit 1; }

for tok in gpt2 neox-20b; do
  start=$(date +%s.%N)
  "$bin/tokenize" encode --tokenizer "$shared/tokenizers/$tok" < "$text" > "$work/$tok.ids"
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')
  n=$(tr ',' '\n' < "$work/$tok.ids" | wc -l)
  "$bin/tokenize" decode --tokenizer "$shared/tokenizers/$tok" < "$work/$tok.ids" > "$work/$tok.json"
  if python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != open(sys.argv[2]).read())' "$work/$tok.json" "$text"; then
    rt="round trip exact"
  else
    rt="round trip DIFFERS"
  fi
  printf '%-9s %d tokens for %d bytes in %.2fs (process start and load included); %s\n' \
    "$tok" "$n" "$(stat -c %s "$text")" "$secs" "$rt"
done

"$bin/tokenize" train --input "$text" --vocab-size 2000 --out "$work/tokenizer.json" 2>/dev/null
echo "First Citizen: Before we proceed any further, hear me speak." \
  | "$bin/tokenize" encode --tokenizer "$work/tokenizer.json" > "$work/line.ids"
echo "trained a 2000-token tokenizer on tinyshakespeare; 'First Citizen: ...' encodes to $(cat "$work/line.ids")"

# The parity corpus into a GPT-NeoX indexed dataset, then inspect and check it.
"$bin/tokenize" run --input "$shared/corpora/parity-public.jsonl" --output "$work/data/parity" --name parity \
  --tokenizer "$shared/tokenizers/gpt2" --progress off 2>/dev/null
"$bin/shards" info "$work/data/parity" | sed 's/^/  /'
"$bin/shards" verify "$work/data/parity" | tail -1
echo "document 1 decoded: $("$bin/shards" cat "$work/data/parity" --doc 1 --decode --tokenizer "$shared/tokenizers/gpt2" | cut -c1-100)..."
