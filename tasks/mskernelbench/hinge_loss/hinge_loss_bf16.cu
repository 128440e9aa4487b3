// MSKernelBench baseline: hinge_loss (BF16), one loss per sample, computed in float:
// max(0, 1 - p) for label 1, max(0, 1 + p) for label 0. Naive: one thread per sample,
// one rounding per output.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void hinge_loss_bf16_kernel(__nv_bfloat16* loss, const __nv_bfloat16* predictions, const int* targets,
                                       int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float y = (targets[i] == 1) ? 1.0f : -1.0f;
        loss[i] = __float2bfloat16(fmaxf(0.0f, 1.0f - y * __bfloat162float(predictions[i])));
    }
}

extern "C" void hinge_loss_bf16(__nv_bfloat16* loss, const __nv_bfloat16* predictions, const int* targets, int N) {
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    hinge_loss_bf16_kernel<<<blocks, threads>>>(loss, predictions, targets, N);
    cudaDeviceSynchronize();
}
