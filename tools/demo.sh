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

# The baby GPT (configs/shakespeare-char.yaml, nanoGPT's CPU config) on tiny Shakespeare,
# character-level: prep it (the text goes where prep expects its download, since GitHub is
# out of reach), train 2000 steps on the CPU, check the val loss against nanoGPT's 1.8857,
# and print a sample.
mkdir -p "$work/data/shakespeare/downloads"
cp "$text" "$work/data/shakespeare/downloads/input.txt"
"$bin/prep" shakespeare -d "$work/data" --progress off 2>/dev/null | sed 's/^/  /'
echo "training the baby GPT (4 layers, 4 heads, 128 wide, context 64) for 2000 steps on the CPU..."
"$bin/train" --config "$root/configs/shakespeare-char.yaml" --data "$work/data/shakespeare" --out "$work/baby" > "$work/baby.json"
read -r step val secs < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["step"], s["val_loss"], s["seconds"])' "$work/baby.json")
printf 'baby GPT: val loss %.4f after %d steps in %.0fs (nanoGPT: 1.8857; wanted <= 1.89)\n' "$val" "$step" "$secs"
echo "sample (--prompt 'ROMEO:' --max-new-tokens 300 --seed 1337):"
"$bin/train" sample --ckpt "$work/baby" --prompt "ROMEO:" --max-new-tokens 300 --seed 1337 | sed 's/^/  | /'
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 1.89 else 1)' "$val" \
  || { echo "demo: val loss $val is above 1.89" >&2; exit 1; }
