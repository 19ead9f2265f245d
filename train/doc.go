// Package train is gptkit's GPT trainer: a GPT-2 model as nanoGPT defines it
// (token and learned position embeddings, pre-LayerNorm blocks of causal
// self-attention and a 4x tanh-GELU MLP, a final LayerNorm, the output layer
// tied to the token embedding, the vocabulary padded to a multiple of 64,
// optional biases and dropout), trained with nanoGPT's recipe: AdamW with
// weight decay on the 2-D weights only, linear warmup and cosine decay to
// min_lr, gradient clipping by global norm, gradient accumulation and periodic
// evaluation on the valid split.
//
// The model is written by hand over kernels.Backend rather than on a general
// autograd: every op has an explicit forward/backward pair (llm.c style), so
// the step is a fixed sequence of kernel calls whose arithmetic does not depend
// on thread counts. That is what makes the trainer a numerical reference and
// what makes a resumed run bit-identical to an uninterrupted one.
//
// Layout: all parameters live in one flat float32 buffer from Backend.Alloc,
// with named views (nanoGPT's state_dict names, nn.Linear [out, in] layout). The
// weights that get weight decay (wte, wpe and the attention and MLP matrices)
// come first, the biases and LayerNorm parameters after them, so AdamW is one
// call over the flat buffer (its DecayLen says where decay stops); gradients and
// the two AdamW moments mirror the layout. Activations are allocated once for
// the micro-batch shape (B, T).
//
// Mixed precision (the dtype key; docs/mixed-precision.md): the master weights,
// gradients and AdamW moments stay float32; the forward and backward read a
// bfloat16 (or float16) copy of the weights that AdamW rewrites in the same pass,
// with 16-bit activations and float32 accumulation everywhere; float16 adds
// dynamic loss scaling. A step downloads once: the loss sum and the gradient
// norm's partial sums, after AdamW has clipped (on the device) from them.
//
// Data parallelism: Run takes a Collectives (train/dist's TCP ring on the CPU,
// NCCL on GPUs, Single for one process). Rank 0 decides whether to resume, reads
// the checkpoint and broadcasts the starting point (step, sample cursor, weights
// and AdamW state), so the other ranks need not see its disk. Each rank draws its
// share of every global micro-batch from loader.Sampler. During the last
// micro-batch's backward pass the gradient is all-reduced bucket by bucket as the
// layers finish (bucket_mb), overlapping the rest of the pass. With zero 1
// (ZeRO stage 1) the gradient is reduce-scattered instead, each rank runs AdamW
// on its shard of the flat buffers (so it holds 1/World of the AdamW state) and
// the weights are all-gathered; results are the same as without. The loss is the
// mean over the whole global batch (the ranks' sums and counts are gathered
// exactly), the gradient norm is summed block by block in an order that does not
// depend on the world size, the ranks agree before each step whether to stop (a
// signal on one rank stops all after the same step), and every 100 steps and at
// each checkpoint the ranks compare checksums of their weights: ranks that
// diverged are an error. Only rank 0 writes (the sharded AdamW state is gathered
// for a checkpoint, so checkpoints do not depend on the world size and a run can
// resume on another number of ranks with the same global batch).
//
// Randomness: the initialization is seeded (PCG per tensor, keyed by the
// tensor's name), and dropout masks are keyed by (seed, step, micro-step, rank,
// layer, site), so no random state drifts and a checkpoint need not carry any.
// Evaluation is deterministic: it uses the first eval_steps x batch_size x world
// samples of the valid split.
//
// Outputs (Run): OUT/config.yaml (the resolved configuration), OUT/metrics.jsonl
// (one JSON object per optimizer step) and OUT/checkpoints/ (train/checkpoint:
// model weights as safetensors, AdamW state, trainer state).
package train
