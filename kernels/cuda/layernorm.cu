// LayerNorm forward (alone and fused with the residual add before it) and
// backward (eps 1e-5), one warp per row.
#include "common.cuh"

// The row statistics of x (C values): mean first, then Σd and Σd² of d = x - mean,
// the mean corrected by Σd/C and the variance Σd²/C - (Σd/C)², as the CPU backend
// does (no cancellation for a row far from zero).
template <typename T> __device__ void row_stats(const T* x, int C, int lane, float* mu, float* rs) {
    float s = 0.0f;
    for (int c = lane; c < C; c += WARP) s += load(x[c]);
    float m = warp_sum(s) / C;
    float sd = 0.0f, sd2 = 0.0f;
    for (int c = lane; c < C; c += WARP) {
        float d = load(x[c]) - m;
        sd += d;
        sd2 += d * d;
    }
    sd = warp_sum(sd) / C;
    sd2 = warp_sum(sd2) / C;
    *mu = m + sd;
    float var = fmaxf(sd2 - sd * sd, 0.0f);
    *rs = 1.0f / sqrtf(var + 1e-5f);
}

template <typename T> __device__ void normalize_row(T* o, const T* x, const T* weight, const T* bias, int C, int lane,
                                                    float mu, float rs) {
    for (int c = lane; c < C; c += WARP) {
        float v = (load(x[c]) - mu) * rs * load(weight[c]);
        if (bias) v += load(bias[c]);
        o[c] = store<T>(v);
    }
}

// bias may be null.
template <typename T> __device__ void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const T* weight,
                                                        const T* bias, int N, int C) {
    int lane = threadIdx.x % WARP;
    int row = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    if (row >= N) return;
    const T* x = inp + (long long)row * C;
    float mu, rs;
    row_stats(x, C, lane, &mu, &rs);
    normalize_row(out + (long long)row * C, x, weight, bias, C, lane, mu, rs);
    if (lane == 0) {
        mean[row] = mu;
        rstd[row] = rs;
    }
}

// res = a + b (rounded to T), then the layernorm of res as stored. Each lane
// reads back only what it wrote itself, so no barrier is needed; res may be a.
template <typename T> __device__ void residual_layernorm_forward(T* res, T* out, float* mean, float* rstd, const T* a,
                                                                 const T* b, const T* weight, const T* bias, int N,
                                                                 int C) {
    int lane = threadIdx.x % WARP;
    int row = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    if (row >= N) return;
    long long off = (long long)row * C;
    T* x = res + off;
    for (int c = lane; c < C; c += WARP) x[c] = store<T>(load(a[off + c]) + load(b[off + c]));
    float mu, rs;
    row_stats(x, C, lane, &mu, &rs);
    normalize_row(out + off, x, weight, bias, C, lane, mu, rs);
    if (lane == 0) {
        mean[row] = mu;
        rstd[row] = rs;
    }
}

// Backward, dinp part: dinp = dres + rstd·(dnorm - mean(dnorm) - norm·mean(dnorm·norm))
// with dnorm = dout·weight, norm = (x-mean)·rstd. dres may be null (zero) or dinp.
template <typename T> __device__ void layernorm_backward_dinp(T* dinp, const T* dres, const T* dout, const T* inp,
                                                              const T* weight, const float* mean, const float* rstd,
                                                              int N, int C) {
    int lane = threadIdx.x % WARP;
    int row = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    if (row >= N) return;
    long long off = (long long)row * C;
    float mu = mean[row], rs = rstd[row];
    float a = 0.0f, b = 0.0f;
    for (int c = lane; c < C; c += WARP) {
        float norm = (load(inp[off + c]) - mu) * rs;
        float dn = load(dout[off + c]) * load(weight[c]);
        a += dn;
        b += dn * norm;
    }
    a = warp_sum(a) / C;
    b = warp_sum(b) / C;
    for (int c = lane; c < C; c += WARP) {
        float norm = (load(inp[off + c]) - mu) * rs;
        float dn = load(dout[off + c]) * load(weight[c]);
        float base = dres ? load(dres[off + c]) : 0.0f;
        dinp[off + c] = store<T>(base + (dn - a - norm * b) * rs);
    }
}

// Backward, weight and bias part: partial sums over a chunk of rows per block row
// (blockIdx.y), finished by reduce_partials_add in chunk order (deterministic).
// pw[chunk,c] = Σ dout·norm, pb[chunk,c] = Σ dout (pb may be null).
// Unrolled by 16 (loads in flight before their adds, rows in order), as
// column_partials is.
template <typename T> __device__ void layernorm_backward_partials(float* pw, float* pb, const T* dout, const T* inp,
                                                                  const float* mean, const float* rstd, int N, int C,
                                                                  int rowsPerChunk) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int chunk = blockIdx.y;
    if (c >= C) return;
    int lo = chunk * rowsPerChunk, hi = min(N, lo + rowsPerChunk);
    float sw = 0.0f, sb = 0.0f;
#pragma unroll 16
    for (int r = lo; r < hi; r++) {
        long long i = (long long)r * C + c;
        float d = load(dout[i]);
        sw += d * (load(inp[i]) - mean[r]) * rstd[r];
        sb += d;
    }
    pw[(long long)chunk * C + c] = sw;
    if (pb) pb[(long long)chunk * C + c] = sb;
}

#define LAYERNORM(S, T)                                                                                            \
    extern "C" __global__ void layernorm_forward_##S(T* out, float* mean, float* rstd, const T* inp,               \
                                                     const T* weight, const T* bias, int N, int C) {               \
        layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);                                               \
    }                                                                                                              \
    extern "C" __global__ void residual_layernorm_forward_##S(T* res, T* out, float* mean, float* rstd,            \
                                                              const T* a, const T* b, const T* weight,             \
                                                              const T* bias, int N, int C) {                       \
        residual_layernorm_forward(res, out, mean, rstd, a, b, weight, bias, N, C);                                \
    }                                                                                                              \
    extern "C" __global__ void layernorm_backward_dinp_##S(T* dinp, const T* dres, const T* dout, const T* inp,    \
                                                           const T* weight, const float* mean, const float* rstd,  \
                                                           int N, int C) {                                         \
        layernorm_backward_dinp(dinp, dres, dout, inp, weight, mean, rstd, N, C);                                  \
    }                                                                                                              \
    extern "C" __global__ void layernorm_backward_partials_##S(float* pw, float* pb, const T* dout, const T* inp,  \
                                                               const float* mean, const float* rstd, int N, int C, \
                                                               int rowsPerChunk) {                                 \
        layernorm_backward_partials(pw, pb, dout, inp, mean, rstd, N, C, rowsPerChunk);                            \
    }
DTYPES(LAYERNORM)
