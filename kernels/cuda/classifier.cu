// The classifier's row kernel: softmax, cross-entropy and dlogits in place, one
// block per row of the logits chunk (the matmuls around it are cuBLAS's).
#include "common.cuh"

// For row r of the chunk (logits[r·Vp .. r·Vp+V), as stored in T): losses[r] =
// log Σexp(l-max) - (l[t]-max), finite when p[t] underflows (0 for t < 0); with
// grads, the row becomes dlogits = (softmax - onehot(t))·dloss, rounded to T (0
// for an ignored row).
template <typename T> __device__ void classifier_rows(T* logits, float* losses, const int* targets, float dloss,
                                                      int V, int Vp, int grads) {
    __shared__ float sh[WARP];
    int r = blockIdx.x;
    T* l = logits + (long long)r * Vp;
    int t = targets[r];
    if (t < 0) {
        if (threadIdx.x == 0) losses[r] = 0.0f;
        if (grads)
            for (int j = threadIdx.x; j < V; j += blockDim.x) l[j] = store<T>(0.0f);
        return;
    }
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < V; j += blockDim.x) mx = fmaxf(mx, load(l[j]));
    mx = block_max(mx, sh);
    float s = 0.0f;
    for (int j = threadIdx.x; j < V; j += blockDim.x) s += expf(load(l[j]) - mx);
    s = block_sum(s, sh);
    float lt = load(l[t]);
    __syncthreads(); // every thread has read l[t] before any overwrites it
    if (threadIdx.x == 0) losses[r] = logf(s) - (lt - mx);
    if (!grads) return;
    float k = dloss / s;
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float g = expf(load(l[j]) - mx) * k;
        if (j == t) g -= dloss;
        l[j] = store<T>(g);
    }
}

#define CLASSIFIER(S, T)                                                                                           \
    extern "C" __global__ void classifier_rows_##S(T* logits, float* losses, const int* targets, float dloss,      \
                                                   int V, int Vp, int grads) {                                     \
        classifier_rows(logits, losses, targets, dloss, V, Vp, grads);                                             \
    }
DTYPES(CLASSIFIER)
