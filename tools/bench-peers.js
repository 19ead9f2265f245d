#!/usr/bin/env node
// The peer tokenizers' throughput, for `make bench` (tools/bench.sh): Hugging Face
// tokenizers (node binding), tiktoken (WASM, npm `tiktoken`) and tiktoken-rs (native,
// npm `tiktoken-rs-node-linux-x64-gnu`), installed by tools/install-peers.sh.
//
//   NODE_PATH=.cache/peers/node_modules node tools/bench-peers.js --runs 3 --json out.json \
//     --job hf:gpt2:FILE --job tiktoken:cl100k_base:FILE --job tiktoken-rs:gpt2:FILE ...
//
// A job is TOOL:MODEL:FILE. Models: hf gpt2 and neox-20b (the tokenizer.json files under
// --tokdir), tiktoken and tiktoken-rs gpt2, cl100k_base and o200k_base. Each job runs in a fresh
// child process: the file is cut at newlines into pieces of ~1 MB (as tokenize's
// BenchmarkEncode cuts it: the same pieces), each piece is one encode call, one pass is
// untimed (caches warm), then --runs timed passes. Reported per job: MB (10^6 bytes) per
// CPU-second of the process (median over the passes), wall MB/s, tokens, and ids_hash,
// a hash of every id in order (FNV-1a over the ids as little-endian uint32), which
// tokenize's benchmark computes the same way to show that the ids are identical.
// Special tokens in the text are encoded as specials (tiktoken encode with all
// specials allowed; HF's behaviour), as tokenize does.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');

const CHUNK = 1 << 20; // UTF-16 code units, as tokenize's benchSplitChunks

function splitChunks(text) {
  const out = [];
  for (let i = 0; i < text.length;) {
    let j = Math.min(text.length, i + CHUNK);
    if (j < text.length) {
      const k = text.indexOf('\n', j);
      j = k < 0 ? text.length : k + 1;
    }
    out.push(text.slice(i, j));
    i = j;
  }
  return out;
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

// FNV-1a, 32-bit, over each id as 4 little-endian bytes.
function hashIDs(h, ids) {
  for (let k = 0; k < ids.length; k++) {
    let v = ids[k];
    for (let b = 0; b < 4; b++) {
      h ^= v & 0xff;
      h = Math.imul(h, 0x01000193) >>> 0;
      v >>>= 8;
    }
  }
  return h;
}

function encoder(job) {
  if (job.tool === 'hf') {
    const { Tokenizer } = require('tokenizers');
    const tok = Tokenizer.fromFile(path.join(job.tokdir, job.model, 'tokenizer.json'));
    const opts = { addSpecialTokens: false };
    let calls = 0;
    // Encoding objects hold native memory V8 does not see: collect now and then.
    return async (s) => { const ids = (await tok.encode(s, null, opts)).getIds(); if (++calls % 4 === 0 && global.gc) global.gc(); return ids; };
  }
  if (job.tool === 'tiktoken') {
    const { get_encoding } = require('tiktoken');
    const enc = get_encoding(job.model);
    return async (s) => enc.encode(s, 'all');
  }
  if (job.tool === 'tiktoken-rs') {
    const { getEncoding } = require('tiktoken-rs-node-linux-x64-gnu');
    const enc = getEncoding(job.model);
    return async (s) => enc.encode(s); // special tokens allowed
  }
  throw new Error('unknown tool ' + job.tool);
}

async function child(job) {
  const text = fs.readFileSync(job.file, 'utf8');
  const pieces = splitChunks(text);
  const bytes = pieces.reduce((s, p) => s + Buffer.byteLength(p), 0);
  let t0 = process.hrtime.bigint();
  const encode = encoder(job);
  const loadS = Number(process.hrtime.bigint() - t0) / 1e9;
  const pass = async (hash) => {
    let n = 0, h = 0x811c9dc5;
    for (const p of pieces) {
      const ids = await encode(p);
      n += ids.length;
      if (hash) h = hashIDs(h, ids);
    }
    return [n, h];
  };
  const [tokens, idsHash] = await pass(true); // untimed: warm-up, and the hash
  const cpus = [], walls = [];
  for (let r = 0; r < job.runs; r++) {
    const c0 = process.cpuUsage();
    t0 = process.hrtime.bigint();
    await pass(false);
    walls.push(Number(process.hrtime.bigint() - t0) / 1e9);
    const c = process.cpuUsage(c0);
    cpus.push((c.user + c.system) / 1e6);
  }
  return {
    tool: job.tool, model: job.model, file: job.file, bytes, pieces: pieces.length, tokens,
    ids_hash: idsHash.toString(16).padStart(8, '0'), load_s: +loadS.toFixed(3),
    MB_per_cpu_s: +(bytes / median(cpus) / 1e6).toFixed(2), MB_per_s: +(bytes / median(walls) / 1e6).toFixed(2),
    cpu_s: cpus.map((x) => +x.toFixed(3)), loadavg: os.loadavg()[0],
  };
}

function parent() {
  const a = { tokdir: path.join(__dirname, '..', '..', 'shared', 'tokenizers'), runs: 3, json: null, jobs: [] };
  for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i].replace(/^--/, ''), v = process.argv[i + 1];
    if (k === 'job') {
      const [tool, model, ...file] = v.split(':');
      a.jobs.push({ tool, model, file: file.join(':') });
    } else if (k === 'runs') a.runs = +v;
    else a[k] = v;
  }
  const results = [];
  for (const j of a.jobs) {
    const job = { ...j, tokdir: a.tokdir, runs: a.runs };
    const r = spawnSync(process.execPath, ['--expose-gc', __filename, '--child', JSON.stringify(job)],
      { encoding: 'utf8', maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, RAYON_NUM_THREADS: '1' } });
    if (r.status !== 0) { console.error(`${j.tool}:${j.model}:${j.file} failed`); continue; }
    const res = JSON.parse(r.stdout);
    results.push(res);
    console.error(`${res.tool.padEnd(12)} ${res.model.padEnd(12)} ${path.basename(res.file).padEnd(22)} ${String(res.MB_per_cpu_s).padStart(8)} MB/cpu-s ` +
      `${String(res.MB_per_s).padStart(8)} MB/s  ${res.tokens} tokens, ids ${res.ids_hash}, cpu ${res.cpu_s.join('/')} s`);
  }
  const out = JSON.stringify({ host: { cpus: os.cpus().length, cpu: os.cpus()[0].model, node: process.version }, results }, null, 1) + '\n';
  if (a.json) fs.writeFileSync(a.json, out); else process.stdout.write(out);
}

if (process.argv[2] === '--child') {
  child(JSON.parse(process.argv[3])).then((r) => process.stdout.write(JSON.stringify(r)), (e) => { console.error(e); process.exit(1); });
} else {
  parent();
}
