// MSKernelBench baseline: stencil_3d (BF16), one 7-point stencil step on a row-major [nx, ny, nz] grid with the boundary copied, as the benchmark's naive kernels: 4 x 4 x 4 blocks with threadIdx.x running over the outermost index i (so neighbouring threads are ny * nz elements apart), one kernel for the interior points, in float with one rounding to bf16, then a second over the whole grid that copies the boundary.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void stencil_3d_bf16_interior_kernel(__nv_bfloat16* u_new, const __nv_bfloat16* u_old, float r,
                                                int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i < 1 || i >= nx - 1 || j < 1 || j >= ny - 1 || k < 1 || k >= nz - 1) return;
    int plane = ny * nz;
    int idx = i * plane + j * nz + k;
    float center = __bfloat162float(u_old[idx]);
    float left = __bfloat162float(u_old[idx - plane]);
    float right = __bfloat162float(u_old[idx + plane]);
    float up = __bfloat162float(u_old[idx + nz]);
    float down = __bfloat162float(u_old[idx - nz]);
    float front = __bfloat162float(u_old[idx + 1]);
    float back = __bfloat162float(u_old[idx - 1]);
    u_new[idx] = __float2bfloat16(center + r * (left + right + up + down + front + back - 6.0f * center));
}

__global__ void stencil_3d_bf16_boundary_kernel(__nv_bfloat16* u_new, const __nv_bfloat16* u_old, int nx, int ny,
                                                int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= nx || j >= ny || k >= nz) return;
    if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || k == 0 || k == nz - 1) {
        int idx = (i * ny + j) * nz + k;
        u_new[idx] = u_old[idx];
    }
}

extern "C" void stencil_3d_bf16(__nv_bfloat16* u_new, const __nv_bfloat16* u_old, float r, int nx, int ny, int nz) {
    dim3 block(4, 4, 4);
    dim3 grid((nx + block.x - 1) / block.x, (ny + block.y - 1) / block.y, (nz + block.z - 1) / block.z);
    stencil_3d_bf16_interior_kernel<<<grid, block>>>(u_new, u_old, r, nx, ny, nz);
    stencil_3d_bf16_boundary_kernel<<<grid, block>>>(u_new, u_old, nx, ny, nz);
    cudaDeviceSynchronize();
}
