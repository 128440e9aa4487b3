// MSKernelBench baseline: stencil_2d (FP32), one step of the 5-point stencil on a row-major
// [nx, ny] grid (u[i, j] at i * ny + j); boundary points are copied unchanged.
// Naive: one thread per grid point, all reads from global memory.
#include <cuda_runtime.h>

__global__ void stencil_2d_kernel(float* u_new, const float* u_old, float r, int nx, int ny) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= nx || j >= ny) return;
    size_t idx = (size_t)i * ny + j;
    if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1) {
        u_new[idx] = u_old[idx];
    } else {
        float center = u_old[idx];
        u_new[idx] = center + r * (u_old[idx - ny] + u_old[idx + ny] + u_old[idx - 1] + u_old[idx + 1] - 4.0f * center);
    }
}

extern "C" void stencil_2d(float* u_new, const float* u_old, float r, int nx, int ny) {
    dim3 threads(32, 8);
    dim3 blocks((ny + threads.x - 1) / threads.x, (nx + threads.y - 1) / threads.y);
    stencil_2d_kernel<<<blocks, threads>>>(u_new, u_old, r, nx, ny);
    cudaDeviceSynchronize();
}
