#!/usr/bin/env python3
"""Times libdeflate (C, through ctypes) decompressing a gzip file: the peer of
BenchmarkDecompress's gzip decoders (prep/decompress_test.go).

    libdeflate_gunzip.py FILE.gz

Decodes the file once untimed (the output buffer's pages faulted in) and once timed, the
whole member in one call (libdeflate has no streaming interface), and prints
"<bytes out> <CPU seconds> <wall seconds>". Needs libdeflate.so.0 (Debian: libdeflate0);
exits 3 without it.
"""
import ctypes
import ctypes.util
import struct
import sys
import time


def main():
    name = ctypes.util.find_library("deflate") or "libdeflate.so.0"
    try:
        lib = ctypes.CDLL(name)
    except OSError as e:
        print(f"libdeflate_gunzip.py: {e} (Debian: apt-get install libdeflate0)", file=sys.stderr)
        sys.exit(3)
    lib.libdeflate_alloc_decompressor.restype = ctypes.c_void_p
    lib.libdeflate_gzip_decompress.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
        ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
    comp = open(sys.argv[1], "rb").read()
    size = struct.unpack("<I", comp[-4:])[0]  # ISIZE: the length mod 2^32
    out = ctypes.create_string_buffer(size + 1)
    got = ctypes.c_size_t()
    d = lib.libdeflate_alloc_decompressor()
    for timed in (False, True):
        c0, w0 = time.process_time(), time.perf_counter()
        rc = lib.libdeflate_gzip_decompress(d, comp, len(comp), out, len(out), ctypes.byref(got))
        c1, w1 = time.process_time(), time.perf_counter()
        if rc != 0:
            print(f"libdeflate_gunzip.py: {sys.argv[1]}: libdeflate result {rc}", file=sys.stderr)
            sys.exit(1)
    print(got.value, c1 - c0, w1 - w0)


main()
