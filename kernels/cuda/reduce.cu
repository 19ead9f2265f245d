// Column sums and global reductions with a fixed summation order (no atomics),
// so results never depend on scheduling.
#include "common.cuh"

// partial[chunk,c] = Σ src[r,c] over the rows r of the chunk (matmul bias gradients).
// Unrolled by 16, so that 16 loads are in flight before their adds: a thread per
// column and chunk leaves too few threads to hide memory's latency otherwise (1.9 ms
// of GPT-2's step at 4 in flight on an H200, 2026-11-27). The adds keep row order.
template <typename T> __device__ void column_partials(float* partial, const T* src, int N, int OC, int rowsPerChunk) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int chunk = blockIdx.y;
    if (c >= OC) return;
    int lo = chunk * rowsPerChunk, hi = min(N, lo + rowsPerChunk);
    float s = 0.0f;
#pragma unroll 16
    for (int r = lo; r < hi; r++) s += load(src[(long long)r * OC + c]);
    partial[(long long)chunk * OC + c] = s;
}

#define COLUMNS(S, T)                                                                                              \
    extern "C" __global__ void column_partials_##S(float* partial, const T* src, int N, int OC, int rowsPerChunk) { \
        column_partials(partial, src, N, OC, rowsPerChunk);                                                        \
    }
DTYPES(COLUMNS)

// dst[c] += Σ_k partial[k,c], k in order (unrolled by 16, as column_partials).
extern "C" __global__ void reduce_partials_add(float* dst, const float* partial, int nchunks, int n) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n) return;
    float s = 0.0f;
#pragma unroll 16
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

#define ORDERED_TILE 1024 // values a warp stages in shared memory at a time

// warp_ordered_sum returns, in lane 0, s + x[0] + x[1] + ... + x[n-1] added one at
// a time in index order in float64: the order of a plain loop, so the result is
// bit for bit a single thread's. The 32 lanes load ORDERED_TILE values at a time
// (32 loads in flight per lane) into shared memory, then lane 0 adds them: a single
// thread loading as it adds waits on memory for every few values (0.45 ms for
// GPT-2's 16,384 losses on an H200, 2026-11-27). Called by one whole warp.
template <typename T> __device__ double warp_ordered_sum(double s, const T* x, long long n, double* tile) {
    int lane = threadIdx.x % WARP;
    for (long long base = 0; base < n; base += ORDERED_TILE) {
        int m = n - base < ORDERED_TILE ? (int)(n - base) : ORDERED_TILE;
        for (int j = lane; j < m; j += WARP) tile[j] = (double)x[base + j];
        __syncwarp();
        if (lane == 0)
            for (int j = 0; j < m; j++) s += tile[j];
        __syncwarp();
    }
    return s;
}

// out[b] = Σ_k partial[b·per + k], k in order: one warp (block of 32) per output.
extern "C" __global__ void sum_partials_d(double* out, const double* partial, int per, int n) {
    __shared__ double tile[ORDERED_TILE];
    int b = blockIdx.x;
    if (b >= n) return;
    double s = warp_ordered_sum(0.0, partial + (long long)b * per, per, tile);
    if (threadIdx.x == 0) out[b] = s;
}

// acc[0] += Σ losses[i] in row order, in float64 (the classifier's loss sum, as
// the CPU adds them). One block of 32 threads.
extern "C" __global__ void loss_sum(double* acc, const float* losses, int N) {
    __shared__ double tile[ORDERED_TILE];
    if (blockIdx.x != 0) return;
    double s = warp_ordered_sum(acc[0], losses, N, tile);
    if (threadIdx.x == 0) acc[0] = s;
}
