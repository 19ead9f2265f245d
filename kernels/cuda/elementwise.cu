// Elementwise ops: the bias broadcast before a matmul, the GELU after it and its
// backward, dropout, dtype conversion.
#include "common.cuh"

// out[r,:] = bias for each of the N rows (the matmul then adds the product to it
// with beta = 1, so the bias is added in float32 before the one rounding).
template <typename T> __device__ void bias_fill(T* out, const T* bias, int N, int OC) {
    long long n = (long long)N * OC;
    FOR_EACH(i, n) out[i] = bias[i % OC];
}

// out = gelu(pre): the GELU half of the fused bias + GELU epilogue.
template <typename T> __device__ void gelu_forward(T* out, const T* pre, long long n) {
    FOR_EACH(i, n) {
        float x = load(pre[i]);
        out[i] = store<T>(x * gelu_sig(x));
    }
}

// d = d·gelu'(pre) in place: the GELU's backward fused onto the input gradient
// of the matmul that read the GELU's output.
template <typename T> __device__ void gelu_backward_inplace(T* d, const T* pre, long long n) {
    FOR_EACH(i, n) d[i] = store<T>(load(d[i]) * gelu_grad(load(pre[i])));
}

// The dropout draw, a transcription of kernels.DropoutBits: the (i+1)-th output of
// a splitmix64 stream seeded with seed, top 24 bits.
__device__ __forceinline__ unsigned int dropout_bits(unsigned long long seed, long long i) {
    unsigned long long z = seed + ((unsigned long long)i + 1ull) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (unsigned int)(z >> 40);
}

// out = inp·scale where the draw ≥ threshold, else 0 (threshold 0 and scale 1
// copy). Forward and backward alike; out may be inp.
template <typename T> __device__ void dropout(T* out, const T* inp, unsigned long long seed, unsigned int threshold,
                                              float scale, long long n) {
    FOR_EACH(i, n) out[i] = dropout_bits(seed, i) >= threshold ? store<T>(load(inp[i]) * scale) : store<T>(0.0f);
}

#define ELEMENTWISE(S, T)                                                                                          \
    extern "C" __global__ void bias_fill_##S(T* out, const T* bias, int N, int OC) { bias_fill(out, bias, N, OC); } \
    extern "C" __global__ void gelu_forward_##S(T* out, const T* pre, long long n) { gelu_forward(out, pre, n); }   \
    extern "C" __global__ void gelu_backward_inplace_##S(T* d, const T* pre, long long n) {                        \
        gelu_backward_inplace(d, pre, n);                                                                          \
    }                                                                                                              \
    extern "C" __global__ void dropout_##S(T* out, const T* inp, unsigned long long seed, unsigned int threshold,   \
                                           float scale, long long n) {                                             \
        dropout(out, inp, seed, threshold, scale, n);                                                              \
    }
DTYPES(ELEMENTWISE)

// dst = src rounded to dst's type.
template <typename D, typename S> __device__ void convert(D* dst, const S* src, long long n) {
    FOR_EACH(i, n) dst[i] = store<D>(load(src[i]));
}

#define CONVERT_TO(SS, ST, DS, DT)                                                                                 \
    extern "C" __global__ void convert_##SS##_##DS(DT* dst, const ST* src, long long n) { convert(dst, src, n); }
#define CONVERT_FROM(SS, ST) CONVERT_TO(SS, ST, f32, float) CONVERT_TO(SS, ST, bf16, bf16) CONVERT_TO(SS, ST, f16, f16)
CONVERT_FROM(f32, float)
CONVERT_FROM(bf16, bf16)
CONVERT_FROM(f16, f16)
