// MSKernelBench baseline: sorting (FP32), ascending in place, as the benchmark's naive merge sort: a scratch copy allocated and freed in each call, and for each run width 1, 2, 4, ... two launches (scratch to data, then data back to scratch, both at that width) in which each thread merges one pair of runs sequentially; blocks of 256 threads, a synchronize after every launch.
#include <cuda_runtime.h>

// Thread t merges the sorted runs src[start, mid) and src[mid, end) into dst[start, end), with
// start = 2 * t * width; equal values take the left run first.
__global__ void sorting_merge_kernel(const float* src, float* dst, int N, int width) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int start = t * 2 * width;
    if (start >= N) return;
    int mid = min(start + width, N);
    int end = min(start + 2 * width, N);
    int i = start, j = mid, k = start;
    while (i < mid && j < end) {
        if (src[i] <= src[j]) {
            dst[k++] = src[i++];
        } else {
            dst[k++] = src[j++];
        }
    }
    while (i < mid) dst[k++] = src[i++];  // also a last run without a partner (N not a power of two)
    while (j < end) dst[k++] = src[j++];
}

extern "C" void sorting(float* data, int N) {
    float* scratch = nullptr;
    cudaMalloc(&scratch, (size_t)N * sizeof(float));
    cudaMemcpy(scratch, data, (size_t)N * sizeof(float), cudaMemcpyDeviceToDevice);
    int threads = 256;
    for (int width = 1; width < N; width *= 2) {
        int pairs = (N + 2 * width - 1) / (2 * width);
        int blocks = (pairs + threads - 1) / threads;
        sorting_merge_kernel<<<blocks, threads>>>(scratch, data, N, width);
        cudaDeviceSynchronize();
        sorting_merge_kernel<<<blocks, threads>>>(data, scratch, N, width);  // the same width again
        cudaDeviceSynchronize();
    }
    cudaMemcpy(data, scratch, (size_t)N * sizeof(float), cudaMemcpyDeviceToDevice);
    cudaFree(scratch);
    cudaDeviceSynchronize();
}
