// Column sums and global reductions with a fixed summation order (no atomics),
// so results never depend on scheduling.
#include "common.cuh"

// partial[chunk,c] = Σ src[r,c] over the rows r of the chunk (matmul bias gradients).
extern "C" __global__ void column_partials(float* partial, const float* src, int N, int OC, int rowsPerChunk) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int chunk = blockIdx.y;
    if (c >= OC) return;
    int lo = chunk * rowsPerChunk, hi = min(N, lo + rowsPerChunk);
    float s = 0.0f;
    for (int r = lo; r < hi; r++) s += src[(long long)r * OC + c];
    partial[(long long)chunk * OC + c] = s;
}

// dst[c] += Σ_k partial[k,c], k in order.
extern "C" __global__ void reduce_partials_add(float* dst, const float* partial, int nchunks, int n) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n) return;
    float s = 0.0f;
    for (int k = 0; k < nchunks; k++) s += partial[(long long)k * n + c];
    dst[c] += s;
}

// partial[blockIdx.x] = Σx² over the chunk [blockIdx.x·chunk, +chunk) in float64,
// with a fixed thread layout (blockDim.x = 256): the host adds the chunks in order.
extern "C" __global__ void sum_squares_partials(double* partial, const float* x, long long n, int chunk) {
    __shared__ double sh[WARP];
    long long lo = (long long)blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
    double s = 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        double v = x[i];
        s += v * v;
    }
    s = warp_sum_d(s);
    int lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
    if (lane == 0) sh[w] = s;
    __syncthreads();
    if (w == 0) {
        s = lane < (int)(blockDim.x / WARP) ? sh[lane] : 0.0;
        s = warp_sum_d(s);
        if (lane == 0) partial[blockIdx.x] = s;
    }
}
