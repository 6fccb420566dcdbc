// Embedding lookup (gather rows) and its gradient (scatter-add rows).
//
// Both run one thread per element of the gathered block (n_idx rows x row_len)
// in a grid-stride loop. Negative indices count from the end, as in NumPy; an
// index out of range sets *bad = 1 (the host turns that into an IndexError)
// and is otherwise skipped. Scatter-add uses atomicAdd, so a row picked several
// times receives every contribution.
#include "common.cuh"

__device__ __forceinline__ void ek_atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void ek_atomic_add(double* p, double v) { atomicAdd(p, v); }  // sm_60+
__device__ __forceinline__ void ek_atomic_add(long long* p, long long v) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));  // two's complement
}

template <typename T>
__global__ void gather_rows(const T* __restrict__ table, const long long* __restrict__ idx, T* __restrict__ out,
                            long long n_idx, long long rows, long long row_len, int* __restrict__ bad) {
    const long long n = n_idx * row_len;
    EK_GRID_STRIDE(e, n) {
        const long long i = e / row_len, j = e - i * row_len;
        long long r = idx[i];
        if (r < 0) r += rows;
        if (r < 0 || r >= rows) {
            *bad = 1;
            out[e] = T(0);
        } else {
            out[e] = table[r * row_len + j];
        }
    }
}

template <typename T>
__global__ void scatter_add_rows(const T* __restrict__ src, const long long* __restrict__ idx, T* __restrict__ out,
                                 long long n_idx, long long rows, long long row_len, int* __restrict__ bad) {
    const long long n = n_idx * row_len;
    EK_GRID_STRIDE(e, n) {
        const long long i = e / row_len, j = e - i * row_len;
        long long r = idx[i];
        if (r < 0) r += rows;
        if (r < 0 || r >= rows)
            *bad = 1;
        else
            ek_atomic_add(out + r * row_len + j, src[e]);
    }
}
