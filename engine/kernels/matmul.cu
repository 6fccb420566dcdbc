// Batched matrix multiply, tiled through shared memory (the lecture's tiling),
// with a register tile per thread.
//
// A block computes a MM_BM x MM_BN tile of C for one batch entry. K is walked in
// steps of MM_BK: the block's 256 threads copy an MM_BM x MM_BK tile of A and an
// MM_BK x MM_BN tile of B into shared memory (zeros past the matrix edges, so any
// M, N, K work), then each thread accumulates an MM_TM x MM_TN block of outputs
// in registers. Thread (ty, tx) owns rows ty + 16 i and cols tx + 16 j, so
// neighbouring threads read neighbouring shared-memory words and write
// neighbouring outputs.
//
// A and B are read through strides (a transposed operand needs no copy); batch
// dims are broadcast by stride 0. C is contiguous, shape (batch, M, N).
// meta: [nb, batch_shape[nb], a_batch_strides[nb], b_batch_strides[nb], a_rs, a_cs, b_rs, b_cs]
#include "common.cuh"

#define MM_BM 128
#define MM_BN 128
#define MM_BK 8
#define MM_TM 8
#define MM_TN 8
#define MM_THREADS 256  // (MM_BM / MM_TM) * (MM_BN / MM_TN)

template <typename T>
__global__ void matmul_tiled(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, long long M,
                             long long N, long long K, long long batch, const long long* __restrict__ meta) {
    __shared__ long long m[5 + 3 * EK_MAX_DIMS];
    __shared__ T As[MM_BK][MM_BM];  // A tile stored k-major: As[k][row]
    __shared__ T Bs[MM_BK][MM_BN];
    const int tid = threadIdx.x;
    const int meta_len = 5 + 3 * (int)meta[0];
    for (int t = tid; t < meta_len; t += blockDim.x) m[t] = meta[t];
    __syncthreads();
    const int nb = (int)m[0];
    const long long *bshape = m + 1, *a_bs = m + 1 + nb, *b_bs = m + 1 + 2 * nb;
    const long long a_rs = m[1 + 3 * nb], a_cs = m[2 + 3 * nb], b_rs = m[3 + 3 * nb], b_cs = m[4 + 3 * nb];

    const int ty = tid / (MM_BN / MM_TN), tx = tid % (MM_BN / MM_TN);
    const long long row0 = (long long)blockIdx.y * MM_BM, col0 = (long long)blockIdx.x * MM_BN;

    for (long long z = blockIdx.z; z < batch; z += gridDim.z) {
        const T* Ab = A + ek_offset(z, nb, bshape, a_bs);
        const T* Bb = B + ek_offset(z, nb, bshape, b_bs);
        T acc[MM_TM][MM_TN];
#pragma unroll
        for (int i = 0; i < MM_TM; ++i)
#pragma unroll
            for (int j = 0; j < MM_TN; ++j) acc[i][j] = T(0);

        for (long long k0 = 0; k0 < K; k0 += MM_BK) {
#pragma unroll
            for (int p = 0; p < (MM_BM * MM_BK) / MM_THREADS; ++p) {
                const int e = tid + p * MM_THREADS;
                const int r = e / MM_BK, kk = e % MM_BK;
                const long long gr = row0 + r, gk = k0 + kk;
                As[kk][r] = (gr < M && gk < K) ? Ab[gr * a_rs + gk * a_cs] : T(0);
            }
#pragma unroll
            for (int p = 0; p < (MM_BK * MM_BN) / MM_THREADS; ++p) {
                const int e = tid + p * MM_THREADS;
                const int kk = e / MM_BN, c = e % MM_BN;
                const long long gk = k0 + kk, gc = col0 + c;
                Bs[kk][c] = (gk < K && gc < N) ? Bb[gk * b_rs + gc * b_cs] : T(0);
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < MM_BK; ++kk) {
                T ra[MM_TM], rb[MM_TN];
#pragma unroll
                for (int i = 0; i < MM_TM; ++i) ra[i] = As[kk][ty + (MM_BM / MM_TM) * i];
#pragma unroll
                for (int j = 0; j < MM_TN; ++j) rb[j] = Bs[kk][tx + (MM_BN / MM_TN) * j];
#pragma unroll
                for (int i = 0; i < MM_TM; ++i)
#pragma unroll
                    for (int j = 0; j < MM_TN; ++j) acc[i][j] += ra[i] * rb[j];
            }
            __syncthreads();  // the tiles are overwritten by the next k0
        }

        T* Cb = C + z * M * N;
#pragma unroll
        for (int i = 0; i < MM_TM; ++i) {
            const long long r = row0 + ty + (MM_BM / MM_TM) * i;
#pragma unroll
            for (int j = 0; j < MM_TN; ++j) {
                const long long c = col0 + tx + (MM_BN / MM_TN) * j;
                if (r < M && c < N) Cb[r * N + c] = acc[i][j];
            }
        }
    }
}
