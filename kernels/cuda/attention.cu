// Causal self-attention, FlashAttention-2 style: the probabilities are never
// stored. The forward runs an online softmax over blocks of keys and saves each
// row's logsumexp; the backward recomputes the probabilities block by block from
// it. Deterministic: every output element is written by one warp that sums in a
// fixed order (no atomics), so the backward runs as two kernels, one over key
// blocks (dK, dV) and one over query blocks (dQ), with D = rowsum(dO ⊙ O) first.
//
// qkv (B,T,3C) holds q, k, v side by side, head h at channels [h·hs, (h+1)·hs) of
// each; out (B,T,C); lse and D (B,NH,T) float32.
//
// Two implementations:
//   - flash_*_{bf16,f16}_{16,32,64,128}: tensor cores (mma.sync m16n8k16 with
//     float32 accumulation), tiles of 64 queries × 64 keys per block of 4 warps
//     (16 rows each), operands through shared memory with cp.async and ldmatrix.
//     The probabilities and dS are rounded to the 16-bit type for their matmuls,
//     as FlashAttention does; everything else is float32.
//   - attention_*_simt_{f32,bf16,f16}: one warp per row in float32, any head size
//     up to 256: float32 runs and head sizes the tensor-core tiles do not take.
#include "common.cuh"

#define BLK 64 // queries and keys per tile

// ---- PTX wrappers (PTX ISA 7.0+, sm_80) ----

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// ldmatrix: four 8×8 matrices of b16; lanes 8i..8i+7 give the row addresses of
// matrix i; each lane gets (row lane/4, cols 2(lane%4), +1) of each (transposed
// with .trans).
__device__ __forceinline__ void ldsm_x4(unsigned* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldsm_x4_t(unsigned* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

// d (16×8 float32) += a (16×16, row) · b (16×8, col).
template <typename T> __device__ __forceinline__ void mma(float* d, const unsigned* a, const unsigned* b);

template <> __device__ __forceinline__ void mma<bf16>(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <> __device__ __forceinline__ void mma<f16>(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// pack rounds two floats into one register of two 16-bit values (lo first).
template <typename T> __device__ __forceinline__ unsigned pack(float lo, float hi);

template <> __device__ __forceinline__ unsigned pack<bf16>(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
}

template <> __device__ __forceinline__ unsigned pack<f16>(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
}

// cp.async of 16 bytes; src_bytes 0 writes zeros (rows past T).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }

// cp_async_commit closes the group of the cp.async issued since the last one;
// cp_async_wait_prev waits for every committed group but the newest.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_prev() { asm volatile("cp.async.wait_group 1;\n" ::); }

// TILE is one tile's elements in shared memory (BLK rows of HS, padded by 8).
// STAGES is how many pairs of tiles a kernel keeps: 2 where two pairs fit in the
// 48 KB of static shared memory (the next pair loads while the block computes on
// this one; head sizes up to 64), else 1 (load, wait, compute).
template <typename T, int HS> struct tiles {
    static constexpr int TILE = BLK * (HS + 8);
    static constexpr int STAGES = 4 * TILE * (int)sizeof(T) + 4 * BLK * 4 <= 48 * 1024 ? 2 : 1;
};

// load_tile copies rows [r0, r0+BLK) × HS of src (row stride ld) into s (row
// stride HS+8, the padding against ldmatrix bank conflicts), zeros past T.
template <typename T, int HS> __device__ __forceinline__ void load_tile(T* s, const T* src, long long ld, int r0, int T_) {
    constexpr int CH = HS / 8; // 16-byte chunks per row
    for (int i = threadIdx.x; i < BLK * CH; i += blockDim.x) {
        int r = i / CH, c = (i % CH) * 8;
        bool ok = r0 + r < T_;
        const T* g = ok ? src + (long long)(r0 + r) * ld + c : src;
        cp_async16(s + r * (HS + 8) + c, g, ok ? 16 : 0);
    }
}

// The K/V pipeline of the forward and dQ kernels: key block kb's K and V tiles in
// stage kb % STAGES of sm (K at sm + 2s·TILE, V after it). load_kv issues a pair as
// one cp.async group; kv_ready makes block kb's pair visible to the whole block,
// first issuing kb+1's into the other stage where there are two (free since the
// barrier that ended the last compute); kv_done, after a compute and its barrier,
// issues kb+1's where there is one stage.
template <typename T, int HS> __device__ __forceinline__ void load_kv(T* stage, const T* K, const T* V, long long ld, int k0, int T_) {
    load_tile<T, HS>(stage, K, ld, k0, T_);
    load_tile<T, HS>(stage + tiles<T, HS>::TILE, V, ld, k0, T_);
    cp_async_commit();
}

template <typename T, int HS>
__device__ __forceinline__ void kv_ready(T* sm, const T* K, const T* V, long long ld, int kb, int nkb, int T_) {
    constexpr int TILE = tiles<T, HS>::TILE, ST = tiles<T, HS>::STAGES;
    if (ST == 2 && kb + 1 < nkb) {
        load_kv<T, HS>(sm + ((kb + 1) % ST) * 2 * TILE, K, V, ld, (kb + 1) * BLK, T_);
        cp_async_wait_prev();
    } else {
        cp_async_wait_all();
    }
    __syncthreads();
}

template <typename T, int HS>
__device__ __forceinline__ void kv_done(T* sm, const T* K, const T* V, long long ld, int kb, int nkb, int T_) {
    if (tiles<T, HS>::STAGES == 1 && kb + 1 < nkb) load_kv<T, HS>(sm, K, V, ld, (kb + 1) * BLK, T_);
}

// a_frags loads a 16×HS A operand (this warp's rows row0..row0+15 of tile s)
// into HS/16 fragments.
template <typename T, int HS> __device__ __forceinline__ void a_frags(unsigned (*f)[4], const T* s, int row0) {
    int lane = threadIdx.x % WARP;
#pragma unroll
    for (int ks = 0; ks < HS / 16; ks++) ldsm_x4(f[ks], s + (row0 + lane % 16) * (HS + 8) + ks * 16 + (lane / 16) * 8);
}

// b_rows loads the B operand of two n-tiles (rows n0..n0+15 of tile s, as the
// columns of B) for k-step ks: B[k][n] = s[n][k]. r[0..1] is n-tile n0, r[2..3]
// n-tile n0+8.
template <typename T, int HS> __device__ __forceinline__ void b_rows(unsigned* r, const T* s, int n0, int ks) {
    int lane = threadIdx.x % WARP;
    ldsm_x4(r, s + (n0 + (lane / 16) * 8 + lane % 8) * (HS + 8) + ks * 16 + ((lane / 8) & 1) * 8);
}

// b_trans loads the B operand of two n-tiles (columns d0..d0+15 of tile s) for
// the k-step of rows k0..k0+15: B[k][n] = s[k][n].
template <typename T, int HS> __device__ __forceinline__ void b_trans(unsigned* r, const T* s, int k0, int d0) {
    int lane = threadIdx.x % WARP;
    ldsm_x4_t(r, s + (k0 + ((lane / 8) & 1) * 8 + lane % 8) * (HS + 8) + d0 + (lane / 16) * 8);
}

// p_frag packs the accumulators of 16×16 (n-tiles 2kk, 2kk+1 of acc) as an A
// operand: the C layout of m16n8 is the A layout of m16n8k16.
template <typename T> __device__ __forceinline__ void p_frag(unsigned* a, float (*acc)[4], int kk) {
    a[0] = pack<T>(acc[2 * kk][0], acc[2 * kk][1]);
    a[1] = pack<T>(acc[2 * kk][2], acc[2 * kk][3]);
    a[2] = pack<T>(acc[2 * kk + 1][0], acc[2 * kk + 1][1]);
    a[3] = pack<T>(acc[2 * kk + 1][2], acc[2 * kk + 1][3]);
}

// scores_into: acc (16 rows × 64 columns as 8 n-tiles) = A · tile(s)ᵀ.
template <typename T, int HS> __device__ __forceinline__ void scores_into(float (*acc)[4], unsigned (*a)[4], const T* s) {
#pragma unroll
    for (int j = 0; j < 8; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < HS / 16; ks++) {
#pragma unroll
        for (int j = 0; j < 8; j += 2) {
            unsigned b[4];
            b_rows<T, HS>(b, s, j * 8, ks);
            mma<T>(acc[j], a[ks], &b[0]);
            mma<T>(acc[j + 1], a[ks], &b[2]);
        }
    }
}

// accumulate_into: out (16 × HS as HS/8 n-tiles) += P (acc, 16×64) · tile(s)
// (64 × HS).
template <typename T, int HS> __device__ __forceinline__ void accumulate_into(float (*out)[4], float (*p)[4], const T* s) {
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
        unsigned a[4];
        p_frag<T>(a, p, kk);
#pragma unroll
        for (int t = 0; t < HS / 8; t += 2) {
            unsigned b[4];
            b_trans<T, HS>(b, s, kk * 16, t * 8);
            mma<T>(out[t], a, &b[0]);
            mma<T>(out[t + 1], a, &b[2]);
        }
    }
}

// qkv_head: where head h of batch row b starts in qkv: its Q, K and V (row stride
// ld = 3C).
template <typename T> struct qkv_head {
    const T *Q, *K, *V;
    long long ld;
};

template <typename T, int HS> __device__ __forceinline__ qkv_head<T> head_of(const T* qkv, int b, int h, int T_, int C) {
    qkv_head<T> x;
    x.ld = 3LL * C;
    x.Q = qkv + (long long)b * T_ * x.ld + h * HS;
    x.K = x.Q + C;
    x.V = x.Q + 2 * C;
    return x;
}

// store_rows writes a warp's 16 × HS accumulators (this thread's rows r0 and
// r1, HS/8 n-tiles) to X (row stride ld), times m0 and m1, rows past T skipped.
template <typename T, int HS>
__device__ __forceinline__ void store_rows(T* X, long long ld, int r0, int r1, int T_, float (*acc)[4], float m0, float m1) {
    int tg = threadIdx.x % WARP & 3;
#pragma unroll
    for (int t = 0; t < HS / 8; t++) {
        int d = t * 8 + tg * 2;
        if (r0 < T_) {
            X[(long long)r0 * ld + d] = store<T>(acc[t][0] * m0);
            X[(long long)r0 * ld + d + 1] = store<T>(acc[t][1] * m0);
        }
        if (r1 < T_) {
            X[(long long)r1 * ld + d] = store<T>(acc[t][2] * m1);
            X[(long long)r1 * ld + d + 1] = store<T>(acc[t][3] * m1);
        }
    }
}

// backward_frags starts a backward block: tiles rows [r0, r0+BLK) of A and B (row
// strides lda, ldb) through shared memory sa and sb into this warp's A operands fa
// and fb. sa and sb are free again when it returns.
template <typename T, int HS>
__device__ __forceinline__ void backward_frags(unsigned (*fa)[4], unsigned (*fb)[4], T* sa, T* sb, const T* A, long long lda,
                                               const T* B, long long ldb, int r0, int T_) {
    int warp = threadIdx.x / WARP;
    load_tile<T, HS>(sa, A, lda, r0, T_);
    load_tile<T, HS>(sb, B, ldb, r0, T_);
    cp_async_wait_all();
    __syncthreads();
    a_frags<T, HS>(fa, sa, warp * 16);
    a_frags<T, HS>(fb, sb, warp * 16);
    __syncthreads();
}

// ---- tensor-core forward ----

template <typename T, int HS>
__device__ void flash_forward(T* out, float* lse, const T* qkv, int T_, int C, int NH, float scale) {
    constexpr int TILE = tiles<T, HS>::TILE, ST = tiles<T, HS>::STAGES;
    __shared__ __align__(16) T sm[ST * 2 * TILE]; // stage s: K at sm + 2s·TILE, V after it
    int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP, g = lane >> 2, tg = lane & 3;
    qkv_head<T> x = head_of<T, HS>(qkv, b, h, T_, C);
    const T *Q = x.Q, *K = x.K, *V = x.V;
    long long ld = x.ld;
    int qb = gridDim.x - 1 - blockIdx.x; // the longest rows of keys first: a shorter tail
    int q0 = qb * BLK;
    load_tile<T, HS>(sm, Q, ld, q0, T_);
    cp_async_wait_all();
    __syncthreads();
    unsigned qf[HS / 16][4];
    a_frags<T, HS>(qf, sm, warp * 16);
    __syncthreads();

    int row0 = q0 + warp * 16 + g, row1 = row0 + 8; // this thread's two rows
    float o[HS / 8][4];
#pragma unroll
    for (int t = 0; t < HS / 8; t++) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    int nkb = min(qb + 1, (T_ + BLK - 1) / BLK); // causal: no key block past the queries'
    load_kv<T, HS>(sm, K, V, ld, 0, T_);
    for (int kb = 0; kb < nkb; kb++) {
        int k0 = kb * BLK;
        const T* sK = sm + (kb % ST) * 2 * TILE;
        const T* sV = sK + TILE;
        kv_ready<T, HS>(sm, K, V, ld, kb, nkb, T_);
        float s[8][4];
        scores_into<T, HS>(s, qf, sK);
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < 8; j++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int key = k0 + j * 8 + tg * 2 + (e & 1), row = e < 2 ? row0 : row1;
                float v = s[j][e] * scale;
                if (key > row || key >= T_) v = -INFINITY;
                s[j][e] = v;
            }
            mx0 = fmaxf(mx0, fmaxf(s[j][0], s[j][1]));
            mx1 = fmaxf(mx1, fmaxf(s[j][2], s[j][3]));
        }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1); // finite: key 0 of each row's first block counts
        float c0 = expf(m0 - mn0), c1 = expf(m1 - mn1);
        float rs0 = 0.0f, rs1 = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            s[j][0] = expf(s[j][0] - mn0);
            s[j][1] = expf(s[j][1] - mn0);
            s[j][2] = expf(s[j][2] - mn1);
            s[j][3] = expf(s[j][3] - mn1);
            rs0 += s[j][0] + s[j][1];
            rs1 += s[j][2] + s[j][3];
        }
        rs0 += __shfl_xor_sync(0xffffffffu, rs0, 1);
        rs0 += __shfl_xor_sync(0xffffffffu, rs0, 2);
        rs1 += __shfl_xor_sync(0xffffffffu, rs1, 1);
        rs1 += __shfl_xor_sync(0xffffffffu, rs1, 2);
        l0 = l0 * c0 + rs0;
        l1 = l1 * c1 + rs1;
        m0 = mn0;
        m1 = mn1;
#pragma unroll
        for (int t = 0; t < HS / 8; t++) {
            o[t][0] *= c0;
            o[t][1] *= c0;
            o[t][2] *= c1;
            o[t][3] *= c1;
        }
        accumulate_into<T, HS>(o, s, sV);
        __syncthreads(); // the next loads overwrite this stage
        kv_done<T, HS>(sm, K, V, ld, kb, nkb, T_);
    }
    float il0 = 1.0f / l0, il1 = 1.0f / l1;
    store_rows<T, HS>(out + (long long)b * T_ * C + h * HS, C, row0, row1, T_, o, il0, il1);
    if (tg == 0) {
        if (row0 < T_) lse[(long long)bh * T_ + row0] = m0 + logf(l0);
        if (row1 < T_) lse[(long long)bh * T_ + row1] = m1 + logf(l1);
    }
}

// ---- tensor-core backward ----

// dK and dV of one block of 64 keys: over the query blocks at and after it,
// Sᵀ = K·Qᵀ, Pᵀ = exp(scale·Sᵀ - lse), dV += Pᵀ·dO, dPᵀ = V·dOᵀ,
// dSᵀ = Pᵀ ⊙ (dPᵀ - D), dK += dSᵀ·Q; then dK·scale and dV are written.
template <typename T, int HS>
__device__ void flash_backward_dkdv(T* dqkv, const T* qkv, const T* dout, const float* lse, const float* Dv, int T_,
                                    int C, int NH, float scale) {
    constexpr int TILE = tiles<T, HS>::TILE, ST = tiles<T, HS>::STAGES;
    __shared__ __align__(16) T sm[ST * 2 * TILE]; // stage s: Q at sm + 2s·TILE, dO after it
    __shared__ float sLs[ST][BLK], sDs[ST][BLK];
    int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP, g = lane >> 2, tg = lane & 3;
    qkv_head<T> x = head_of<T, HS>(qkv, b, h, T_, C);
    const T *Q = x.Q, *K = x.K, *V = x.V;
    long long ld = x.ld;
    const T* dO = dout + (long long)b * T_ * C + h * HS;
    int k0 = blockIdx.x * BLK;
    unsigned kf[HS / 16][4], vf[HS / 16][4];
    backward_frags<T, HS>(kf, vf, sm, sm + TILE, K, ld, V, ld, k0, T_);

    int key0 = k0 + warp * 16 + g, key1 = key0 + 8;
    float dk[HS / 8][4], dv[HS / 8][4];
#pragma unroll
    for (int t = 0; t < HS / 8; t++) dk[t][0] = dk[t][1] = dk[t][2] = dk[t][3] = dv[t][0] = dv[t][1] = dv[t][2] = dv[t][3] = 0.0f;
    int nqb = (T_ + BLK - 1) / BLK;
    // issue(qb, st): the Q and dO tiles of query block qb (cp.async, one group) and
    // its lse and D into stage st.
    auto issue = [&](int qb, int st) {
        int q0 = qb * BLK;
        load_tile<T, HS>(sm + st * 2 * TILE, Q, ld, q0, T_);
        load_tile<T, HS>(sm + st * 2 * TILE + TILE, dO, C, q0, T_);
        cp_async_commit();
        for (int i = threadIdx.x; i < BLK; i += blockDim.x) {
            bool ok = q0 + i < T_;
            sLs[st][i] = ok ? lse[(long long)bh * T_ + q0 + i] : INFINITY; // P = 0 past T
            sDs[st][i] = ok ? Dv[(long long)bh * T_ + q0 + i] : 0.0f;
        }
    };
    issue(blockIdx.x, 0);
    for (int qb = blockIdx.x; qb < nqb; qb++) {
        int q0 = qb * BLK, st = (qb - blockIdx.x) % ST;
        const T* sQ = sm + st * 2 * TILE;
        const T* sO = sQ + TILE; // dO
        const float* sL = sLs[st];
        const float* sD = sDs[st];
        if (ST == 2 && qb + 1 < nqb) { // the next block into the other stage, free since the last barrier
            issue(qb + 1, (st + 1) % ST);
            cp_async_wait_prev();
        } else {
            cp_async_wait_all();
        }
        __syncthreads();
        float p[8][4];
        scores_into<T, HS>(p, kf, sQ); // Sᵀ: rows are keys, columns queries
#pragma unroll
        for (int j = 0; j < 8; j++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int qi = j * 8 + tg * 2 + (e & 1), key = e < 2 ? key0 : key1;
                p[j][e] = q0 + qi < key ? 0.0f : expf(p[j][e] * scale - sL[qi]);
            }
        }
        accumulate_into<T, HS>(dv, p, sO);
        float ds[8][4];
        scores_into<T, HS>(ds, vf, sO); // dPᵀ
#pragma unroll
        for (int j = 0; j < 8; j++) {
#pragma unroll
            for (int e = 0; e < 4; e++) ds[j][e] = p[j][e] * (ds[j][e] - sD[j * 8 + tg * 2 + (e & 1)]);
        }
        accumulate_into<T, HS>(dk, ds, sQ);
        __syncthreads(); // the next loads overwrite this stage
        if (ST == 1 && qb + 1 < nqb) issue(qb + 1, 0);
    }
    T* dK = dqkv + (long long)b * T_ * ld + C + h * HS;
    store_rows<T, HS>(dK, ld, key0, key1, T_, dk, scale, scale);
    store_rows<T, HS>(dK + C, ld, key0, key1, T_, dv, 1.0f, 1.0f); // dV
}

// dQ of one block of 64 queries: over the key blocks up to it, S = Q·Kᵀ,
// P = exp(scale·S - lse), dP = dO·Vᵀ, dS = P ⊙ (dP - D), dQ += dS·K; then dQ·scale
// is written.
template <typename T, int HS>
__device__ void flash_backward_dq(T* dqkv, const T* qkv, const T* dout, const float* lse, const float* Dv, int T_,
                                  int C, int NH, float scale) {
    constexpr int TILE = tiles<T, HS>::TILE, ST = tiles<T, HS>::STAGES;
    __shared__ __align__(16) T sm[ST * 2 * TILE]; // stage s: K at sm + 2s·TILE, V after it
    int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP, g = lane >> 2, tg = lane & 3;
    qkv_head<T> x = head_of<T, HS>(qkv, b, h, T_, C);
    const T *Q = x.Q, *K = x.K, *V = x.V;
    long long ld = x.ld;
    const T* dO = dout + (long long)b * T_ * C + h * HS;
    int qb = gridDim.x - 1 - blockIdx.x; // the longest rows of keys first: a shorter tail
    int q0 = qb * BLK;
    unsigned qf[HS / 16][4], of[HS / 16][4];
    backward_frags<T, HS>(qf, of, sm, sm + TILE, Q, ld, dO, C, q0, T_);

    int row0 = q0 + warp * 16 + g, row1 = row0 + 8;
    float L0 = row0 < T_ ? lse[(long long)bh * T_ + row0] : INFINITY;
    float L1 = row1 < T_ ? lse[(long long)bh * T_ + row1] : INFINITY;
    float D0 = row0 < T_ ? Dv[(long long)bh * T_ + row0] : 0.0f;
    float D1 = row1 < T_ ? Dv[(long long)bh * T_ + row1] : 0.0f;
    float dq[HS / 8][4];
#pragma unroll
    for (int t = 0; t < HS / 8; t++) dq[t][0] = dq[t][1] = dq[t][2] = dq[t][3] = 0.0f;
    int nkb = min(qb + 1, (T_ + BLK - 1) / BLK);
    load_kv<T, HS>(sm, K, V, ld, 0, T_);
    for (int kb = 0; kb < nkb; kb++) {
        int k0 = kb * BLK;
        const T* sK = sm + (kb % ST) * 2 * TILE;
        const T* sV = sK + TILE;
        kv_ready<T, HS>(sm, K, V, ld, kb, nkb, T_);
        float p[8][4], ds[8][4];
        scores_into<T, HS>(p, qf, sK);
        scores_into<T, HS>(ds, of, sV); // dP
#pragma unroll
        for (int j = 0; j < 8; j++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int key = k0 + j * 8 + tg * 2 + (e & 1);
                bool lo = e < 2;
                int row = lo ? row0 : row1;
                float pe = key > row || key >= T_ ? 0.0f : expf(p[j][e] * scale - (lo ? L0 : L1));
                ds[j][e] = pe * (ds[j][e] - (lo ? D0 : D1));
            }
        }
        accumulate_into<T, HS>(dq, ds, sK);
        __syncthreads(); // the next loads overwrite this stage
        kv_done<T, HS>(sm, K, V, ld, kb, nkb, T_);
    }
    store_rows<T, HS>(dqkv + (long long)b * T_ * ld + h * HS, ld, row0, row1, T_, dq, scale, scale); // dQ
}

#define FLASH(S, T, HS)                                                                                            \
    extern "C" __global__ void __launch_bounds__(128)                                                              \
        flash_forward_##S##_##HS(T* out, float* lse, const T* qkv, int T_, int C, int NH, float scale) {           \
        flash_forward<T, HS>(out, lse, qkv, T_, C, NH, scale);                                                     \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(128)                                                              \
        flash_backward_dkdv_##S##_##HS(T* dqkv, const T* qkv, const T* dout, const float* lse, const float* D,     \
                                       int T_, int C, int NH, float scale) {                                       \
        flash_backward_dkdv<T, HS>(dqkv, qkv, dout, lse, D, T_, C, NH, scale);                                     \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(128)                                                              \
        flash_backward_dq_##S##_##HS(T* dqkv, const T* qkv, const T* dout, const float* lse, const float* D,       \
                                     int T_, int C, int NH, float scale) {                                         \
        flash_backward_dq<T, HS>(dqkv, qkv, dout, lse, D, T_, C, NH, scale);                                       \
    }
#define FLASH_SIZES(S, T) FLASH(S, T, 16) FLASH(S, T, 32) FLASH(S, T, 64) FLASH(S, T, 128)
FLASH_SIZES(bf16, bf16)
FLASH_SIZES(f16, f16)

// ---- D = rowsum(dO ⊙ O), one warp per row ----

template <typename T>
__device__ void attention_backward_d(float* D, const T* dout, const T* out, int B, int T_, int C, int NH) {
    int lane = threadIdx.x % WARP;
    long long row = (long long)blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP; // (b, h, t)
    if (row >= (long long)B * NH * T_) return;
    int t = (int)(row % T_), bh = (int)(row / T_), b = bh / NH, h = bh % NH, hs = C / NH;
    long long off = ((long long)b * T_ + t) * C + (long long)h * hs;
    float s = 0.0f;
    for (int d = lane; d < hs; d += WARP) s += load(dout[off + d]) * load(out[off + d]);
    s = warp_sum(s);
    if (lane == 0) D[row] = s;
}

// ---- SIMT: one warp per row, float32, any head size ≤ 256 ----

#define SIMT_D 8 // head dims per lane: hs ≤ 256

// One warp per query row: an online softmax over chunks of 32 keys (one per lane).
template <typename T>
__device__ void attention_forward_simt(T* out, float* lse, const T* qkv, int B, int T_, int C, int NH, float scale) {
    __shared__ float sq[4][SIMT_D * WARP];
    int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
    long long row = (long long)blockIdx.x * 4 + warp; // (b, h, t)
    if (row >= (long long)B * NH * T_) return;
    int t = (int)(row % T_), bh = (int)(row / T_), b = bh / NH, h = bh % NH, hs = C / NH;
    long long ld = 3LL * C;
    const T* base = qkv + (long long)b * T_ * ld + (long long)h * hs;
    for (int d = lane; d < hs; d += WARP) sq[warp][d] = load(base[(long long)t * ld + d]);
    __syncwarp();
    float m = -INFINITY, l = 0.0f, o[SIMT_D];
    for (int i = 0; i < SIMT_D; i++) o[i] = 0.0f;
    for (int k0 = 0; k0 <= t; k0 += WARP) {
        int key = k0 + lane;
        float s = -INFINITY;
        if (key <= t) {
            const T* k = base + (long long)key * ld + C;
            float dot = 0.0f;
            for (int d = 0; d < hs; d++) dot += sq[warp][d] * load(k[d]);
            s = dot * scale;
        }
        float mn = fmaxf(m, warp_max(s));
        float c = expf(m - mn);
        float p = key <= t ? expf(s - mn) : 0.0f;
        l = l * c + warp_sum(p);
        for (int i = 0; i < SIMT_D; i++) o[i] *= c;
        for (int j = 0; j < WARP && k0 + j <= t; j++) {
            float pj = __shfl_sync(0xffffffffu, p, j);
            const T* v = base + (long long)(k0 + j) * ld + 2 * C;
            for (int i = 0; i < SIMT_D; i++) {
                int d = lane + i * WARP;
                if (d < hs) o[i] += pj * load(v[d]);
            }
        }
        m = mn;
    }
    T* O = out + ((long long)b * T_ + t) * C + (long long)h * hs;
    for (int i = 0; i < SIMT_D; i++) {
        int d = lane + i * WARP;
        if (d < hs) O[d] = store<T>(o[i] / l);
    }
    if (lane == 0) lse[row] = m + logf(l);
}

// dQ of one query row per warp.
template <typename T>
__device__ void attention_backward_dq_simt(T* dqkv, const T* qkv, const T* dout, const float* lse, const float* Dv,
                                           int B, int T_, int C, int NH, float scale) {
    __shared__ float sq[4][SIMT_D * WARP], so[4][SIMT_D * WARP];
    int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
    long long row = (long long)blockIdx.x * 4 + warp;
    if (row >= (long long)B * NH * T_) return;
    int t = (int)(row % T_), bh = (int)(row / T_), b = bh / NH, h = bh % NH, hs = C / NH;
    long long ld = 3LL * C;
    const T* base = qkv + (long long)b * T_ * ld + (long long)h * hs;
    const T* dO = dout + ((long long)b * T_ + t) * C + (long long)h * hs;
    for (int d = lane; d < hs; d += WARP) {
        sq[warp][d] = load(base[(long long)t * ld + d]);
        so[warp][d] = load(dO[d]);
    }
    __syncwarp();
    float L = lse[row], D = Dv[row], dq[SIMT_D];
    for (int i = 0; i < SIMT_D; i++) dq[i] = 0.0f;
    for (int k0 = 0; k0 <= t; k0 += WARP) {
        int key = k0 + lane;
        float ds = 0.0f;
        if (key <= t) {
            const T* k = base + (long long)key * ld + C;
            const T* v = k + C;
            float s = 0.0f, dp = 0.0f;
            for (int d = 0; d < hs; d++) {
                s += sq[warp][d] * load(k[d]);
                dp += so[warp][d] * load(v[d]);
            }
            ds = expf(s * scale - L) * (dp - D);
        }
        for (int j = 0; j < WARP && k0 + j <= t; j++) {
            float dsj = __shfl_sync(0xffffffffu, ds, j);
            const T* k = base + (long long)(k0 + j) * ld + C;
            for (int i = 0; i < SIMT_D; i++) {
                int d = lane + i * WARP;
                if (d < hs) dq[i] += dsj * load(k[d]);
            }
        }
    }
    T* dQ = dqkv + ((long long)b * T_ + t) * ld + (long long)h * hs;
    for (int i = 0; i < SIMT_D; i++) {
        int d = lane + i * WARP;
        if (d < hs) dQ[d] = store<T>(dq[i] * scale);
    }
}

// dK and dV of one key row per warp.
template <typename T>
__device__ void attention_backward_dkdv_simt(T* dqkv, const T* qkv, const T* dout, const float* lse, const float* Dv,
                                             int B, int T_, int C, int NH, float scale) {
    __shared__ float sk[4][SIMT_D * WARP], sv[4][SIMT_D * WARP];
    int warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
    long long row = (long long)blockIdx.x * 4 + warp;
    if (row >= (long long)B * NH * T_) return;
    int u = (int)(row % T_), bh = (int)(row / T_), b = bh / NH, h = bh % NH, hs = C / NH;
    long long ld = 3LL * C;
    const T* base = qkv + (long long)b * T_ * ld + (long long)h * hs;
    const T* dO = dout + (long long)b * T_ * C + (long long)h * hs;
    for (int d = lane; d < hs; d += WARP) {
        sk[warp][d] = load(base[(long long)u * ld + C + d]);
        sv[warp][d] = load(base[(long long)u * ld + 2 * C + d]);
    }
    __syncwarp();
    float dk[SIMT_D], dv[SIMT_D];
    for (int i = 0; i < SIMT_D; i++) dk[i] = dv[i] = 0.0f;
    for (int t0 = u; t0 < T_; t0 += WARP) {
        int t = t0 + lane;
        float p = 0.0f, ds = 0.0f;
        if (t < T_) {
            const T* q = base + (long long)t * ld;
            const T* o = dO + (long long)t * C;
            float s = 0.0f, dp = 0.0f;
            for (int d = 0; d < hs; d++) {
                s += load(q[d]) * sk[warp][d];
                dp += load(o[d]) * sv[warp][d];
            }
            long long r = (long long)bh * T_ + t;
            p = expf(s * scale - lse[r]);
            ds = p * (dp - Dv[r]);
        }
        for (int j = 0; j < WARP && t0 + j < T_; j++) {
            float pj = __shfl_sync(0xffffffffu, p, j), dsj = __shfl_sync(0xffffffffu, ds, j);
            const T* q = base + (long long)(t0 + j) * ld;
            const T* o = dO + (long long)(t0 + j) * C;
            for (int i = 0; i < SIMT_D; i++) {
                int d = lane + i * WARP;
                if (d < hs) {
                    dv[i] += pj * load(o[d]);
                    dk[i] += dsj * load(q[d]);
                }
            }
        }
    }
    T* dK = dqkv + ((long long)b * T_ + u) * ld + C + (long long)h * hs;
    for (int i = 0; i < SIMT_D; i++) {
        int d = lane + i * WARP;
        if (d < hs) {
            dK[d] = store<T>(dk[i] * scale);
            dK[C + d] = store<T>(dv[i]);
        }
    }
}

#define ATTENTION(S, T)                                                                                            \
    extern "C" __global__ void attention_backward_d_##S(float* D, const T* dout, const T* out, int B, int T_,     \
                                                        int C, int NH) {                                           \
        attention_backward_d(D, dout, out, B, T_, C, NH);                                                          \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(128)                                                              \
        attention_forward_simt_##S(T* out, float* lse, const T* qkv, int B, int T_, int C, int NH, float scale) {  \
        attention_forward_simt(out, lse, qkv, B, T_, C, NH, scale);                                                \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(128)                                                              \
        attention_backward_dq_simt_##S(T* dqkv, const T* qkv, const T* dout, const float* lse, const float* D,     \
                                       int B, int T_, int C, int NH, float scale) {                                \
        attention_backward_dq_simt(dqkv, qkv, dout, lse, D, B, T_, C, NH, scale);                                  \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(128)                                                              \
        attention_backward_dkdv_simt_##S(T* dqkv, const T* qkv, const T* dout, const float* lse, const float* D,   \
                                         int B, int T_, int C, int NH, float scale) {                              \
        attention_backward_dkdv_simt(dqkv, qkv, dout, lse, D, B, T_, C, NH, scale);                                \
    }
DTYPES(ATTENTION)
