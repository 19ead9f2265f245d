#!/usr/bin/env python3
"""Write the golden MMIDIDX shards the Go tests compare against.

This follows GPT-NeoX's MMapIndexedDatasetBuilder (megatron/data/indexed_dataset.py)
line for line, with struct/array instead of numpy and torch:

  add_item(tokens)  -> .bin += tokens as dtype; sizes.append(len(tokens))
  end_document()    -> doc_idx.append(len(sizes))
  merge_file_(p)    -> sizes.extend(p's sizes); .bin += p's .bin   (doc_idx untouched!)
  finalize(idx)     -> MMIDIDX\\0\\0 | <Q 1 | <B code | <Q len(sizes) | <Q len(doc_idx)
                       | int32 sizes | int64 pointers (exclusive cumsum * itemsize)
                       | int64 doc_idx

Run from anywhere: python3 shards/testdata/make_golden.py  (writes next to itself).
"""
import array
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# dtype name -> (NeoX code, array typecode, itemsize); indexed_dataset.py `dtypes`.
DTYPES = {"uint16": (8, "H", 2), "int32": (4, "i", 4)}
MAGIC = b"MMIDIDX\x00\x00"


def le_bytes(typecode, values):
    a = array.array(typecode, values)
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


class Builder:
    """MMapIndexedDatasetBuilder without numpy."""

    def __init__(self, out_file, dtype):
        self._data_file = open(out_file, "wb")
        self._dtype = dtype
        self._sizes = []
        self._doc_idx = [0]

    def add_item(self, tokens):
        _, tc, _ = DTYPES[self._dtype]
        self._data_file.write(le_bytes(tc, tokens))
        self._sizes.append(len(tokens))

    def end_document(self):
        self._doc_idx.append(len(self._sizes))

    def merge_file_(self, another_prefix):
        sizes, dtype = read_index(another_prefix + ".idx")
        assert dtype == self._dtype
        self._sizes.extend(sizes)
        with open(another_prefix + ".bin", "rb") as f:
            self._data_file.write(f.read())

    def finalize(self, index_file):
        self._data_file.close()
        code, _, itemsize = DTYPES[self._dtype]
        pointers, address = [], 0
        for size in self._sizes:
            pointers.append(address)
            address += size * itemsize
        with open(index_file, "wb") as f:
            f.write(MAGIC)
            f.write(struct.pack("<Q", 1))
            f.write(struct.pack("<B", code))
            f.write(struct.pack("<Q", len(self._sizes)))
            f.write(struct.pack("<Q", len(self._doc_idx)))
            f.write(le_bytes("i", self._sizes))
            f.write(le_bytes("q", pointers))
            f.write(le_bytes("q", self._doc_idx))


def read_index(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:9] == MAGIC
    (version,) = struct.unpack_from("<Q", data, 9)
    assert version == 1
    code = data[17]
    dtype = [k for k, v in DTYPES.items() if v[0] == code][0]
    (n,) = struct.unpack_from("<Q", data, 18)
    sizes = list(struct.unpack_from("<%di" % n, data, 34))
    return sizes, dtype


def build(name, dtype, docs):
    """preprocess_data.py: one add_item + end_document per document."""
    prefix = os.path.join(HERE, name)
    b = Builder(prefix + ".bin", dtype)
    for doc in docs:
        for item in doc:
            b.add_item(item)
        b.end_document()
    b.finalize(prefix + ".idx")
    return prefix


# Documents as lists of items (sequences); preprocess_data.py makes one item per doc.
U16_DOCS = [[[464, 2068, 7586, 21831, 50256]], [[]], [[0, 65535, 1, 65534, 50256]], [[11] * 7 + [50256]]]
I32_DOCS = [[[100257, 2147483647, 0, 1]], [[5]], [[]], [[199997, 100256, 65536, 65535, 7]]]
# Several sequences per document: doc_idx = [0, 2, 3, 3, 5] (one empty document).
MULTI_DOCS = [[[1, 2], [3]], [[4, 5, 6]], [], [[7], [8, 9, 10, 11]]]


def main():
    build("neox_u16", "uint16", [d[0:1] for d in U16_DOCS])
    build("neox_i32", "int32", [d[0:1] for d in I32_DOCS])
    build("neox_multi_u16", "uint16", MULTI_DOCS)
    # merge_datasets.py: an empty builder merging two shards -> doc_idx stays [0].
    part_a = build("part_a_u16", "uint16", U16_DOCS[:2])
    part_b = build("part_b_u16", "uint16", U16_DOCS[2:])
    merged = os.path.join(HERE, "neox_merged_u16")
    b = Builder(merged + ".bin", "uint16")
    b.merge_file_(part_a)
    b.merge_file_(part_b)
    b.finalize(merged + ".idx")
    for p in (part_a, part_b):
        os.remove(p + ".bin")
        os.remove(p + ".idx")


if __name__ == "__main__":
    main()
