// AdamW (PyTorch's decoupled weight decay) over all the parameters in one launch,
// the interface's formula operation for operation in float32. Built with
// -fmad=false, so no multiply-add is fused and the result matches kernels/ref bit
// for bit (sqrtf and / are IEEE-rounded).
#include "common.cuh"

// grad_scale is kernels.GradScale on the device: gradScale (0: 1) times the
// clipping coefficient from the partial sums of squares, summed in order in
// float64. It returns 0 for a gradient that is not finite (skip the step).
__device__ float grad_scale(const double* parts, int nparts, float gradScale, double maxNorm, bool* ok) {
    double normSq = 0.0;
    for (int k = 0; k < nparts; k++) normSq += parts[k];
    *ok = isfinite(normSq);
    double s = gradScale == 0.0f ? 1.0 : (double)gradScale;
    float scale = (float)s;
    if (maxNorm > 0.0) {
        double c = maxNorm / (sqrt(normSq) * s + 1e-6);
        if (c < 1.0) scale = (float)s * (float)c;
    }
    return scale;
}

// One block of threads computes the scale once (thread 0) and shares it.
template <typename T> __device__ void adamw(float* params, float* grads, float* m, float* v, T* copy,
                                            const double* parts, int nparts, long long n, long long decayLen, float lr,
                                            float b1, float b2, float eps, float wd, float bc1, float bc2,
                                            float gradScale, double maxNorm) {
    __shared__ float sscale;
    __shared__ bool sok;
    if (threadIdx.x == 0) {
        bool ok = true;
        float s = gradScale == 0.0f ? 1.0f : gradScale;
        if (parts) s = grad_scale(parts, nparts, gradScale, maxNorm, &ok);
        sscale = s;
        sok = ok;
    }
    __syncthreads();
    if (!sok) return;
    float scale = sscale;
    float omb1 = 1.0f - b1, omb2 = 1.0f - b2;
    FOR_EACH(i, n) {
        float g = grads[i];
        if (scale != 1.0f) g = g * scale;
        float w = i < decayLen ? wd : 0.0f;
        float mi = b1 * m[i] + omb1 * g;
        float vi = b2 * v[i] + omb2 * g * g;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / bc1;
        float vhat = vi / bc2;
        float p = params[i];
        p = p - lr * (mhat / (sqrtf(vhat) + eps) + w * p);
        params[i] = p;
        if (copy) copy[i] = store<T>(p);
    }
}

#define ADAMW(S, T)                                                                                                \
    extern "C" __global__ void adamw_##S(float* params, float* grads, float* m, float* v, T* copy,                 \
                                         const double* parts, int nparts, long long n, long long decayLen,         \
                                         float lr, float b1, float b2, float eps, float wd, float bc1, float bc2,  \
                                         float gradScale, double maxNorm) {                                        \
        adamw(params, grads, m, v, copy, parts, nparts, n, decayLen, lr, b1, b2, eps, wd, bc1, bc2, gradScale,     \
              maxNorm);                                                                                            \
    }
DTYPES(ADAMW)
