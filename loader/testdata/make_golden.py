#!/usr/bin/env python3
"""Regenerate the GPT-NeoX sample-order goldens for package loader.

Usage: python3 make_golden.py [OUTDIR]   (default: the directory of this file)

Needs numpy (any version with the legacy np.random.RandomState). The Go
tests only read the JSON files written here; numpy is never needed in CI.

The index steps are a plain transcription of GPT-NeoX
megatron/data/gpt2_dataset.py (_num_tokens, _num_epochs, _build_doc_idx,
_build_sample_idx, _build_shuffle_idx, pack_impl "packed"), and the blending
is a plain-Python transcription of helpers.cpp build_blending_indices plus
data_utils.get_normalized_weights_and_num_samples and BlendableDataset's
weight normalisation. All randomness comes from real numpy.
"""
import hashlib
import json
import math
import os
import sys

import numpy as np

PREFIX = 64  # array entries stored verbatim; the rest is covered by sha256


def digest(arr, dtype):
    a = np.ascontiguousarray(np.asarray(arr, dtype=dtype))
    return hashlib.sha256(a.astype(a.dtype.newbyteorder("<")).tobytes()).hexdigest()


def num_epochs(tokens_per_epoch, seq_length, num_samples):
    epochs = 0
    total = 0
    while True:
        epochs += 1
        total += tokens_per_epoch
        if ((total - 1) // seq_length) >= num_samples:
            return epochs


def build_doc_idx(documents, epochs, np_rng):
    doc_idx = np.mgrid[0:epochs, 0:len(documents)][1]
    doc_idx[:] = documents
    doc_idx = doc_idx.reshape(-1)
    doc_idx = doc_idx.astype(np.int32)
    np_rng.shuffle(doc_idx)
    return doc_idx


def build_sample_idx(sizes, doc_idx, seq_length, epochs, tokens_per_epoch):
    num_samples = (epochs * tokens_per_epoch - 1) // seq_length
    sample_idx = np.zeros([num_samples + 1, 2], dtype=np.int32)
    sample_index = 0
    doc_idx_index = 0
    doc_offset = 0
    sample_idx[sample_index][0] = doc_idx_index
    sample_idx[sample_index][1] = doc_offset
    sample_index += 1
    while sample_index <= num_samples:
        remaining = seq_length + 1
        while remaining != 0:
            doc_id = doc_idx[doc_idx_index]
            doc_length = int(sizes[doc_id]) - doc_offset
            remaining -= doc_length
            if remaining <= 0:
                doc_offset += remaining + doc_length - 1
                remaining = 0
            else:
                doc_idx_index += 1
                doc_offset = 0
        sample_idx[sample_index][0] = doc_idx_index
        sample_idx[sample_index][1] = doc_offset
        sample_index += 1
    return sample_idx


def build_shuffle_idx(size, np_rng):
    dtype_ = np.uint32
    if size >= (np.iinfo(np.uint32).max - 1):
        dtype_ = np.int64
    shuffle_idx = np.arange(start=0, stop=size, step=1, dtype=dtype_)
    np_rng.shuffle(shuffle_idx)
    return shuffle_idx


def index_case(name, sizes, seq_length, num_samples, seed):
    sizes = np.asarray(sizes, dtype=np.int32)
    documents = np.arange(len(sizes), dtype=np.int32)
    tpe = int(np.sum(sizes[documents]))
    epochs = num_epochs(tpe, seq_length, num_samples)
    np_rng = np.random.RandomState(seed=seed)
    doc_idx = build_doc_idx(documents, epochs, np_rng)
    sample_idx = build_sample_idx(sizes, doc_idx, seq_length, epochs, tpe)
    shuffle_idx = build_shuffle_idx(sample_idx.shape[0] - 1, np_rng)
    flat = sample_idx.reshape(-1)
    n = sample_idx.shape[0] - 1
    return {
        "name": name,
        "seed": int(seed),
        "seq_len": int(seq_length),
        "num_samples": int(num_samples),
        "sizes": [int(s) for s in sizes],
        "tokens_per_epoch": tpe,
        "epochs": int(epochs),
        "n": int(n),
        "len": int(min(shuffle_idx.shape[0] - 1, n)),
        "doc_idx_prefix": [int(v) for v in doc_idx[:PREFIX]],
        "doc_idx_sha256": digest(doc_idx, np.int32),
        "sample_idx_prefix": [int(v) for v in flat[:2 * PREFIX]],
        "sample_idx_sha256": digest(flat, np.int32),
        "shuffle_idx_prefix": [int(v) for v in shuffle_idx[:PREFIX]],
        "shuffle_idx_sha256": digest(shuffle_idx, np.uint32),
    }


def normalized_weights_and_num_samples(weights, num_samples):
    # data_utils.get_normalized_weights_and_num_samples (plain Python floats).
    weight_sum = 0.0
    for w in weights:  # left-to-right, as sum() before Python 3.12
        weight_sum += w
    weights = [w / weight_sum for w in weights]
    counts = [int(math.ceil(num_samples * w * 1.005)) for w in weights]
    return weights, counts


def build_blending_indices(weights, size):
    # helpers.cpp build_blending_indices, transcribed.
    current = [0] * len(weights)
    dataset_index = []
    dataset_sample_index = []
    for sample_idx in range(size):
        sdouble = max(float(sample_idx), 1.0)
        max_error_index = 0
        max_error = weights[0] * sdouble - float(current[0])
        for d in range(1, len(weights)):
            error = weights[d] * sdouble - float(current[d])
            if error > max_error:
                max_error = error
                max_error_index = d
        dataset_index.append(max_error_index)
        dataset_sample_index.append(current[max_error_index])
        current[max_error_index] += 1
    return dataset_index, dataset_sample_index


def blend_case(name, raw_weights, num_samples, size):
    w1, counts = normalized_weights_and_num_samples(raw_weights, num_samples)
    # BlendableDataset: np.array(weights, float64) / np.sum(weights)
    w2 = np.array(w1, dtype=np.float64)
    w2 /= np.sum(w2)
    di, si = build_blending_indices([float(x) for x in w2], size)
    return {
        "name": name,
        "weights": [float(w) for w in raw_weights],
        "num_samples": int(num_samples),
        "size": int(size),
        "normalized": [float(w) for w in w1],
        "counts": counts,
        "blend_weights": [float(w) for w in w2],
        "dataset_index_prefix": di[:PREFIX],
        "dataset_index_sha256": digest(di, np.uint8),
        "sample_index_prefix": si[:PREFIX],
        "sample_index_sha256": digest(si, np.int64),
    }


def rng_case(seed):
    rs = np.random.RandomState(seed)
    raw = np.frombuffer(rs.bytes(4 * 1000), dtype="<u4")
    shuffles = []
    for n in [1, 2, 3, 5, 17, 100, 1000, 65537]:
        a = np.arange(n, dtype=np.uint32)
        rs.shuffle(a)
        shuffles.append({"n": n, "prefix": [int(v) for v in a[:PREFIX]],
                         "sha256": digest(a, np.uint32)})
    # Masked rejection with 64-bit draws (the path shuffle takes for huge n).
    intervals = []
    for mx in [0, 1, 6, 2**32 - 1, 2**32, 2**33 + 12345, 2**63 + 7, 2**64 - 1]:
        v = rs.randint(0, mx + 1, size=20, dtype=np.uint64) if mx < 2**64 - 1 else \
            rs.randint(0, 2**64, size=20, dtype=np.uint64)
        intervals.append({"max": str(mx), "values": [str(int(x)) for x in v]})
    after = np.frombuffer(rs.bytes(4 * 8), dtype="<u4")
    return {
        "seed": int(seed),
        "raw_prefix": [int(v) for v in raw[:PREFIX]],
        "raw_sha256": digest(raw, np.uint32),
        "raw_count": int(raw.shape[0]),
        "shuffles": shuffles,
        "intervals": intervals,
        "after": [int(v) for v in after],
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out, exist_ok=True)
    gen = np.random.RandomState(20240601)  # only to invent document sizes

    cases = []
    s = gen.randint(1, 41, size=50)
    cases.append(index_case("random_L8_one_epoch", s, 8, (int(s.sum()) - 1) // 8, 1234))
    s = gen.randint(1, 200, size=120)
    cases.append(index_case("two_epochs_L31", s, 31, (int(s.sum()) - 1) // 31 + 5, 0))
    s = gen.randint(1, 3001, size=200)
    cases.append(index_case("L2048_three_epochs", s, 2048, 3 * int(s.sum()) // 2048 - 3, 42))
    cases.append(index_case("single_huge_doc", [50000], 8, 100, 2**31 - 1))
    s = gen.randint(1, 11, size=300)
    cases.append(index_case("docs_shorter_than_L", s, 64, (int(s.sum()) - 1) // 64 + 1, 1234))
    s = gen.randint(0, 6, size=400)
    cases.append(index_case("zero_and_tiny_docs_max_seed", s, 7, 2 * int(s.sum()) // 7, 2**32 - 1))
    s = gen.randint(500, 1501, size=2000)
    cases.append(index_case("L2048_2000docs", s, 2048, 500, 7))
    cases.append(index_case("exact_fit", [9, 8, 8], 8, 3, 5))
    s = gen.randint(1, 50, size=30)
    cases.append(index_case("many_epochs", s, 16, 20 * int(s.sum()) // 16, 99))
    with open(os.path.join(out, "neox_index_golden.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=1, sort_keys=True)
        f.write("\n")

    blends = [
        blend_case("two_equal", [1.0, 1.0], 1000, 2010),
        blend_case("three_uneven", [0.3, 0.2, 0.5], 777, 800),
        blend_case("ints", [3, 1, 2], 5000, 5025),
        blend_case("ten_datasets", [0.1, 0.07, 0.23, 0.05, 0.11, 0.13, 0.02, 0.09, 0.12, 0.08], 3000, 3100),
        blend_case("single", [2.5], 10, 11),
        blend_case("tiny_weight", [1.0, 1e-3], 20000, 20100),
    ]
    with open(os.path.join(out, "neox_blend_golden.json"), "w") as f:
        json.dump({"cases": blends}, f, indent=1, sort_keys=True)
        f.write("\n")

    rngs = [rng_case(s) for s in [0, 1, 42, 1234, 5489, 2**31 - 1, 2**32 - 1]]
    with open(os.path.join(out, "neox_rng_golden.json"), "w") as f:
        json.dump({"cases": rngs}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
