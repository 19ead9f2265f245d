// Causal self-attention around cuBLAS batched GEMMs (llm.c's layout): qkv (B,T,3C)
// is permuted to q, k, v (B,NH,T,hs); the scores scale·q·kᵀ are a strided batched
// GEMM written straight into att (B,NH,T,T); a row softmax makes them
// probabilities in place (zeros past the diagonal); att·v is another GEMM, and the
// heads are put back side by side in out (B,T,C). The backward mirrors it.
//
// No flash-attention kernel: the Backend interface saves the (B,NH,T,T)
// probabilities for the backward, which is the memory a fused kernel exists to
// avoid, and the GEMMs run on the tensor cores.
#include "common.cuh"

// q,k,v[b,h,t,d] = qkv[b,t,{0,1,2}·C + h·hs + d].
extern "C" __global__ void attention_permute(float* q, float* k, float* v, const float* qkv, int B, int T, int NH,
                                             int hs) {
    long long n = (long long)B * NH * T * hs;
    int C = NH * hs;
    FOR_EACH(i, n) {
        int d = (int)(i % hs);
        long long r = i / hs;
        int t = (int)(r % T);
        r /= T;
        int h = (int)(r % NH);
        int b = (int)(r / NH);
        long long src = ((long long)b * T + t) * 3 * C + (long long)h * hs + d;
        q[i] = qkv[src];
        k[i] = qkv[src + C];
        v[i] = qkv[src + 2 * C];
    }
}

// dqkv[b,t,{0,1,2}·C + h·hs + d] += dq,dk,dv[b,h,t,d].
extern "C" __global__ void attention_permute_backward(float* dqkv, const float* dq, const float* dk, const float* dv,
                                                      int B, int T, int NH, int hs) {
    long long n = (long long)B * NH * T * hs;
    int C = NH * hs;
    FOR_EACH(i, n) {
        int d = (int)(i % hs);
        long long r = i / hs;
        int t = (int)(r % T);
        r /= T;
        int h = (int)(r % NH);
        int b = (int)(r / NH);
        long long dst = ((long long)b * T + t) * 3 * C + (long long)h * hs + d;
        dqkv[dst] += dq[i];
        dqkv[dst + C] += dk[i];
        dqkv[dst + 2 * C] += dv[i];
    }
}

// out[b,t,h·hs+d] = y[b,h,t,d].
extern "C" __global__ void attention_unpermute(float* out, const float* y, int B, int T, int NH, int hs) {
    long long n = (long long)B * NH * T * hs;
    int C = NH * hs;
    FOR_EACH(i, n) {
        int d = (int)(i % hs);
        long long r = i / hs;
        int t = (int)(r % T);
        r /= T;
        int h = (int)(r % NH);
        int b = (int)(r / NH);
        out[((long long)b * T + t) * C + (long long)h * hs + d] = y[i];
    }
}

// dy[b,h,t,d] = dout[b,t,h·hs+d].
extern "C" __global__ void attention_unpermute_backward(float* dy, const float* dout, int B, int T, int NH, int hs) {
    long long n = (long long)B * NH * T * hs;
    int C = NH * hs;
    FOR_EACH(i, n) {
        int d = (int)(i % hs);
        long long r = i / hs;
        int t = (int)(r % T);
        r /= T;
        int h = (int)(r % NH);
        int b = (int)(r / NH);
        dy[i] = dout[((long long)b * T + t) * C + (long long)h * hs + d];
    }
}

// In place over rows of att (rows = B·NH·T, each T long, row t of its head may see
// columns 0..t): softmax of the already scaled scores, zeros past the diagonal.
// One warp per row.
extern "C" __global__ void attention_softmax_forward(float* att, long long rows, int T) {
    int lane = threadIdx.x % WARP;
    long long row = (long long)blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    if (row >= rows) return;
    int t = (int)(row % T);
    float* a = att + row * T;
    float mx = -INFINITY;
    for (int j = lane; j <= t; j += WARP) mx = fmaxf(mx, a[j]);
    mx = warp_max(mx);
    float s = 0.0f;
    for (int j = lane; j <= t; j += WARP) s += expf(a[j] - mx);
    s = warp_sum(s);
    float inv = 1.0f / s;
    for (int j = lane; j < T; j += WARP) a[j] = j <= t ? expf(a[j] - mx) * inv : 0.0f;
}

// In place: datt ← P⊙(dP − rowsum(P⊙dP)) (the scale goes into the GEMMs after),
// zeros past the diagonal. One warp per row.
extern "C" __global__ void attention_softmax_backward(float* datt, const float* att, long long rows, int T) {
    int lane = threadIdx.x % WARP;
    long long row = (long long)blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    if (row >= rows) return;
    int t = (int)(row % T);
    float* d = datt + row * T;
    const float* p = att + row * T;
    float s = 0.0f;
    for (int j = lane; j <= t; j += WARP) s += p[j] * d[j];
    s = warp_sum(s);
    for (int j = lane; j < T; j += WARP) d[j] = j <= t ? p[j] * (d[j] - s) : 0.0f;
}
