// Token and position embeddings (kernels.Backend EncoderForward/Backward).
#include "common.cuh"

// out[b,t,:] = wte[inp[b,t],:] + wpe[t,:], added in float32, rounded once.
template <typename T> __device__ void encoder_forward(T* out, const int* inp, const T* wte, const T* wpe, int B, int T_,
                                                      int C) {
    long long n = (long long)B * T_ * C;
    FOR_EACH(i, n) {
        int c = (int)(i % C);
        long long bt = i / C;
        int t = (int)(bt % T_);
        out[i] = store<T>(load(wte[(long long)inp[bt] * C + c]) + load(wpe[(long long)t * C + c]));
    }
}

// dwpe[t,c] += Σ_b dout[b,t,c] (float32), each dout added in b order, as the CPU
// and ref do (deterministic).
template <typename T> __device__ void encoder_backward_wpe(float* dwpe, const T* dout, int B, int T_, int C) {
    long long n = (long long)T_ * C;
    FOR_EACH(i, n) {
        float s = dwpe[i];
        for (int b = 0; b < B; b++) s += load(dout[(long long)b * T_ * C + i]);
        dwpe[i] = s;
    }
}

// dwte[tok,c] += dout[pos,c] over the positions of each distinct token, in
// position order. The host groups positions by token (bucket k holds token
// tok[k] and positions pos[start[k] .. start[k+1])), so each row of dwte is
// written by one block in a fixed order: no atomics, deterministic.
template <typename T> __device__ void encoder_backward_wte(float* dwte, const T* dout, const int* tok, const int* start,
                                                           const int* pos, int nbuckets, int C) {
    for (int k = blockIdx.x; k < nbuckets; k += gridDim.x) {
        long long row = (long long)tok[k] * C;
        int lo = start[k], hi = start[k + 1];
        for (int c = threadIdx.x; c < C; c += blockDim.x) {
            float s = dwte[row + c];
            for (int j = lo; j < hi; j++) s += load(dout[(long long)pos[j] * C + c]);
            dwte[row + c] = s;
        }
    }
}

#define ENCODER(S, T)                                                                                              \
    extern "C" __global__ void encoder_forward_##S(T* out, const int* inp, const T* wte, const T* wpe, int B,      \
                                                   int T_, int C) {                                                \
        encoder_forward(out, inp, wte, wpe, B, T_, C);                                                             \
    }                                                                                                              \
    extern "C" __global__ void encoder_backward_wpe_##S(float* dwpe, const T* dout, int B, int T_, int C) {        \
        encoder_backward_wpe(dwpe, dout, B, T_, C);                                                                \
    }                                                                                                              \
    extern "C" __global__ void encoder_backward_wte_##S(float* dwte, const T* dout, const int* tok,                \
                                                        const int* start, const int* pos, int nbuckets, int C) {   \
        encoder_backward_wte(dwte, dout, tok, start, pos, nbuckets, C);                                            \
    }
DTYPES(ENCODER)
