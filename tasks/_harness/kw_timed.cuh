// kw_timed.cuh: the device side of checked timing (included by kw_harness.cuh; protocol in
// docs/evaluation.md, "Every timed call is checked").
//
// Two things make a timed call honest:
//   fresh inputs   before every timed call, each input the task drew from a distribution (uniform,
//                  normal, randint) is drawn again on the GPU with a per-call seed, and each input of
//                  distinct values is permuted and rescaled by a power of two (exact, so values stay
//                  distinct), so no call sees contents (or an output) an earlier call saw;
//   checked output after every timed call, outside the timed region, its outputs are compared on the
//                  GPU with the baseline's outputs for the same inputs, with the task's tolerance.
// Inputs the task built by hand (sparsity patterns, index sets, constants) are restored unchanged: their
// meaning depends on their exact contents.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace kw {

// How an input's contents were drawn, so the harness can draw them again (see Buffer::fresh()).
enum class FreshKind { none, uniform, normal, randint, distinct };

struct Fresh {
  FreshKind kind = FreshKind::none;
  double a = 0, b = 0;  // uniform: [a, b); normal: mean a, stddev b; randint: [a, b] inclusive
};

namespace timed {

// Element type codes shared with kw::Type (f32 = 0, bf16 = 1, i32 = 2).
constexpr int kF32 = 0, kBf16 = 1, kI32 = 2;

__device__ __forceinline__ uint64_t mix(uint64_t z) {  // splitmix64's finalizer: a counter-based hash
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__device__ __forceinline__ double unit(uint64_t seed, uint64_t i, uint64_t lane) {  // [0, 1)
  return double(mix(seed ^ mix(i * 2 + lane)) >> 11) * 0x1.0p-53;
}

__device__ __forceinline__ double load(int type, const void* base, size_t i) {
  if (type == kF32) return static_cast<const float*>(base)[i];
  if (type == kBf16) {
    const uint32_t bits = uint32_t(static_cast<const uint16_t*>(base)[i]) << 16;
    return double(__uint_as_float(bits));
  }
  return double(static_cast<const int*>(base)[i]);
}

__device__ __forceinline__ void store(int type, void* base, size_t i, double v) {
  if (type == kF32) static_cast<float*>(base)[i] = float(v);
  else if (type == kBf16) static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(float(v));
  else static_cast<int*>(base)[i] = int(v);
}

// The harness's kernels. They are defined in the harness runtime (kw_runtime.cu) only; a task's harness.cu,
// compiled on its own, sees these declarations (a second definition would clash when the two objects are linked).
// What each does is said at its definition below.
__global__ void redraw_kernel(void* dst, int type, size_t n, uint64_t seed, int kind, double a, double b);
__global__ void permute_kernel(void* dst, const void* src, int type, size_t n, uint64_t mul, uint64_t add,
                               double scale);
__global__ void compare_kernel(const void* got, const void* expected, int type, size_t n, double atol, double rtol,
                               unsigned long long* bad, unsigned long long* first);
__global__ void empty_kernel();
__global__ void spacer_kernel(long long ns);
__global__ void read_flush_kernel(const uint4* p, size_t n, unsigned* sink);

#ifdef KW_HARNESS_RUNTIME
// A fresh draw from the buffer's distribution (uniform, normal, randint).
__global__ void redraw_kernel(void* dst, int type, size_t n, uint64_t seed, int kind, double a, double b) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const double u = unit(seed, i, 0);
    double v;
    if (kind == int(FreshKind::uniform)) {
      v = a + (b - a) * u;
    } else if (kind == int(FreshKind::normal)) {
      const double u1 = 1.0 - u, u2 = unit(seed, i, 1);
      v = a + b * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    } else {  // randint, inclusive
      const double span = b - a + 1.0;
      v = a + floor(u * span);
      if (v > b) v = b;
    }
    store(type, dst, i, v);
  }
}

// Distinct values stay distinct: dst[i] = scale * src[(mul * i + add) mod n] with gcd(mul, n) = 1 (a
// permutation) and, for floating types, scale = +-2^k (exact in float and bf16 for the harness's ranges).
__global__ void permute_kernel(void* dst, const void* src, int type, size_t n, uint64_t mul, uint64_t add,
                               double scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const size_t j = size_t((unsigned __int128)(mul % n) * i % n + add % n) % n;
    if (type == kI32) {
      static_cast<int*>(dst)[i] = static_cast<const int*>(src)[j];
    } else if (type == kF32) {
      static_cast<float*>(dst)[i] = float(double(static_cast<const float*>(src)[j]) * scale);
    } else {
      static_cast<__nv_bfloat16*>(dst)[i] = __float2bfloat16_rn(float(load(kBf16, src, j) * scale));
    }
  }
}

// One timed call's output against the baseline's: counts elements outside |got - expected| <=
// atol + rtol * |expected| (exact for int; NaN never passes) and keeps the lowest failing index.
__global__ void compare_kernel(const void* got, const void* expected, int type, size_t n, double atol, double rtol,
                               unsigned long long* bad, unsigned long long* first) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const double g = load(type, got, i), e = load(type, expected, i);
    bool ok;
    if (type == kI32) ok = g == e;
    else ok = g == e || fabs(g - e) <= atol + rtol * fabs(e);  // false for NaN
    if (!ok) {
      atomicAdd(bad, 1ULL);
      atomicMin(first, (unsigned long long)i);
    }
  }
}

// The floor's kernel: nothing but its launch.
__global__ void empty_kernel() {}

// Queued timing's spacer (Driver::sample): one thread that holds stream 0 for `ns` nanoseconds of the GPU's global
// timer while the host queues a sample behind it.
__global__ void spacer_kernel(long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while ((long long)(now - start) < ns);
}

// The L2 flush by reading (kwbench --l2-flush-mode read): every line of the buffer loaded and none written, so
// the flush leaves no dirty lines for the timed call's first kernel to write back (the experiment of
// docs/benchmarks.md, "Where the alternation comes from"). The buffer holds zeros, so the store never happens;
// it is there so the loads cannot be dropped.
__global__ void read_flush_kernel(const uint4* p, size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}
#endif  // KW_HARNESS_RUNTIME

inline unsigned grid_for(size_t n) {
  const size_t blocks = (n + 255) / 256;
  return unsigned(blocks < 4096 ? (blocks ? blocks : 1) : 4096);
}

}  // namespace timed
}  // namespace kw
