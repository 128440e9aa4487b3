// How fast the host runs in this process (docs/benchmarks.md, "The host's speed between processes"): the host
// work of a host-bound baseline, timed on its own, and a runtime round trip. Run it in several processes with
// bench/host_speed.py, which builds it and prints how far each process's figures lie from the others'.
//
//   host    FFT's per-call host tables at N = 2^14 (bit reversal, then cos and sin in double of N / 2 angles;
//           tasks/mskernelbench/FFT/FFT.cu builds them in every call), steady_clock
//   thread  the same span on CLOCK_THREAD_CPUTIME_ID: equal to `host` unless the thread was off its CPU (steal
//           or preemption inside the span)
//   trip    a launch of an empty kernel, a 4-byte copy to the host and a synchronize: the round trip
//           layer_norm's and rms_norm's baselines make several times per call; "nan" without a GPU
//
// Output, one line: cpu <cpu at the end> host <median> <p10> thread <median> trip <median> <p10> (microseconds,
// over 250 repetitions after 50 of warm-up). With an argument B: only the host tables, in B blocks of 300 one after
// another in this one process, a line per block: block <k> cpu <cpu> host <median> (whether the speed moves inside
// a process, over seconds).
//
// Build: nvcc -O2 -arch=sm_90 -o host_speed bench/host_speed.cu
#include <cuda_runtime.h>

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace {

double clock_us(clockid_t id) {
  timespec t{};
  clock_gettime(id, &t);
  return double(t.tv_sec) * 1e6 + double(t.tv_nsec) / 1e3;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1))];
}

__global__ void touch(float* x) {
  if (threadIdx.x == 0) x[0] += 1.0f;
}

volatile float sink;  // keeps the tables' work from being optimized away

void host_tables(int n, int log_n) {
  std::vector<int> bit_rev(n);
  for (int i = 0; i < n; ++i) {
    int r = 0;
    for (int b = 0; b < log_n; ++b) r = (r << 1) | ((i >> b) & 1);
    bit_rev[i] = r;
  }
  std::vector<float> tw_real(n / 2), tw_img(n / 2);
  const double pi = 3.14159265358979323846;
  for (int k = 0; k < n / 2; ++k) {
    const double angle = (float)(-2.0 * pi * k / n);
    tw_real[k] = (float)std::cos(angle);
    tw_img[k] = (float)std::sin(angle);
  }
  sink = sink + tw_real[n / 4] + tw_img[n / 8] + float(bit_rev[n - 1]);
}

}  // namespace

int main(int argc, char** argv) {
  constexpr int kWarmup = 50, kReps = 300, kN = 1 << 14, kLogN = 14;
  if (argc > 1) {  // blocks of host tables only: does the speed move inside one process?
    const int blocks = std::atoi(argv[1]);
    std::vector<double> block;
    for (int k = 0; k < blocks; ++k) {
      block.clear();
      for (int rep = 0; rep < kReps; ++rep) {
        const double w0 = clock_us(CLOCK_MONOTONIC);
        host_tables(kN, kLogN);
        block.push_back(clock_us(CLOCK_MONOTONIC) - w0);
      }
      std::printf("block %d cpu %d host %.2f\n", k, sched_getcpu(), quantile(block, 0.5));
    }
    return 0;
  }
  float* dev = nullptr;
  const bool gpu = cudaMalloc(&dev, sizeof(float)) == cudaSuccess;
  std::vector<double> host, thread, trip;
  for (int rep = 0; rep < kReps; ++rep) {
    const double w0 = clock_us(CLOCK_MONOTONIC), c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
    host_tables(kN, kLogN);
    const double w1 = clock_us(CLOCK_MONOTONIC), c1 = clock_us(CLOCK_THREAD_CPUTIME_ID);
    if (gpu) {
      float out = 0;
      touch<<<1, 32>>>(dev);
      cudaMemcpy(&out, dev, sizeof(float), cudaMemcpyDeviceToHost);
      cudaDeviceSynchronize();
    }
    const double w2 = clock_us(CLOCK_MONOTONIC);
    if (rep < kWarmup) continue;
    host.push_back(w1 - w0);
    thread.push_back(c1 - c0);
    if (gpu) trip.push_back(w2 - w1);
  }
  std::printf("cpu %d host %.2f %.2f thread %.2f trip %.2f %.2f\n", sched_getcpu(), quantile(host, 0.5),
              quantile(host, 0.1), quantile(thread, 0.5), quantile(trip, 0.5), quantile(trip, 0.1));
  return 0;
}
