// Package hfgpt2 converts GPT weights between gptkit's names and layout and the Hugging
// Face transformers GPT2LMHeadModel format (a directory with model.safetensors and
// config.json), so that a trained model loads with GPT2LMHeadModel.from_pretrained and
// a published GPT-2 checkpoint can start a run.
//
// gptkit's names are nanoGPT's state_dict names with PyTorch nn.Linear weights, [out, in]:
//
//	transformer.wte.weight            (Vp, C)   Vp = vocab padded to a multiple of 64
//	transformer.wpe.weight            (maxT, C)
//	transformer.h.{i}.ln_1.weight     (C)        and .bias (C)
//	transformer.h.{i}.attn.c_attn.weight  (3C, C)  and .bias (3C)
//	transformer.h.{i}.attn.c_proj.weight  (C, C)   and .bias (C)
//	transformer.h.{i}.ln_2.weight     (C)        and .bias (C)
//	transformer.h.{i}.mlp.c_fc.weight     (4C, C)  and .bias (4C)
//	transformer.h.{i}.mlp.c_proj.weight   (C, 4C)  and .bias (C)
//	transformer.ln_f.weight           (C)        and .bias (C)
//
// lm_head is tied to wte and not stored; biases are absent when the model has none.
// Hugging Face's GPT-2 uses Conv1D modules whose weights are [in, out], so every
// c_attn, c_proj and c_fc weight is transposed on the way out and back. The Hugging Face
// file has exactly VocabSize rows of wte (the padding rows are dropped) and always has
// biases: a bias-free model is written with zero biases, marked in config.json.
//
// It is hand-written because the mapping is a short table plus transposes, and the
// reference (transformers' modeling_gpt2.py) is Python.
package hfgpt2
