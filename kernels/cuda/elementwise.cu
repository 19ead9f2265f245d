// Elementwise ops: GELU, residual, dropout, bias broadcast, scale.
#include "common.cuh"

#define GELU_SCALE 0.7978845608028654f // sqrt(2/pi)

// gelu(x) = x/(1+exp(-2u)), u = √(2/π)(x+0.044715x³): the CPU backend's form of
// 0.5x(1+tanh u), exact in both limits. expf, not __expf: within a few ulp of ref.
__device__ __forceinline__ float gelu_sig(float x) {
    float u = GELU_SCALE * (x + 0.044715f * x * x * x);
    return 1.0f / (1.0f + expf(-2.0f * u));
}

extern "C" __global__ void gelu_forward(float* out, const float* inp, long long n) {
    FOR_EACH(i, n) {
        float x = inp[i];
        out[i] = x * gelu_sig(x);
    }
}

// gelu'(x) = s·(1 + 2x(1-s)u'), s = 1/(1+exp(-2u)), u' = √(2/π)(1+3·0.044715x²).
extern "C" __global__ void gelu_backward(float* dinp, const float* inp, const float* dout, long long n) {
    FOR_EACH(i, n) {
        float x = inp[i];
        float s = gelu_sig(x);
        float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += s * (1.0f + 2.0f * x * (1.0f - s) * du) * dout[i];
    }
}

extern "C" __global__ void residual_forward(float* out, const float* a, const float* b, long long n) {
    FOR_EACH(i, n) out[i] = a[i] + b[i];
}

extern "C" __global__ void residual_backward(float* da, float* db, const float* dout, long long n) {
    FOR_EACH(i, n) {
        float d = dout[i];
        da[i] += d;
        db[i] += d;
    }
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

// out = inp·scale where the draw ≥ threshold, else 0 (threshold 0 and scale 1 copy).
extern "C" __global__ void dropout_forward(float* out, const float* inp, unsigned long long seed,
                                           unsigned int threshold, float scale, long long n) {
    FOR_EACH(i, n) out[i] = dropout_bits(seed, i) >= threshold ? inp[i] * scale : 0.0f;
}

extern "C" __global__ void dropout_backward(float* dinp, const float* dout, unsigned long long seed,
                                            unsigned int threshold, float scale, long long n) {
    FOR_EACH(i, n) {
        if (dropout_bits(seed, i) >= threshold) dinp[i] += dout[i] * scale;
    }
}

// out[r,:] = bias for each of the N rows (the matmul forward then adds into it).
extern "C" __global__ void bias_fill(float* out, const float* bias, int N, int OC) {
    long long n = (long long)N * OC;
    FOR_EACH(i, n) out[i] = bias[i % OC];
}

extern "C" __global__ void scale_inplace(float* x, float s, long long n) {
    FOR_EACH(i, n) x[i] *= s;
}
