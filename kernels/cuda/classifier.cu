// The classifier's row kernel: softmax, cross-entropy and dlogits in place, one
// block per row of the logits chunk (the matmuls around it are cuBLAS's).
#include "common.cuh"

// PACK(T) elements of T fill 16 bytes: one vector load or store.
#define PACK(T) (16 / (int)sizeof(T))

template <typename T> struct alignas(16) Pack {
    T v[PACK(T)];
};

template <typename T> __device__ __forceinline__ Pack<T> load_pack(const T* p) {
    Pack<T> r;
    *reinterpret_cast<uint4*>(&r) = *reinterpret_cast<const uint4*>(p);
    return r;
}

template <typename T> __device__ __forceinline__ void store_pack(T* p, const Pack<T>& r) {
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(&r);
}

// online_add adds x to a running softmax denominator: s = Σexp(l - m) over the
// values seen, m their max (-inf and s 0 before the first finite one).
__device__ __forceinline__ void online_add(float& m, float& s, float x) {
    if (x > m) {
        s = s * expf(m - x) + 1.0f;
        m = x;
    } else if (x > -INFINITY) {
        s += expf(x - m);
    }
}

// online_merge merges the running pair (m2, s2) into (m, s).
__device__ __forceinline__ void online_merge(float& m, float& s, float m2, float s2) {
    float mx = fmaxf(m, m2);
    if (mx == -INFINITY) return;
    s = s * expf(m - mx) + s2 * expf(m2 - mx);
    m = mx;
}

// block_online merges every thread's (m, s) into the block's, returned to every
// thread. shared holds 2·32 floats.
__device__ __forceinline__ void block_online(float& m, float& s, float* shared) {
    int lane = threadIdx.x % WARP, w = threadIdx.x / WARP, nw = blockDim.x / WARP;
    for (int o = WARP / 2; o > 0; o >>= 1)
        online_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    __syncthreads();
    if (lane == 0) {
        shared[w] = m;
        shared[WARP + w] = s;
    }
    __syncthreads();
    m = lane < nw ? shared[lane] : -INFINITY;
    s = lane < nw ? shared[WARP + lane] : 0.0f;
    for (int o = WARP / 2; o > 0; o >>= 1)
        online_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
}

// For row r of the chunk (logits[r·Vp .. r·Vp+V), as stored in T): losses[r] =
// log Σexp(l-max) - (l[t]-max), finite when p[t] underflows (0 for t < 0); with
// grads, the row becomes dlogits = (softmax - onehot(t))·dloss, rounded to T (0
// for an ignored row), and its padded columns [V, Vp) 0: the GEMMs around this
// kernel run over all Vp columns (cuBLAS is several times faster with the vocab
// padded to a multiple of 64 than at GPT-2's odd 50257), and these zeros keep
// the padding out of dinp and dweight.
//
// Two passes over the row, memory-bound: the max and the denominator together
// (the online softmax: the sum rescaled when the max grows), then the gradients.
// Where rows start on 16 bytes (Vp a multiple of PACK(T) and an aligned chunk),
// each thread moves 16 bytes at a time; the columns past the last whole pack
// below V, and every column when rows are not aligned, go one at a time.
template <typename T> __device__ void classifier_rows(T* logits, float* losses, const int* targets, float dloss,
                                                      int V, int Vp, int grads) {
    __shared__ float sh[2 * WARP];
    const int P = PACK(T);
    int r = blockIdx.x;
    T* l = logits + (long long)r * Vp;
    bool packed = Vp % P == 0 && ((unsigned long long)logits & 15) == 0;
    int Vv = packed ? V / P * P : 0;    // [0, Vv) in packs; [Vv, V) one at a time
    int Vpv = packed ? Vp / P * P : 0;  // with grads, the writes: [0, Vpv) in packs
    int t = targets[r];
    if (t < 0) {
        if (threadIdx.x == 0) losses[r] = 0.0f;
        if (grads) {
            Pack<T> z;
            for (int i = 0; i < P; i++) z.v[i] = store<T>(0.0f);
            for (int j = threadIdx.x * P; j < Vpv; j += blockDim.x * P) store_pack(l + j, z);
            for (int j = Vpv + threadIdx.x; j < Vp; j += blockDim.x) l[j] = store<T>(0.0f);
        }
        return;
    }
    float m = -INFINITY, s = 0.0f;
    for (int j = threadIdx.x * P; j < Vv; j += blockDim.x * P) {
        Pack<T> x = load_pack(l + j);
        for (int i = 0; i < P; i++) online_add(m, s, load(x.v[i]));
    }
    for (int j = Vv + threadIdx.x; j < V; j += blockDim.x) online_add(m, s, load(l[j]));
    block_online(m, s, sh);
    float lt = load(l[t]);
    __syncthreads(); // every thread has read l[t] before any overwrites it
    if (threadIdx.x == 0) losses[r] = logf(s) - (lt - m);
    if (!grads) return;
    float k = dloss / s;
    for (int j = threadIdx.x * P; j < Vpv; j += blockDim.x * P) {
        Pack<T> x = load_pack(l + j);
        for (int i = 0; i < P; i++) {
            float g = 0.0f;
            if (j + i < V) {
                g = expf(load(x.v[i]) - m) * k;
                if (j + i == t) g -= dloss;
            }
            x.v[i] = store<T>(g);
        }
        store_pack(l + j, x);
    }
    for (int j = Vpv + threadIdx.x; j < Vp; j += blockDim.x) {
        float g = 0.0f;
        if (j < V) {
            g = expf(load(l[j]) - m) * k;
            if (j == t) g -= dloss;
        }
        l[j] = store<T>(g);
    }
}

// Launched with 1024 threads a block (classifier.go): the bound keeps the JIT to the 64
// registers a thread that many threads may have (else CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES).
#define CLASSIFIER(S, T)                                                                                           \
    extern "C" __global__ void __launch_bounds__(1024)                                                             \
        classifier_rows_##S(T* logits, float* losses, const int* targets, float dloss, int V, int Vp, int grads) { \
        classifier_rows(logits, losses, targets, dloss, V, Vp, grads);                                             \
    }
DTYPES(CLASSIFIER)
