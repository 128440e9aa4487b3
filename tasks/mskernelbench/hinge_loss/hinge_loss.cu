// MSKernelBench baseline: hinge_loss (FP32), one loss per sample:
// max(0, 1 - p) for label 1, max(0, 1 + p) for label 0. Naive: one thread per sample.
#include <cuda_runtime.h>

__global__ void hinge_loss_kernel(float* loss, const float* predictions, const int* targets, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float y = (targets[i] == 1) ? 1.0f : -1.0f;
        loss[i] = fmaxf(0.0f, 1.0f - y * predictions[i]);
    }
}

extern "C" void hinge_loss(float* loss, const float* predictions, const int* targets, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    hinge_loss_kernel<<<blocks, threads>>>(loss, predictions, targets, N);
    cudaDeviceSynchronize();
}
