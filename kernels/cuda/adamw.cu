// AdamW (PyTorch's decoupled weight decay), the interface's formula operation for
// operation in float32. Built with -fmad=false, so no multiply-add is fused and the
// result matches kernels/ref bit for bit (sqrtf and / are IEEE-rounded).
#include "common.cuh"

extern "C" __global__ void adamw(float* params, const float* grads, float* m, float* v, long long n, float lr,
                                 float b1, float b2, float eps, float wd, float bc1, float bc2) {
    float omb1 = 1.0f - b1, omb2 = 1.0f - b2;
    FOR_EACH(i, n) {
        float g = grads[i];
        float mi = b1 * m[i] + omb1 * g;
        float vi = b2 * v[i] + omb2 * g * g;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / bc1;
        float vhat = vi / bc2;
        float p = params[i];
        params[i] = p - lr * (mhat / (sqrtf(vhat) + eps) + wd * p);
    }
}
