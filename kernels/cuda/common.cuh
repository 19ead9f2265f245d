// Shared helpers of the gptkit CUDA kernels (included by every .cu file).
//
// Tensors are row-major; token ids int32. Activations (and the weights the
// forward reads) are float32, bfloat16 or float16: every kernel that touches
// them is a template over that type T, instantiated by the DTYPES macro as
// extern "C" kernels named NAME_f32, NAME_bf16 and NAME_f16 (the Go side picks
// the name from the tensors' dtype). Arithmetic is float32 throughout: load()
// widens, store() rounds to nearest even (cvt.rn), as kernels/backend.go says.
// Statistics, losses, weight gradients and optimizer state are float32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define WARP 32

typedef __nv_bfloat16 bf16;
typedef __half f16;

__device__ __forceinline__ float load(float x) { return x; }
__device__ __forceinline__ float load(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float load(f16 x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T store(float x);
template <> __device__ __forceinline__ float store<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 store<bf16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ f16 store<f16>(float x) { return __float2half_rn(x); }

// DTYPES(M) expands M(suffix, type) for the three activation types.
#define DTYPES(M) M(f32, float) M(bf16, bf16) M(f16, f16)

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

#define GELU_SCALE 0.7978845608028654f // sqrt(2/pi)

// gelu(x) = x/(1+exp(-2u)), u = √(2/π)(x+0.044715x³): the CPU backend's form of
// 0.5x(1+tanh u), exact in both limits. expf, not __expf: within a few ulp of ref.
__device__ __forceinline__ float gelu_sig(float x) {
    float u = GELU_SCALE * (x + 0.044715f * x * x * x);
    return 1.0f / (1.0f + expf(-2.0f * u));
}

// gelu'(x) = s·(1 + 2x(1-s)u'), s = 1/(1+exp(-2u)), u' = √(2/π)(1+3·0.044715x²).
__device__ __forceinline__ float gelu_grad(float x) {
    float s = gelu_sig(x);
    float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
    return s * (1.0f + 2.0f * x * (1.0f - s) * du);
}
