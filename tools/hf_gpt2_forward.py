#!/usr/bin/env python3
"""GPT-2 logits from a Hugging Face model directory, computed in PyTorch without transformers.

    hf_gpt2_forward.py DIR TOKENS_JSON  ->  {"logits": [[...V floats...] x T]} on stdout

DIR holds config.json and model.safetensors as GPT2LMHeadModel.save_pretrained writes them
(and as `train export --format hf` does). The safetensors header is parsed here (the
safetensors package is not needed), and the forward pass follows transformers'
modeling_gpt2.py semantics: Conv1D layers compute x @ W + b with W stored [in, out];
c_attn's output splits into q, k, v; causal softmax attention scaled by 1/sqrt(head
size); gelu_new; pre-LayerNorm blocks; a final LayerNorm; logits from the tied wte (or
lm_head.weight when the file has one). Everything runs in float64 so that a comparison
with another implementation measures layout mistakes, not rounding.

gptkit's hfgpt2 tests run it to check the exported layout against an independent forward
pass written for gptkit's own layout (nn.Linear [out, in]).
"""
import json
import math
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = DTYPES[info["dtype"]]
        if end > begin:
            t = torch.frombuffer(bytearray(data[base + begin : base + end]), dtype=dtype)
        else:
            t = torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(info["shape"]).to(torch.float64)
    return tensors


def forward(cfg, w, tokens):
    def get(name):
        return w["transformer." + name] if "transformer." + name in w else w[name]

    T, C, H = len(tokens), cfg["n_embd"], cfg["n_head"]
    hs = C // H
    eps = cfg.get("layer_norm_epsilon", 1e-5)

    def layer_norm(x, p):
        return torch.nn.functional.layer_norm(x, (C,), get(p + ".weight"), get(p + ".bias"), eps)

    def conv1d(x, p):  # transformers.pytorch_utils.Conv1D: weight [in, out]
        return x @ get(p + ".weight") + get(p + ".bias")

    def gelu_new(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    x = get("wte.weight")[torch.tensor(tokens)] + get("wpe.weight")[:T]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(cfg["n_layer"]):
        p = "h.%d" % i
        q, k, v = conv1d(layer_norm(x, p + ".ln_1"), p + ".attn.c_attn").split(C, dim=-1)
        q, k, v = (z.reshape(T, H, hs).transpose(0, 1) for z in (q, k, v))  # (H, T, hs)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(hs)
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(0, 1).reshape(T, C)
        x = x + conv1d(y, p + ".attn.c_proj")
        x = x + conv1d(gelu_new(conv1d(layer_norm(x, p + ".ln_2"), p + ".mlp.c_fc")), p + ".mlp.c_proj")
    x = layer_norm(x, "ln_f")
    head = w["lm_head.weight"] if "lm_head.weight" in w else get("wte.weight")
    return x @ head.T


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: hf_gpt2_forward.py DIR TOKENS_JSON")
    model_dir, tokens = sys.argv[1], json.loads(sys.argv[2])
    with open(model_dir + "/config.json") as f:
        cfg = json.load(f)
    w = load_safetensors(model_dir + "/model.safetensors")
    logits = forward(cfg, w, tokens)
    json.dump({"logits": logits.tolist()}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
