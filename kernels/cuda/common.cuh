// Shared helpers of the gptkit CUDA kernels (included by every .cu file).
// All tensors are row-major float32, token ids int32, as in kernels/backend.go.
// Every kernel is extern "C" so its PTX name is the name the Go side looks up.
#pragma once

#define WARP 32

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = WARP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = WARP / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ double warp_sum_d(double v) {
    for (int o = WARP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// block_sum adds v over a block of blockDim.x threads (a multiple of 32, at most
// 1024) in a fixed pattern and returns the total to every thread. shared holds 32
// floats.
__device__ __forceinline__ float block_sum(float v, float* shared) {
    int lane = threadIdx.x % WARP, w = threadIdx.x / WARP, nw = blockDim.x / WARP;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) shared[w] = v;
    __syncthreads();
    v = lane < nw ? shared[lane] : 0.0f;
    return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float* shared) {
    int lane = threadIdx.x % WARP, w = threadIdx.x / WARP, nw = blockDim.x / WARP;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) shared[w] = v;
    __syncthreads();
    v = lane < nw ? shared[lane] : -INFINITY;
    return warp_max(v);
}

// Grid-stride loop over n elements (n may exceed 2^31 for large buffers).
#define FOR_EACH(i, n) for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)
