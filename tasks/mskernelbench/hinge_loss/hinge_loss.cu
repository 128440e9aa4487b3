// MSKernelBench baseline: hinge_loss (FP32), loss[i] = max(0, 1 - y p) with y = +1 for label 1, -1 for label 0, as the benchmark's naive kernel: one thread per sample, blocks of 1024.
#include <cuda_runtime.h>

__global__ void hinge_loss_kernel(float* loss, const float* predictions, const int* targets, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float y = targets[i] == 1 ? 1.0f : -1.0f;
        loss[i] = fmaxf(0.0f, 1.0f - y * predictions[i]);
    }
}

extern "C" void hinge_loss(float* loss, const float* predictions, const int* targets, int N) {
    int threads = 1024;
    hinge_loss_kernel<<<(N + threads - 1) / threads, threads>>>(loss, predictions, targets, N);
    cudaDeviceSynchronize();
}
