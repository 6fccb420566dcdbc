// Shared helpers for the engine's CUDA kernels.
//
// Compiled by NVRTC (cupy.RawModule), by `nvcc --ptx` in CI, and by g++ through
// tests/cuda_emulator/cuda_host_shim.h (the host emulator), so this file uses no
// standard headers: only built-in types and CUDA's device math functions.
#pragma once

#define EK_MAX_DIMS 16

// Grid-stride loop over [0, n): correct for any grid size.
#define EK_GRID_STRIDE(i, n)                                                        \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);   \
         i += (long long)blockDim.x * gridDim.x)

// Storage offset (in elements) of linear index `lin` of a row-major `shape`
// walked with `strides`; stride 0 is how broadcasting is expressed.
__device__ __forceinline__ long long ek_offset(long long lin, int ndim, const long long* shape,
                                              const long long* strides) {
    long long off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
        long long s = shape[d];
        long long ix = lin % s;
        lin /= s;
        off += ix * strides[d];
    }
    return off;
}

// Typed math: one overload per storage type, so templates pick single or double precision.
__device__ __forceinline__ float ek_exp(float x) { return expf(x); }
__device__ __forceinline__ double ek_exp(double x) { return exp(x); }
__device__ __forceinline__ float ek_log(float x) { return logf(x); }
__device__ __forceinline__ double ek_log(double x) { return log(x); }
__device__ __forceinline__ float ek_sin(float x) { return sinf(x); }
__device__ __forceinline__ double ek_sin(double x) { return sin(x); }
__device__ __forceinline__ float ek_cos(float x) { return cosf(x); }
__device__ __forceinline__ double ek_cos(double x) { return cos(x); }
__device__ __forceinline__ float ek_tan(float x) { return tanf(x); }
__device__ __forceinline__ double ek_tan(double x) { return tan(x); }
__device__ __forceinline__ float ek_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double ek_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float ek_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double ek_pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ long long ek_pow(long long x, long long y) {
    if (y < 0) return (x == 1) ? 1 : (x == -1 ? ((y & 1) ? -1 : 1) : 0);
    long long r = 1;
    while (y) { if (y & 1) r *= x; x *= x; y >>= 1; }
    return r;
}
template <typename T> __device__ __forceinline__ bool ek_isnan(T x) { return x != x; }

// Lowest value of a type: the identity of max.
template <typename T> struct EkLowest;
template <> struct EkLowest<float> { __device__ static float value() { return __int_as_float(0xff800000); } };
template <> struct EkLowest<double> {
    __device__ static double value() { return __longlong_as_double(0xfff0000000000000ULL); }
};
template <> struct EkLowest<long long> { __device__ static long long value() { return -9223372036854775807LL - 1; } };
