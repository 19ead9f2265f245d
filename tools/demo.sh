#!/usr/bin/env bash
# make demo: the quickstart's first command. Offline, on the CPU, in about 2 minutes:
# prep tiny Shakespeare (the text is built into bin/prep), train nanoGPT's baby GPT
# (configs/shakespeare-char.yaml) to a val loss of 1.89 or less (nanoGPT: 1.8857),
# print a sample and draw loss.png. Everything goes to $DEMO_DIR (default ./demo):
# demo/data/shakespeare (the dataset) and demo/baby (the run: checkpoints,
# metrics.jsonl, TensorBoard events, loss.png).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/bin
demo=${DEMO_DIR:-$root/demo}
mkdir -p "$demo"

echo "== prep tiny Shakespeare (offline: the text is built into bin/prep)"
"$bin/prep" shakespeare -d "$demo/data" --progress off 2>&1 | grep -v '^time=' | sed 's/^/  /'

echo "== train the baby GPT on the CPU (4 layers, 4 heads, 128 wide, context 64, 2000 steps)"
rm -rf "$demo/baby" # a fresh run, so that the val loss below is this run's
"$bin/train" --config "$root/configs/shakespeare-char.yaml" --data "$demo/data/shakespeare" \
  --out "$demo/baby" --device cpu --log-every 250 > "$demo/baby.json"
summary=$(cat "$demo/baby.json")
field() { sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p" <<<"$summary"; }
val=$(field val_loss)
steps=$(field step)
secs=$(field seconds)
[ -n "$val" ] || { echo "demo: no val_loss in the run's summary: $summary" >&2; exit 1; }
printf 'baby GPT: val loss %.4f after %d steps in %.0f s (nanoGPT: 1.8857; wanted <= 1.89)\n' "$val" "$steps" "$secs"

echo "== sample (--prompt 'ROMEO:' --max-new-tokens 300 --seed 1337)"
"$bin/train" sample --ckpt "$demo/baby" --device cpu --prompt "ROMEO:" --max-new-tokens 300 --seed 1337 | sed 's/^/  | /'

echo "== loss curve"
png=$("$bin/train" plot --out "$demo/baby")
echo "  $png (TensorBoard: tensorboard --logdir $demo/baby)"

awk -v v="$val" 'BEGIN { exit !(v <= 1.89) }' || { echo "demo: val loss $val is above 1.89" >&2; exit 1; }
echo "demo: ok"
