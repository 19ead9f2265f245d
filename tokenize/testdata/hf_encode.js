// Encodes texts with Hugging Face `tokenizers` (node binding), for parity tests.
// Usage: NODE_PATH=<peers node_modules> node hf_encode.js TOKENIZER.json < in.jsonl > out.jsonl
// Each input line is {"text": ...}; each output line is {"ids": [...], "decoded": ...}, in the
// same order, from Tokenizer.fromFile(path), encode(text, null, {addSpecialTokens: false})
// and decode(ids, false).
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

async function main() {
  const tok = Tokenizer.fromFile(process.argv[2]);
  // Split on '\n' only: readline would also split on a lone '\r'.
  const lines = fs.readFileSync(0, 'utf8').split('\n');
  const out = [];
  for (const line of lines) {
    if (line === '') continue;
    const { text } = JSON.parse(line);
    const enc = await tok.encode(text, null, { addSpecialTokens: false });
    const ids = Array.from(enc.getIds());
    out.push(JSON.stringify({ ids, decoded: await tok.decode(ids, false) }));
  }
  process.stdout.write(out.map((l) => l + '\n').join(''));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
