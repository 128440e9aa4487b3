// MSKernelBench baseline: hinge_loss (BF16), loss[i] = max(0, 1 - y p) in float, rounded once, as the benchmark's naive FP32 kernel (one thread per sample, blocks of 1024; its BF16 one launches a single block and covers only 1024 samples).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void hinge_loss_bf16_kernel(__nv_bfloat16* loss, const __nv_bfloat16* predictions, const int* targets,
                                       int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float y = targets[i] == 1 ? 1.0f : -1.0f;
        loss[i] = __float2bfloat16(fmaxf(0.0f, 1.0f - y * __bfloat162float(predictions[i])));
    }
}

extern "C" void hinge_loss_bf16(__nv_bfloat16* loss, const __nv_bfloat16* predictions, const int* targets, int N) {
    int threads = 1024;
    hinge_loss_bf16_kernel<<<(N + threads - 1) / threads, threads>>>(loss, predictions, targets, N);
    cudaDeviceSynchronize();
}
