// Kernel table and launch loop for the host emulator (see cuda_host_shim.h).
// emu_launch takes kernel parameters the way cuLaunchKernel does: an array of
// pointers, one per parameter, each pointing at that parameter's value.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

using EkEmuFn = std::function<void(void**)>;

template <typename... Args, std::size_t... I>
void ek_emu_invoke(void (*k)(Args...), void** p, std::index_sequence<I...>) {
    k(*static_cast<std::remove_cv_t<Args>*>(p[I])...);
}

template <typename... Args> EkEmuFn ek_emu_wrap(void (*k)(Args...)) {
    return [k](void** p) { ek_emu_invoke(k, p, std::index_sequence_for<Args...>{}); };
}

std::unordered_map<std::string, EkEmuFn>& ek_emu_table();

extern "C" int emu_launch(const char* name, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                          unsigned bz, void** params) {
    auto it = ek_emu_table().find(name);
    if (it == ek_emu_table().end()) return 1;
    const EkEmuFn& fn = it->second;
    gridDim = dim3{gx, gy, gz};
    blockDim = dim3{bx, by, bz};
    const unsigned nthreads = bx * by * bz;
    for (unsigned z = 0; z < gz; ++z)
        for (unsigned y = 0; y < gy; ++y)
            for (unsigned x = 0; x < gx; ++x) {
                std::barrier<> bar(nthreads);
                ek_emu_barrier = &bar;
                std::vector<std::thread> threads;
                threads.reserve(nthreads);
                for (unsigned t = 0; t < nthreads; ++t)
                    threads.emplace_back([&, t] {
                        blockIdx = dim3{x, y, z};
                        threadIdx = dim3{t % bx, (t / bx) % by, t / (bx * by)};
                        fn(params);
                    });
                for (auto& th : threads) th.join();
            }
    return 0;
}
