// Elementwise kernels: map (one input), zip (two inputs), where (three inputs).
//
// One thread per output element in a grid-stride loop. The *_contig kernels are
// the fast path (every operand contiguous, same shape); the *_strided kernels
// walk any strides, including stride 0 (broadcasting) and negative strides, and
// also write through output strides (index_add writes into a strided view).
//
// meta layouts (long long, in global memory, copied to shared memory per block):
//   map:   [ndim, shape[ndim], in_strides[ndim], out_strides[ndim]]
//   zip:   [ndim, shape[ndim], a_strides[ndim], b_strides[ndim], out_strides[ndim]]
//   where: [ndim, shape[ndim], c_strides[ndim], a_strides[ndim], b_strides[ndim], out_strides[ndim]]
#include "common.cuh"

// ---- unary functors ---------------------------------------------------------
// One struct per kernel declared in engine/ops.py, named Op + the kernel's name in CamelCase
// (engine.backends.cuda_backend.functor_name); OpIdentity is the cast / copy.
struct OpIdentity { template <typename T> __device__ T operator()(T x) const { return x; } };
struct OpNeg { template <typename T> __device__ T operator()(T x) const { return -x; } };
struct OpExp { template <typename T> __device__ T operator()(T x) const { return ek_exp(x); } };
struct OpLog { template <typename T> __device__ T operator()(T x) const { return ek_log(x); } };
struct OpReciprocal { template <typename T> __device__ T operator()(T x) const { return T(1) / x; } };
struct OpRelu {
    template <typename T> __device__ T operator()(T x) const { return (x > T(0) || ek_isnan(x)) ? x : T(0); }
};
struct OpStep { template <typename T> __device__ T operator()(T x) const { return x > T(0) ? T(1) : T(0); } };
struct OpSin { template <typename T> __device__ T operator()(T x) const { return ek_sin(x); } };
struct OpCos { template <typename T> __device__ T operator()(T x) const { return ek_cos(x); } };
struct OpTan { template <typename T> __device__ T operator()(T x) const { return ek_tan(x); } };
struct OpSqrt { template <typename T> __device__ T operator()(T x) const { return ek_sqrt(x); } };
struct OpSigmoid {
    // exp of a non-positive number only: no overflow for large |x|.
    template <typename T> __device__ T operator()(T x) const {
        if (x >= T(0)) return T(1) / (T(1) + ek_exp(-x));
        T e = ek_exp(x);
        return e / (T(1) + e);
    }
};

// ---- binary functors --------------------------------------------------------
struct OpAdd { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct OpSub { template <typename T> __device__ T operator()(T a, T b) const { return a - b; } };
struct OpMul { template <typename T> __device__ T operator()(T a, T b) const { return a * b; } };
struct OpDiv { template <typename T> __device__ T operator()(T a, T b) const { return a / b; } };
struct OpPow { template <typename T> __device__ T operator()(T a, T b) const { return ek_pow(a, b); } };
struct OpMaximum {  // NaN-propagating, as numpy.maximum
    template <typename T> __device__ T operator()(T a, T b) const {
        return ek_isnan(a) ? a : (ek_isnan(b) ? b : (a >= b ? a : b));
    }
};
struct OpLt { template <typename T> __device__ bool operator()(T a, T b) const { return a < b; } };
struct OpLe { template <typename T> __device__ bool operator()(T a, T b) const { return a <= b; } };
struct OpGt { template <typename T> __device__ bool operator()(T a, T b) const { return a > b; } };
struct OpGe { template <typename T> __device__ bool operator()(T a, T b) const { return a >= b; } };
struct OpEq { template <typename T> __device__ bool operator()(T a, T b) const { return a == b; } };
struct OpNe { template <typename T> __device__ bool operator()(T a, T b) const { return a != b; } };

// Copy `len` meta words to shared memory; every thread of the block must call it.
__device__ __forceinline__ void ek_load_meta(long long* dst, const long long* __restrict__ meta, int len) {
    for (int t = threadIdx.x; t < len; t += blockDim.x) dst[t] = meta[t];
    __syncthreads();
}

// ---- map --------------------------------------------------------------------
// The contiguous kernels take four grid-strides per round: four independent loads per
// operand are in flight per thread (a plain grid-stride loop keeps one), which is what
// keeps a memory-bound kernel near copy bandwidth; each of the four sweeps stays coalesced.
template <typename TI, typename TO, typename F>
__global__ void map_contig(const TI* __restrict__ a, TO* __restrict__ out, long long n) {
    F f;
    const long long stride = (long long)blockDim.x * gridDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const TI a0 = a[i], a1 = a[i + stride], a2 = a[i + 2 * stride], a3 = a[i + 3 * stride];
        out[i] = static_cast<TO>(f(a0));
        out[i + stride] = static_cast<TO>(f(a1));
        out[i + 2 * stride] = static_cast<TO>(f(a2));
        out[i + 3 * stride] = static_cast<TO>(f(a3));
    }
    for (; i < n; i += stride) out[i] = static_cast<TO>(f(a[i]));
}

template <typename TI, typename TO, typename F>
__global__ void map_strided(const TI* __restrict__ a, TO* __restrict__ out, long long n,
                            const long long* __restrict__ meta) {
    __shared__ long long m[1 + 3 * EK_MAX_DIMS];
    ek_load_meta(m, meta, 1 + 3 * (int)meta[0]);
    const int nd = (int)m[0];
    const long long *shape = m + 1, *sa = m + 1 + nd, *so = m + 1 + 2 * nd;
    F f;
    EK_GRID_STRIDE(i, n) { out[ek_offset(i, nd, shape, so)] = static_cast<TO>(f(a[ek_offset(i, nd, shape, sa)])); }
}

// ---- zip --------------------------------------------------------------------
template <typename T, typename TO, typename F>
__global__ void zip_contig(const T* __restrict__ a, const T* __restrict__ b, TO* __restrict__ out, long long n) {
    F f;
    const long long stride = (long long)blockDim.x * gridDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const T a0 = a[i], a1 = a[i + stride], a2 = a[i + 2 * stride], a3 = a[i + 3 * stride];
        const T b0 = b[i], b1 = b[i + stride], b2 = b[i + 2 * stride], b3 = b[i + 3 * stride];
        out[i] = static_cast<TO>(f(a0, b0));
        out[i + stride] = static_cast<TO>(f(a1, b1));
        out[i + 2 * stride] = static_cast<TO>(f(a2, b2));
        out[i + 3 * stride] = static_cast<TO>(f(a3, b3));
    }
    for (; i < n; i += stride) out[i] = static_cast<TO>(f(a[i], b[i]));
}

template <typename T, typename TO, typename F>
__global__ void zip_strided(const T* __restrict__ a, const T* __restrict__ b, TO* __restrict__ out, long long n,
                            const long long* __restrict__ meta) {
    __shared__ long long m[1 + 4 * EK_MAX_DIMS];
    ek_load_meta(m, meta, 1 + 4 * (int)meta[0]);
    const int nd = (int)m[0];
    const long long *shape = m + 1, *sa = m + 1 + nd, *sb = m + 1 + 2 * nd, *so = m + 1 + 3 * nd;
    F f;
    EK_GRID_STRIDE(i, n) {
        out[ek_offset(i, nd, shape, so)] =
            static_cast<TO>(f(a[ek_offset(i, nd, shape, sa)], b[ek_offset(i, nd, shape, sb)]));
    }
}

// ---- where ------------------------------------------------------------------
template <typename T>
__global__ void where_strided(const bool* __restrict__ c, const T* __restrict__ a, const T* __restrict__ b,
                              T* __restrict__ out, long long n, const long long* __restrict__ meta) {
    __shared__ long long m[1 + 5 * EK_MAX_DIMS];
    ek_load_meta(m, meta, 1 + 5 * (int)meta[0]);
    const int nd = (int)m[0];
    const long long *shape = m + 1, *sc = m + 1 + nd, *sa = m + 1 + 2 * nd, *sb = m + 1 + 3 * nd,
                    *so = m + 1 + 4 * nd;
    EK_GRID_STRIDE(i, n) {
        out[ek_offset(i, nd, shape, so)] =
            c[ek_offset(i, nd, shape, sc)] ? a[ek_offset(i, nd, shape, sa)] : b[ek_offset(i, nd, shape, sb)];
    }
}
