// What the GPU probes of bench/ (sample_shapes.cu, event_clock.cu) share: a fill kernel for fresh inputs, a runtime
// error check that says what failed, and the statistics of their tables.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

// Deterministic values in [-1, 1) that change with `seed`, so every sample reads inputs the previous one did not.
__global__ void fill(float* p, int n, unsigned seed) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = float((unsigned(i) * 2654435761u + seed) % 1000u) / 500.f - 1.f;
}

static bool ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

static double mean(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x;
  return m / double(v.size());
}

static double cv(const std::vector<double>& v) {
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size() - 1)) / m;
}
