// MSKernelBench baseline: stencil_3d (BF16), one step of the 7-point stencil on a row-major
// [nx, ny, nz] grid (u[i, j, k] at (i * ny + j) * nz + k), computed in float and rounded once;
// boundary points are copied unchanged. Naive: one thread per grid point, all reads from
// global memory.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void stencil_3d_bf16_kernel(__nv_bfloat16* u_new, const __nv_bfloat16* u_old, float r, int nx, int ny,
                                       int nz) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int i = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= nx || j >= ny || k >= nz) return;
    size_t plane = (size_t)ny * nz;
    size_t idx = (size_t)i * plane + (size_t)j * nz + k;
    if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || k == 0 || k == nz - 1) {
        u_new[idx] = u_old[idx];
    } else {
        float center = __bfloat162float(u_old[idx]);
        float neighbours = __bfloat162float(u_old[idx - plane]) + __bfloat162float(u_old[idx + plane]) +
                           __bfloat162float(u_old[idx - nz]) + __bfloat162float(u_old[idx + nz]) +
                           __bfloat162float(u_old[idx - 1]) + __bfloat162float(u_old[idx + 1]);
        u_new[idx] = __float2bfloat16(center + r * (neighbours - 6.0f * center));
    }
}

extern "C" void stencil_3d_bf16(__nv_bfloat16* u_new, const __nv_bfloat16* u_old, float r, int nx, int ny, int nz) {
    dim3 threads(32, 4, 2);
    dim3 blocks((nz + threads.x - 1) / threads.x, (ny + threads.y - 1) / threads.y, (nx + threads.z - 1) / threads.z);
    stencil_3d_bf16_kernel<<<blocks, threads>>>(u_new, u_old, r, nx, ny, nz);
    cudaDeviceSynchronize();
}
