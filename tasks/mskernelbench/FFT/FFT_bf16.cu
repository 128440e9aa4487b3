// MSKernelBench baseline: FFT (BF16), forward unnormalized radix-2 DFT, as the benchmark's naive version: per call, the inputs copied into fresh device buffers, a bit-reversal table and a twiddle table computed on the host and uploaded, one permutation kernel, then one butterfly kernel per stage (one thread per butterfly, blocks of 256, a synchronize after each launch), the result copied to the outputs and every buffer freed. The data are stored as bf16 between stages (each butterfly reads bf16, computes in float and rounds its two results) and the twiddles are bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>

__global__ void FFT_bf16_bit_reverse_kernel(__nv_bfloat16* work_real, __nv_bfloat16* work_img,
                                            const __nv_bfloat16* in_real, const __nv_bfloat16* in_img, int N,
                                            const int* bit_rev) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    int src = bit_rev[i];
    work_real[i] = in_real[src];
    work_img[i] = in_img[src];
}

// Stage s combines pairs span / 2 apart inside groups of span = 2^s; the pair at offset p in its
// group uses the twiddle exp(-2 pi i p / span), which is table entry p * N / span.
__global__ void FFT_bf16_butterfly_kernel(__nv_bfloat16* re, __nv_bfloat16* im, const __nv_bfloat16* tw_real,
                                          const __nv_bfloat16* tw_img, int N, int stage) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= N / 2) return;
    int span = 1 << stage;
    int half = span / 2;
    int top = (t / half) * span + t % half;
    int bottom = top + half;
    float wr = __bfloat162float(tw_real[(t % half) * (N >> stage)]);
    float wi = __bfloat162float(tw_img[(t % half) * (N >> stage)]);
    float ar = __bfloat162float(re[top]), ai = __bfloat162float(im[top]);
    float br = __bfloat162float(re[bottom]), bi = __bfloat162float(im[bottom]);
    float xr = wr * br - wi * bi;
    float xi = wr * bi + wi * br;
    re[top] = __float2bfloat16(ar + xr);
    im[top] = __float2bfloat16(ai + xi);
    re[bottom] = __float2bfloat16(ar - xr);
    im[bottom] = __float2bfloat16(ai - xi);
}

extern "C" void FFT_bf16(const __nv_bfloat16* input_real, const __nv_bfloat16* input_img, __nv_bfloat16* output_real,
                         __nv_bfloat16* output_img, int N) {
    int log_n = 0;
    while ((1 << log_n) < N) ++log_n;
    size_t bytes = (size_t)N * sizeof(__nv_bfloat16);
    size_t tw_bytes = (size_t)(N / 2) * sizeof(__nv_bfloat16);

    __nv_bfloat16 *in_real, *in_img, *work_real, *work_img, *tw_real, *tw_img;
    int* bit_rev;
    cudaMalloc(&in_real, bytes);
    cudaMalloc(&in_img, bytes);
    cudaMalloc(&work_real, bytes);
    cudaMalloc(&work_img, bytes);
    cudaMemcpy(in_real, input_real, bytes, cudaMemcpyDeviceToDevice);
    cudaMemcpy(in_img, input_img, bytes, cudaMemcpyDeviceToDevice);

    // Host tables, rebuilt on every call: bit-reversed indices and exp(-2 pi i k / N), k < N / 2
    // (the angle rounded to float, then cos and sin in double).
    int* h_bit_rev = new int[N];
    for (int i = 0; i < N; ++i) {
        int r = 0;
        for (int b = 0; b < log_n; ++b) r = (r << 1) | ((i >> b) & 1);
        h_bit_rev[i] = r;
    }
    __nv_bfloat16* h_tw_real = new __nv_bfloat16[N / 2];
    __nv_bfloat16* h_tw_img = new __nv_bfloat16[N / 2];
    const double pi = 3.14159265358979323846;
    for (int k = 0; k < N / 2; ++k) {
        double angle = (float)(-2.0 * pi * k / N);
        h_tw_real[k] = __float2bfloat16((float)std::cos(angle));
        h_tw_img[k] = __float2bfloat16((float)std::sin(angle));
    }
    cudaMalloc(&bit_rev, (size_t)N * sizeof(int));
    cudaMemcpy(bit_rev, h_bit_rev, (size_t)N * sizeof(int), cudaMemcpyHostToDevice);
    cudaMalloc(&tw_real, tw_bytes);
    cudaMalloc(&tw_img, tw_bytes);
    cudaMemcpy(tw_real, h_tw_real, tw_bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(tw_img, h_tw_img, tw_bytes, cudaMemcpyHostToDevice);

    int threads = 256;
    FFT_bf16_bit_reverse_kernel<<<(N + threads - 1) / threads, threads>>>(work_real, work_img, in_real, in_img, N,
                                                                          bit_rev);
    cudaDeviceSynchronize();
    for (int stage = 1; stage <= log_n; ++stage) {
        FFT_bf16_butterfly_kernel<<<(N / 2 + threads - 1) / threads, threads>>>(work_real, work_img, tw_real, tw_img,
                                                                                N, stage);
        cudaDeviceSynchronize();
    }
    cudaMemcpy(output_real, work_real, bytes, cudaMemcpyDeviceToDevice);
    cudaMemcpy(output_img, work_img, bytes, cudaMemcpyDeviceToDevice);

    cudaFree(in_real);
    cudaFree(in_img);
    cudaFree(work_real);
    cudaFree(work_img);
    cudaFree(bit_rev);
    cudaFree(tw_real);
    cudaFree(tw_img);
    delete[] h_bit_rev;
    delete[] h_tw_real;
    delete[] h_tw_img;
    cudaDeviceSynchronize();
}
