// Column sums and global reductions with a fixed summation order (no atomics),
// so results never depend on scheduling.
#include "common.cuh"

// partial[chunk,c] = Σ src[r,c] over the rows r of the chunk (matmul bias gradients).
template <typename T> __device__ void column_partials(float* partial, const T* src, int N, int OC, int rowsPerChunk) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int chunk = blockIdx.y;
    if (c >= OC) return;
    int lo = chunk * rowsPerChunk, hi = min(N, lo + rowsPerChunk);
    float s = 0.0f;
    for (int r = lo; r < hi; r++) s += load(src[(long long)r * OC + c]);
    partial[(long long)chunk * OC + c] = s;
}

#define COLUMNS(S, T)                                                                                              \
    extern "C" __global__ void column_partials_##S(float* partial, const T* src, int N, int OC, int rowsPerChunk) { \
        column_partials(partial, src, N, OC, rowsPerChunk);                                                        \
    }
DTYPES(COLUMNS)

// dst[c] += Σ_k partial[k,c], k in order.
extern "C" __global__ void reduce_partials_add(float* dst, const float* partial, int nchunks, int n) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n) return;
    float s = 0.0f;
    for (int k = 0; k < nchunks; k++) s += partial[(long long)k * n + c];
    dst[c] += s;
}

// partial[blockIdx.y·gridDim.x + blockIdx.x] = Σx² over chunk blockIdx.x of block
// blockIdx.y of x (blocks of `block` elements, chunks of `chunk`) in float64, with
// a fixed thread layout (blockDim.x = 256); sum_partials_d adds the chunks in
// order.
template <typename T> __device__ void sum_squares_chunks(double* partial, const T* x, long long block, int chunk) {
    __shared__ double sh[WARP];
    long long base = (long long)blockIdx.y * block;
    long long lo = (long long)blockIdx.x * chunk, hi = lo + chunk < block ? lo + chunk : block;
    double s = 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        double v = load(x[base + i]);
        s += v * v;
    }
    s = warp_sum_d(s);
    int lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
    if (lane == 0) sh[w] = s;
    __syncthreads();
    if (w == 0) {
        s = lane < (int)(blockDim.x / WARP) ? sh[lane] : 0.0;
        s = warp_sum_d(s);
        if (lane == 0) partial[(long long)blockIdx.y * gridDim.x + blockIdx.x] = s;
    }
}

#define SUMSQ(S, T)                                                                                                \
    extern "C" __global__ void sum_squares_chunks_##S(double* partial, const T* x, long long block, int chunk) {   \
        sum_squares_chunks(partial, x, block, chunk);                                                              \
    }
DTYPES(SUMSQ)

// out[b] = Σ_k partial[b·per + k], k in order: one thread per output.
extern "C" __global__ void sum_partials_d(double* out, const double* partial, int per, int n) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n) return;
    double s = 0.0;
    for (int k = 0; k < per; k++) s += partial[(long long)b * per + k];
    out[b] = s;
}

// acc[0] += Σ losses[i] in row order, in float64 (the classifier's loss sum; one
// thread, as the CPU adds them).
extern "C" __global__ void loss_sum(double* acc, const float* losses, int N) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double s = acc[0];
    for (int i = 0; i < N; i++) s += (double)losses[i];
    acc[0] = s;
}
