// Package safetensors reads and writes the Hugging Face safetensors format: an 8-byte
// little-endian header length N, N bytes of JSON header, then the raw tensor data.
//
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the first data byte) and may hold a "__metadata__" object of
// string values. Write produces what the Hugging Face library writes for float32
// tensors: tensors laid out sorted by name, "__metadata__" first, the header padded with
// spaces so the data starts 8-byte aligned. Read accepts any conforming file and
// converts F32, F16, BF16 and F64 data to float32.
//
// It is hand-written because the format is small (one JSON header and raw little-endian
// arrays), because Go has no official implementation, and because the reader has to be
// strict (offsets contiguous and covering the data exactly, sizes matching shapes, no
// duplicate names) the way the Rust reference implementation is: checkpoints and
// downloaded weights pass through it.
package safetensors
