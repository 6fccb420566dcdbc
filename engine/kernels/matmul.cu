// Batched matrix multiply, tiled through shared memory (the lecture's tiling),
// with a register tile per thread.
//
// A block computes a MM_BM x MM_BN tile of C for one batch entry. K is walked in
// steps of MM_BK: the block's 256 threads copy an MM_BM x MM_BK tile of A and an
// MM_BK x MM_BN tile of B into shared memory (zeros past the matrix edges, so any
// M, N, K work), then each thread accumulates an 8 x 8 block of outputs in
// registers: rows ty*4 + q and 64 + ty*4 + q, cols tx*4 + q and 64 + tx*4 + q
// (q < 4). Each group of 4 is read from shared memory as one 16-byte load; a
// warp's loads then touch consecutive words (no bank conflicts), and the 4-word
// padding of As makes the transposed stores of the A tile conflict-free too.
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
#define MM_HALF 64       // MM_BM / 2: a thread's two groups of rows (and cols) are this far apart
#define MM_PAD 4         // As row padding (keeps 16-byte alignment: (MM_BM + MM_PAD) % 4 == 0)

// Four consecutive shared-memory values into registers: one 16-byte load where the type allows.
template <typename T> struct EkLoad4 {
    __device__ static void load(const T* p, T* r) { r[0] = p[0]; r[1] = p[1]; r[2] = p[2]; r[3] = p[3]; }
};
template <> struct EkLoad4<float> {
    __device__ static void load(const float* p, float* r) {
        const float4 v = *reinterpret_cast<const float4*>(p);
        r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
    }
};
template <> struct EkLoad4<double> {
    __device__ static void load(const double* p, double* r) {
        const double2 a = *reinterpret_cast<const double2*>(p), b = *reinterpret_cast<const double2*>(p + 2);
        r[0] = a.x; r[1] = a.y; r[2] = b.x; r[3] = b.y;
    }
};

// MIN_BLOCKS: blocks per SM the compiler must leave room for. 2 caps float at 128
// registers a thread (more warps to hide latency, a few spills); 1 lets it use up to 255.
// Both are compiled; the backend picks one (benchmarks/gpu_check.py times both).
template <typename T, int MIN_BLOCKS>
__global__ void __launch_bounds__(MM_THREADS, MIN_BLOCKS) matmul_tiled(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, long long M,
                             long long N, long long K, long long batch, const long long* __restrict__ meta) {
    __shared__ long long m[5 + 3 * EK_MAX_DIMS];
    // Tiles live in double2 arrays so that they are 16-byte aligned for EkLoad4.
    __shared__ double2 a_tile[(MM_BK * (MM_BM + MM_PAD) * sizeof(T) + 15) / 16];
    __shared__ double2 b_tile[(MM_BK * MM_BN * sizeof(T) + 15) / 16];
    T(*As)[MM_BM + MM_PAD] = reinterpret_cast<T(*)[MM_BM + MM_PAD]>(a_tile);  // A tile k-major: As[k][row]
    T(*Bs)[MM_BN] = reinterpret_cast<T(*)[MM_BN]>(b_tile);
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

        // Each thread copies the same positions of every tile; only k0 moves:
        // A rows a_r + 32 p at column k0 + a_k, B rows k0 + b_k + 2 p at column b_c.
        const int a_r = tid / MM_BK, a_k = tid % MM_BK;
        const int b_k = tid / MM_BN, b_c = tid % MM_BN;
        const long long gc = col0 + b_c;
        const T* a_ptr = Ab + (row0 + a_r) * a_rs + a_k * a_cs;
        const T* b_ptr = Bb + b_k * b_rs + gc * b_cs;
        for (long long k0 = 0; k0 < K; k0 += MM_BK) {
            const bool a_k_ok = k0 + a_k < K;
#pragma unroll
            for (int p = 0; p < (MM_BM * MM_BK) / MM_THREADS; ++p) {
                const int r = a_r + p * (MM_THREADS / MM_BK);
                As[a_k][r] = (a_k_ok && row0 + r < M) ? a_ptr[p * (MM_THREADS / MM_BK) * a_rs] : T(0);
            }
#pragma unroll
            for (int p = 0; p < (MM_BK * MM_BN) / MM_THREADS; ++p) {
                const int kk = b_k + p * (MM_THREADS / MM_BN);
                Bs[kk][b_c] = (k0 + kk < K && gc < N) ? b_ptr[p * (MM_THREADS / MM_BN) * b_rs] : T(0);
            }
            a_ptr += MM_BK * a_cs;
            b_ptr += MM_BK * b_rs;
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < MM_BK; ++kk) {
                T ra[MM_TM], rb[MM_TN];
                EkLoad4<T>::load(&As[kk][ty * 4], ra);
                EkLoad4<T>::load(&As[kk][MM_HALF + ty * 4], ra + 4);
                EkLoad4<T>::load(&Bs[kk][tx * 4], rb);
                EkLoad4<T>::load(&Bs[kk][MM_HALF + tx * 4], rb + 4);
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
            const long long r = row0 + (i < 4 ? ty * 4 + i : MM_HALF + ty * 4 + i - 4);
#pragma unroll
            for (int j = 0; j < MM_TN; ++j) {
                const long long c = col0 + (j < 4 ? tx * 4 + j : MM_HALF + tx * 4 + j - 4);
                if (r < M && c < N) Cb[r * N + c] = acc[i][j];
            }
        }
    }
}
