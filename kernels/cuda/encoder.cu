// Token and position embeddings (kernels.Backend EncoderForward/Backward).
#include "common.cuh"

// out[b,t,:] = wte[inp[b,t],:] + wpe[t,:].
extern "C" __global__ void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe,
                                           int B, int T, int C) {
    long long n = (long long)B * T * C;
    FOR_EACH(i, n) {
        int c = (int)(i % C);
        long long bt = i / C;
        int t = (int)(bt % T);
        out[i] = wte[(long long)inp[bt] * C + c] + wpe[(long long)t * C + c];
    }
}

// dwpe[t,c] += Σ_b dout[b,t,c], summed over b in order (deterministic).
extern "C" __global__ void encoder_backward_wpe(float* dwpe, const float* dout, int B, int T, int C) {
    long long n = (long long)T * C;
    FOR_EACH(i, n) {
        float s = 0.0f;
        for (int b = 0; b < B; b++) s += dout[(long long)b * T * C + i];
        dwpe[i] += s;
    }
}

// dwte[tok,c] += Σ dout[pos,c] over the positions of each distinct token. The host
// groups positions by token (bucket k holds token tok[k] and positions
// pos[start[k] .. start[k+1])), so each row of dwte is written by one block in a
// fixed order: no atomics, deterministic.
extern "C" __global__ void encoder_backward_wte(float* dwte, const float* dout, const int* tok, const int* start,
                                                const int* pos, int nbuckets, int C) {
    for (int k = blockIdx.x; k < nbuckets; k += gridDim.x) {
        long long row = (long long)tok[k] * C;
        int lo = start[k], hi = start[k + 1];
        for (int c = threadIdx.x; c < C; c += blockDim.x) {
            float s = 0.0f;
            for (int j = lo; j < hi; j++) s += dout[(long long)pos[j] * C + c];
            dwte[row + c] += s;
        }
    }
}
