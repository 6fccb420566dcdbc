// Reduction along any set of dimensions: one block per output row.
//
// The host puts the kept dims first and the reduced dims last (a permuted view,
// no copy) and sends their shapes and strides separately. Block b handles output
// rows b, b + gridDim.x, ...; its threads stride over the row's `len` elements
// (any length, any strides), each keeping a partial result in a register, then
// combine the partials with a shared-memory tree. blockDim.x must be a power of
// two no larger than EK_REDUCE_THREADS.
//
// meta: [nk, kept_shape[nk], kept_strides[nk], nr, red_shape[nr], red_strides[nr]]
#include "common.cuh"

#define EK_REDUCE_THREADS 256

struct ReduceSum {
    template <typename A> __device__ static A identity() { return A(0); }
    template <typename A> __device__ static A combine(A x, A y) { return x + y; }
};
struct ReduceMax {  // NaN-propagating, as numpy.max
    template <typename A> __device__ static A identity() { return EkLowest<A>::value(); }
    template <typename A> __device__ static A combine(A x, A y) {
        return ek_isnan(x) ? x : (ek_isnan(y) ? y : (x >= y ? x : y));
    }
};

template <typename T, typename Acc, typename R>
__global__ void reduce_rows(const T* __restrict__ a, T* __restrict__ out, long long rows, long long len,
                            const long long* __restrict__ meta) {
    __shared__ long long m[2 + 4 * EK_MAX_DIMS];
    __shared__ Acc partial[EK_REDUCE_THREADS];
    const int meta_len = 2 + 2 * (int)meta[0] + 2 * (int)meta[1 + 2 * meta[0]];
    for (int t = threadIdx.x; t < meta_len; t += blockDim.x) m[t] = meta[t];
    __syncthreads();
    const int nk = (int)m[0];
    const long long *kshape = m + 1, *kstr = m + 1 + nk;
    const int nr = (int)m[1 + 2 * nk];
    const long long *rshape = m + 2 + 2 * nk, *rstr = m + 2 + 2 * nk + nr;
    const int tid = threadIdx.x;

    // `row` depends on blockIdx only, so every thread of a block runs the same
    // iterations and reaches each __syncthreads.
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* base = a + ek_offset(row, nk, kshape, kstr);
        Acc acc = R::template identity<Acc>();
        for (long long j = tid; j < len; j += blockDim.x)
            acc = R::template combine<Acc>(acc, static_cast<Acc>(base[ek_offset(j, nr, rshape, rstr)]));
        partial[tid] = acc;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (tid < s) partial[tid] = R::template combine<Acc>(partial[tid], partial[tid + s]);
            __syncthreads();
        }
        if (tid == 0) out[row] = static_cast<T>(partial[0]);
        __syncthreads();  // partial[] is reused by the next row
    }
}
