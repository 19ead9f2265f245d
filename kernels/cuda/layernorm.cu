// LayerNorm forward and backward (eps 1e-5), one warp per row.
#include "common.cuh"

// Forward: mean first, then Σd and Σd² of d = x - mean, the mean corrected by Σd/C
// and the variance Σd²/C - (Σd/C)², as the CPU backend does (no cancellation for a
// row far from zero). bias may be null.
extern "C" __global__ void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                             const float* weight, const float* bias, int N, int C) {
    int lane = threadIdx.x % WARP;
    int row = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    if (row >= N) return;
    const float* x = inp + (long long)row * C;
    float s = 0.0f;
    for (int c = lane; c < C; c += WARP) s += x[c];
    float m = warp_sum(s) / C;
    float sd = 0.0f, sd2 = 0.0f;
    for (int c = lane; c < C; c += WARP) {
        float d = x[c] - m;
        sd += d;
        sd2 += d * d;
    }
    sd = warp_sum(sd) / C;
    sd2 = warp_sum(sd2) / C;
    float mu = m + sd;
    float var = fmaxf(sd2 - sd * sd, 0.0f);
    float rs = 1.0f / sqrtf(var + 1e-5f);
    float* o = out + (long long)row * C;
    for (int c = lane; c < C; c += WARP) {
        float v = (x[c] - mu) * rs * weight[c];
        if (bias) v += bias[c];
        o[c] = v;
    }
    if (lane == 0) {
        mean[row] = mu;
        rstd[row] = rs;
    }
}

// Backward, dinp part: dinp += rstd·(dnorm - mean(dnorm) - norm·mean(dnorm·norm))
// with dnorm = dout·weight, norm = (x-mean)·rstd.
extern "C" __global__ void layernorm_backward_dinp(float* dinp, const float* dout, const float* inp,
                                                   const float* weight, const float* mean, const float* rstd,
                                                   int N, int C) {
    int lane = threadIdx.x % WARP;
    int row = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    if (row >= N) return;
    long long off = (long long)row * C;
    float mu = mean[row], rs = rstd[row];
    float a = 0.0f, b = 0.0f;
    for (int c = lane; c < C; c += WARP) {
        float norm = (inp[off + c] - mu) * rs;
        float dn = dout[off + c] * weight[c];
        a += dn;
        b += dn * norm;
    }
    a = warp_sum(a) / C;
    b = warp_sum(b) / C;
    for (int c = lane; c < C; c += WARP) {
        float norm = (inp[off + c] - mu) * rs;
        float dn = dout[off + c] * weight[c];
        dinp[off + c] += (dn - a - norm * b) * rs;
    }
}

// Backward, weight and bias part: partial sums over a chunk of rows per block row
// (blockIdx.y), finished by reduce_partials_add in chunk order (deterministic).
// pw[chunk,c] = Σ dout·norm, pb[chunk,c] = Σ dout (pb may be null).
extern "C" __global__ void layernorm_backward_partials(float* pw, float* pb, const float* dout, const float* inp,
                                                       const float* mean, const float* rstd, int N, int C,
                                                       int rowsPerChunk) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int chunk = blockIdx.y;
    if (c >= C) return;
    int lo = chunk * rowsPerChunk, hi = min(N, lo + rowsPerChunk);
    float sw = 0.0f, sb = 0.0f;
    for (int r = lo; r < hi; r++) {
        long long i = (long long)r * C + c;
        float d = dout[i];
        sw += d * (inp[i] - mean[r]) * rstd[r];
        sb += d;
    }
    pw[(long long)chunk * C + c] = sw;
    if (pb) pb[(long long)chunk * C + c] = sb;
}
