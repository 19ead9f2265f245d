// Trains a byte-level BPE with Hugging Face `tokenizers` (node binding), for parity tests.
// Usage: NODE_PATH=<peers node_modules> node hf_train.js CORPUS.txt OUT.json
// The node binding exposes only Tokenizer.train(files) with the model's default trainer:
// BpeTrainer with vocab_size 30000, min_frequency 0, no special tokens and no initial
// alphabet (only the characters seen). Each line of CORPUS (with its '\n') is one sequence.
const { Tokenizer, BPE, byteLevelPreTokenizer } = require('tokenizers');

const tok = new Tokenizer(BPE.empty());
tok.setPreTokenizer(byteLevelPreTokenizer(false, true));
tok.train([process.argv[2]]);
tok.save(process.argv[3], false);
