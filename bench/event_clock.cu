// How fine the GPU's event clock is, and whether its step makes the alternation of docs/benchmarks.md ("Where the
// alternation comes from: the L2 flush"): a queued sample of a call that queues two kernels and synchronizes,
// timed one call per sample behind the L2 flush, takes turns high and low by about 1 us.
//
//   clock     the smallest steps of %globaltimer read in a loop on the GPU, and of cudaEventElapsedTime over
//             pairs around kernels of random lengths (a spin on clock64, not on the timer it measures)
//   call      MSE_loss's naive call (a grid-stride sum atomically added, then one thread divides; N = 4096),
//             after 2 s of load (out of the idle clock), 60 samples in the harness's queued shape (fresh inputs,
//             the flush, the spacer, start, the call's kernels, stop, the call's synchronize, post, end:
//             (stop - start) + (end - post)), in variants:
//               flush        the L2 written before each sample (the harness's default)
//               none         no flush
//               jitter       the flush, and the spacer lengthened by a random 0 - 2 us per sample
//               one kernel   the flush, the sum kernel alone
//               split        the flush, with an event between the two kernels (which one takes turns)
//             each with its median, CV, lag-1 autocorrelation, the even and odd samples' medians, and how many
//             of its times are whole multiples of the clock's step.
//
// Build: nvcc -O3 -arch=sm_90 -I tasks/_harness -o event_clock bench/event_clock.cu; run: ./event_clock
// (one process, nothing else on the GPU), or `bash bench/gpu_run.sh event-clock`. The results are recorded in
// docs/benchmarks.md, "The event clock and the two-kernel call".
#include <cuda_runtime.h>

#define KW_HARNESS_RUNTIME
#include "kw_timed.cuh"
#include "probe_common.cuh"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <vector>

__global__ void timer_steps(unsigned long long* steps, int n) {  // the first n changes of %globaltimer, in ns
  unsigned long long last, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(last));
  for (int k = 0; k < n;) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now != last) {
      steps[k++] = now - last;
      last = now;
    }
  }
}

__global__ void spin_cycles(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void sum_kernel(float* loss, const float* x, const float* y, int n) {
  float partial = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    const float d = x[i] - y[i];
    partial += d * d;
  }
  atomicAdd(loss, partial);
}

__global__ void divide_kernel(float* loss, float n) { *loss = *loss / n; }

static double lag1(const std::vector<double>& v) {
  const double m = mean(v);
  double num = 0, den = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    den += (v[i] - m) * (v[i] - m);
    if (i + 1 < v.size()) num += (v[i] - m) * (v[i + 1] - m);
  }
  return den > 0 ? num / den : 0;
}

// The step of a set of times (ns): the largest of 32 ns .. 2048 ns in 32 ns steps that divides at least 95 % of
// them within 4 ns, or 0 when none does.
static double step_of(const std::vector<double>& ns) {
  double best = 0;
  for (double q = 32; q <= 2048; q += 32) {
    int hits = 0;
    for (double t : ns) {
      const double r = std::fmod(t, q);
      if (r < 4 || q - r < 4) ++hits;
    }
    if (hits >= 0.95 * double(ns.size())) best = q;
  }
  return best;
}

int main() {
  cudaDeviceProp prop{};
  if (!ok(cudaGetDeviceProperties(&prop, 0), "device")) return 1;
  std::printf("device: %s\n\n", prop.name);

  // The clock: %globaltimer's own steps, then the events' over kernels of random lengths.
  const int nsteps = 4096;
  unsigned long long* steps = nullptr;
  if (!ok(cudaMalloc(&steps, nsteps * sizeof(unsigned long long)), "allocate")) return 1;
  timer_steps<<<1, 1>>>(steps, nsteps);
  std::vector<unsigned long long> host(nsteps);
  if (!ok(cudaMemcpy(host.data(), steps, nsteps * sizeof(unsigned long long), cudaMemcpyDeviceToHost), "timer"))
    return 1;
  std::sort(host.begin(), host.end());
  std::printf("%%globaltimer: %d changes; step min %llu ns, median %llu ns, max %llu ns\n", nsteps, host[0],
              host[nsteps / 2], host[nsteps - 1]);
  cudaEvent_t a, b, c, d, e;
  for (cudaEvent_t* ev : {&a, &b, &c, &d, &e})
    if (!ok(cudaEventCreate(ev), "event")) return 1;
  std::mt19937_64 rng(7);
  std::vector<double> elapsed;
  for (int k = 0; k < 400; ++k) {
    const long long cycles = 2000 + (long long)(rng() % 40000);  // about 1 - 21 us at 1980 MHz
    cudaEventRecord(a);
    spin_cycles<<<1, 1>>>(cycles);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    elapsed.push_back(double(ms) * 1e6);
  }
  std::set<long long> distinct;
  for (double t : elapsed) distinct.insert(std::llround(t));
  std::vector<long long> gaps;
  for (auto it = distinct.begin(); std::next(it) != distinct.end(); ++it) gaps.push_back(*std::next(it) - *it);
  std::sort(gaps.begin(), gaps.end());
  std::printf("events: 400 pairs around 1 - 21 us spins: %zu distinct times, smallest gap between them %lld ns, "
              "median gap %lld ns; step %.0f ns\n\n",
              distinct.size(), gaps.empty() ? 0 : gaps[0], gaps.empty() ? 0 : gaps[gaps.size() / 2], step_of(elapsed));

  // The call, in its variants, after 2 s of work: the GPU leaves its idle clock (345 MHz on an H200) only under load,
  // and the first version of this probe (nineteenth session) timed its variants within a second of idle.
  const auto warm_until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < warm_until) {
    spin_cycles<<<prop.multiProcessorCount, 32>>>(1000000);
    if (!ok(cudaDeviceSynchronize(), "warm-up")) return 1;
  }
  const int n = 4096, samples = 60;
  const long long spacer_ns = 30000;
  const size_t flush_bytes = 2 * size_t(prop.l2CacheSize);
  float *x = nullptr, *y = nullptr, *loss = nullptr;
  char* flush = nullptr;
  if (!ok(cudaMalloc(&x, n * sizeof(float)), "allocate") || !ok(cudaMalloc(&y, n * sizeof(float)), "allocate") ||
      !ok(cudaMalloc(&loss, sizeof(float)), "allocate") || !ok(cudaMalloc(&flush, flush_bytes), "allocate"))
    return 1;
  const int threads = 256, blocks = std::min(1024, (n + threads - 1) / threads);
  std::printf("MSE_loss's naive call, N = %d, %d samples, queued, one call per sample (times in us)\n", n, samples);
  std::printf("%-11s %8s %7s %6s %9s %9s %10s %s\n", "variant", "median", "CV %", "lag-1", "even med", "odd med",
              "on step", "first 16 samples");
  const char* names[] = {"flush", "none", "jitter", "one kernel", "split"};
  for (int v = 0; v < 5; ++v) {
    std::vector<double> us, first_kernel;
    std::uniform_int_distribution<long long> jitter(0, 2000);
    for (int r = 0; r < samples + 3; ++r) {  // three warm-up samples, not kept
      fill<<<64, 256>>>(x, n, unsigned(r * 77));
      fill<<<64, 256>>>(y, n, unsigned(r * 77 + 1));
      cudaMemsetAsync(loss, 0, sizeof(float));
      if (v != 1) cudaMemsetAsync(flush, r & 0xff, flush_bytes);
      cudaDeviceSynchronize();
      kw::timed::spacer_kernel<<<1, 1>>>(spacer_ns + (v == 2 ? jitter(rng) : 0));
      cudaEventRecord(a);
      sum_kernel<<<blocks, threads>>>(loss, x, y, n);
      if (v == 4) cudaEventRecord(e);
      if (v != 3) divide_kernel<<<1, 1>>>(loss, float(n));
      cudaEventRecord(b);
      cudaDeviceSynchronize();
      cudaEventRecord(c);
      cudaEventRecord(d);
      cudaEventSynchronize(d);
      float ms = 0, tail = 0, mid = 0;
      cudaEventElapsedTime(&ms, a, b);
      cudaEventElapsedTime(&tail, c, d);
      if (v == 4) cudaEventElapsedTime(&mid, a, e);
      if (r < 3) continue;
      us.push_back(1000.0 * (double(ms) + double(tail)));
      first_kernel.push_back(1000.0 * double(mid));
    }
    if (!ok(cudaGetLastError(), "timing")) return 1;
    std::vector<double> even, odd, ns;
    for (size_t k = 0; k < us.size(); ++k) {
      (k % 2 ? odd : even).push_back(us[k]);
      ns.push_back(us[k] * 1000.0);
    }
    const double q = step_of(elapsed);
    int on_step = 0;
    for (double t : ns) {
      const double r = q > 0 ? std::fmod(t, q) : 1;
      if (q > 0 && (r < 4 || q - r < 4)) ++on_step;
    }
    std::printf("%-11s %8.3f %7.2f %6.2f %9.3f %9.3f %6d/%-3d ", names[v], median(us), 100 * cv(us), lag1(us),
                median(even), median(odd), on_step, int(us.size()));
    for (int k = 0; k < 16; ++k) std::printf("%.2f ", us[k]);
    std::printf("\n");
    if (v == 4) {
      std::vector<double> second;
      for (size_t k = 0; k < us.size(); ++k) second.push_back(us[k] - first_kernel[k]);
      std::printf("%-11s %8.3f %7.2f %6.2f   (start to the event between the kernels)\n", "  sum", median(first_kernel),
                  100 * cv(first_kernel), lag1(first_kernel));
      std::printf("%-11s %8.3f %7.2f %6.2f   (that event to the end)\n", "  divide", median(second), 100 * cv(second),
                  lag1(second));
    }
  }
  return 0;
}
