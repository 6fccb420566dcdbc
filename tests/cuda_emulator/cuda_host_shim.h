// Host shim: lets g++ compile engine/kernels/*.cu unchanged and run them on CPU threads.
//
// A launch runs one block at a time; each block's threads are real std::threads, and
// __syncthreads() is a std::barrier across them, so shared-memory tiling and tree
// reductions execute with their real synchronisation. __shared__ becomes a function
// static (one copy, used by the one block that is running). atomicAdd takes a mutex.
#pragma once
#include <barrier>
#include <cmath>
#include <cstring>
#include <math.h>
#include <mutex>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

// CUDA's built-in 16-byte vector types (the ones the kernels use).
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(16) double2 {
    double x, y;
};

struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
inline std::barrier<>* ek_emu_barrier = nullptr;
inline std::mutex ek_emu_atomic_mutex;

inline void __syncthreads() { ek_emu_barrier->arrive_and_wait(); }

inline float __int_as_float(unsigned int bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}
inline double __longlong_as_double(unsigned long long bits) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
}

template <typename T> inline T atomicAdd(T* p, T v) {
    std::lock_guard<std::mutex> lock(ek_emu_atomic_mutex);
    T old = *p;
    *p = old + v;
    return old;
}
