// The shape of a timed sample, measured on its own (docs/benchmarks.md, "Queued samples"): one process times
// two kernels at several sizes in three shapes and prints one line per (kernel, size, shape). Run it in several
// processes with bench/sample_shapes.py, which builds it and prints how far each median moves between processes.
//
//   A  synchronized: synchronize; start event; launch; cudaDeviceSynchronize; stop event (the harness's default)
//   B  queued: spacer kernel; start event; launch; stop event; wait for the stop event (kwbench --queued 1)
//   C  queued, 20 launches on 20 buffer sets between one event pair (batched)
//   D  queued start, waiting end: spacer; start; launch; cudaDeviceSynchronize; stop (a call that ends in its own
//      synchronize, as MSKernelBench's do, under kwbench --queued 1)
//   E  synchronized start, queued end: synchronize; start; launch; stop; wait for the stop event
//   F  queued, closed at the call's own synchronize: spacer; start; launch; stop; cudaDeviceSynchronize; post;
//      end; the time is (stop - start) + (end - post): D with the stop event recorded where the call synchronizes,
//      its wake-up left out and anything queued after it counted through post..end (kwbench --queued 1 since the
//      twelfth session: tasks/_harness/kw_sync.h)
// D and E split A's host time in two: D keeps the wake-up from the synchronize and the stop's enqueue, E the launch
// latency; whichever carries A's spread between processes is where it lives.
//
// Build: nvcc -O3 -arch=sm_90 -I tasks/_harness -o sample_shapes bench/sample_shapes.cu
// Every sample gets fresh inputs and a flushed L2 first. "fast" is a grid-stride ReLU (a few microseconds),
// "naive" the same ReLU in one block of 256 threads (MSKernelBench's naive element-wise shape).
#include <cuda_runtime.h>

// The harness's own spacer (kw::timed::spacer_kernel), so this measures the sample kwbench --queued 1 takes.
#define KW_HARNESS_RUNTIME
#include "kw_timed.cuh"
#include "probe_common.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

__global__ void relu_fast(const float* __restrict__ x, float* __restrict__ y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = fmaxf(x[i], 0.f);
}

__global__ void relu_naive(const float* x, float* y, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = fmaxf(x[i], 0.f);
}

int main() {
  const int samples = 50, sets = 20;
  const long long spacer_ns = 30000;
  const size_t flush_bytes = size_t(100) << 20;  // twice an H100's or H200's L2
  char* flush = nullptr;
  cudaEvent_t start, stop, post, end;
  if (!ok(cudaMalloc(&flush, flush_bytes), "allocate the L2 flush buffer") || !ok(cudaEventCreate(&start), "event") ||
      !ok(cudaEventCreate(&stop), "event") || !ok(cudaEventCreate(&post), "event") || !ok(cudaEventCreate(&end), "event"))
    return 1;
  const int sizes[] = {1 << 16, 1 << 18, 1 << 20, 1 << 22};
  for (int naive = 0; naive < 2; ++naive) {
    for (int n : sizes) {
      if (naive && n > (1 << 20)) continue;  // milliseconds already: nothing left to learn
      std::vector<float*> xs(sets), ys(sets);
      for (int k = 0; k < sets; ++k)
        if (!ok(cudaMalloc(&xs[k], n * sizeof(float)), "allocate") || !ok(cudaMalloc(&ys[k], n * sizeof(float)), "allocate"))
          return 1;
      auto launch = [&](int k) {
        if (naive) relu_naive<<<1, 256>>>(xs[k], ys[k], n);
        else relu_fast<<<(n / 4 + 255) / 256, 256>>>(xs[k], ys[k], n);
      };
      for (int w = 0; w < 20; ++w) launch(0);
      if (!ok(cudaDeviceSynchronize(), "warm-up")) return 1;
      for (int shape = 0; shape < 6; ++shape) {
        std::vector<double> us;
        for (int r = 0; r < samples; ++r) {
          const int calls = shape == 2 ? sets : 1;
          for (int k = 0; k < calls; ++k) fill<<<264, 256>>>(xs[k], n, unsigned(r * 77 + k));
          cudaMemsetAsync(flush, r & 0xff, flush_bytes);
          cudaDeviceSynchronize();
          // A, D: the host waits inside the span; B, C, D, F: the sample is queued behind the spacer.
          const bool queued = shape != 0 && shape != 4, waits_inside = shape == 0 || shape == 3;
          if (queued) kw::timed::spacer_kernel<<<1, 1>>>(spacer_ns);
          cudaEventRecord(start);
          for (int k = 0; k < calls; ++k) launch(k);
          if (waits_inside) cudaDeviceSynchronize();
          cudaEventRecord(stop);
          if (shape == 5) {  // the call's own synchronize, then what the harness records after it
            cudaDeviceSynchronize();
            cudaEventRecord(post);
            cudaEventRecord(end);
          }
          cudaEventSynchronize(shape == 5 ? end : stop);
          float ms = 0, tail = 0;
          cudaEventElapsedTime(&ms, start, stop);
          if (shape == 5) cudaEventElapsedTime(&tail, post, end);
          us.push_back(1000.0 * (ms + tail) / calls);
        }
        if (!ok(cudaGetLastError(), "timing")) return 1;
        std::printf("%s %d %c %.3f %.4f\n", naive ? "naive" : "fast", n, "ABCDEF"[shape], median(us), cv(us));
      }
      for (int k = 0; k < sets; ++k) {
        cudaFree(xs[k]);
        cudaFree(ys[k]);
      }
    }
  }
  return 0;
}
