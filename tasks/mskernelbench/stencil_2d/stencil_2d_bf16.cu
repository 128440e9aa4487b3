// MSKernelBench baseline: stencil_2d (BF16), one 5-point stencil step on a row-major [nx, ny] grid with the boundary copied, as the benchmark's naive kernels: 16 x 16 blocks with threadIdx.x running over the row index i (so neighbouring threads are ny elements apart), one kernel for the interior points, in float with one rounding to bf16, then a second over the whole grid that copies the boundary.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void stencil_2d_bf16_interior_kernel(__nv_bfloat16* u_new, const __nv_bfloat16* u_old, float r, int nx,
                                                int ny) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < 1 || i >= nx - 1 || j < 1 || j >= ny - 1) return;
    int idx = i * ny + j;
    float center = __bfloat162float(u_old[idx]);
    float left = __bfloat162float(u_old[idx - 1]);
    float right = __bfloat162float(u_old[idx + 1]);
    float up = __bfloat162float(u_old[idx + ny]);
    float down = __bfloat162float(u_old[idx - ny]);
    u_new[idx] = __float2bfloat16(center + r * (left + right + up + down - 4.0f * center));
}

__global__ void stencil_2d_bf16_boundary_kernel(__nv_bfloat16* u_new, const __nv_bfloat16* u_old, int nx, int ny) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= nx || j >= ny) return;
    if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1) {
        u_new[i * ny + j] = u_old[i * ny + j];
    }
}

extern "C" void stencil_2d_bf16(__nv_bfloat16* u_new, const __nv_bfloat16* u_old, float r, int nx, int ny) {
    dim3 block(16, 16);
    dim3 grid((nx + block.x - 1) / block.x, (ny + block.y - 1) / block.y);
    stencil_2d_bf16_interior_kernel<<<grid, block>>>(u_new, u_old, r, nx, ny);
    stencil_2d_bf16_boundary_kernel<<<grid, block>>>(u_new, u_old, nx, ny);
    cudaDeviceSynchronize();
}
