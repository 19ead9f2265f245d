// Softmax + cross-entropy over the first V of Vp columns, one block per row.
#include "common.cuh"

// probs = softmax(logits[:V]) (columns V..Vp-1 get 0); loss = log Σexp(l-max) -
// (l[t]-max), finite when p[t] underflows; 0 for target < 0.
extern "C" __global__ void crossentropy_forward(float* losses, float* probs, const float* logits,
                                                const int* targets, int N, int V, int Vp) {
    __shared__ float sh[WARP];
    int row = blockIdx.x;
    if (row >= N) return;
    const float* l = logits + (long long)row * Vp;
    float* p = probs + (long long)row * Vp;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < V; j += blockDim.x) mx = fmaxf(mx, l[j]);
    mx = block_max(mx, sh);
    float s = 0.0f;
    for (int j = threadIdx.x; j < V; j += blockDim.x) s += expf(l[j] - mx);
    s = block_sum(s, sh);
    float inv = 1.0f / s;
    for (int j = threadIdx.x; j < Vp; j += blockDim.x) p[j] = j < V ? expf(l[j] - mx) * inv : 0.0f;
    if (threadIdx.x == 0) {
        int t = targets[row];
        losses[row] = t >= 0 ? logf(s) - (l[t] - mx) : 0.0f;
    }
}

// dlogits[:V] += (probs - onehot(t))·dloss on rows with a target.
extern "C" __global__ void crossentropy_backward(float* dlogits, const float* probs, const int* targets,
                                                 float dloss, int N, int V, int Vp) {
    int row = blockIdx.x;
    if (row >= N) return;
    int t = targets[row];
    if (t < 0) return;
    const float* p = probs + (long long)row * Vp;
    float* d = dlogits + (long long)row * Vp;
    for (int j = threadIdx.x; j < V; j += blockDim.x) d[j] += (p[j] - (j == t ? 1.0f : 0.0f)) * dloss;
}
