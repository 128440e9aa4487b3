// MSKernelBench baseline: FFT (BF16), forward DFT X_k = sum_n x_n exp(-2 pi i k n / N),
// unnormalized, natural order; N a power of two. Computed in float, rounded once to bf16.
//
// Naive iterative radix-2 Cooley-Tukey (as in the benchmark): a bit-reversal permutation from
// the input into float scratch arrays, then log2(N) butterfly passes in place on them, one
// launch per pass, one thread per butterfly, each thread computing its own twiddle factor;
// a last kernel rounds the result to the bf16 outputs.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void FFT_bf16_bit_reverse_kernel(const __nv_bfloat16* input_real, const __nv_bfloat16* input_img,
                                            float* re, float* im, int N, int log_n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        int j = log_n == 0 ? 0 : (int)(__brev((unsigned int)i) >> (32 - log_n));
        re[i] = __bfloat162float(input_real[j]);
        im[i] = __bfloat162float(input_img[j]);
    }
}

// One pass: butterflies of span 2 * half; twiddle exp(-2 pi i pos / (2 * half)).
__global__ void FFT_bf16_butterfly_kernel(float* re, float* im, int N, int half) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < N / 2) {
        int pos = t % half;
        int i1 = (t / half) * 2 * half + pos;
        int i2 = i1 + half;
        float s, c;
        sincospif(-(float)pos / (float)half, &s, &c);
        float xr = re[i2], xi = im[i2];
        float tr = c * xr - s * xi;
        float ti = c * xi + s * xr;
        float ur = re[i1], ui = im[i1];
        re[i1] = ur + tr;
        im[i1] = ui + ti;
        re[i2] = ur - tr;
        im[i2] = ui - ti;
    }
}

__global__ void FFT_bf16_store_kernel(const float* re, const float* im, __nv_bfloat16* output_real,
                                      __nv_bfloat16* output_img, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        output_real[i] = __float2bfloat16(re[i]);
        output_img[i] = __float2bfloat16(im[i]);
    }
}

// Float scratch (real and imaginary parts), kept between calls (grown when N grows) so that
// each call does not pay for cudaMalloc/cudaFree.
static float* FFT_bf16_re = nullptr;
static float* FFT_bf16_im = nullptr;
static int FFT_bf16_capacity = 0;

extern "C" void FFT_bf16(const __nv_bfloat16* input_real, const __nv_bfloat16* input_img,
                         __nv_bfloat16* output_real, __nv_bfloat16* output_img, int N) {
    if (N > FFT_bf16_capacity) {
        cudaFree(FFT_bf16_re);
        cudaFree(FFT_bf16_im);
        cudaMalloc(&FFT_bf16_re, (size_t)N * sizeof(float));
        cudaMalloc(&FFT_bf16_im, (size_t)N * sizeof(float));
        FFT_bf16_capacity = N;
    }
    int log_n = 0;
    while ((1 << log_n) < N) ++log_n;
    int threads = 256;
    int blocks = (N + threads - 1) / threads;
    FFT_bf16_bit_reverse_kernel<<<blocks, threads>>>(input_real, input_img, FFT_bf16_re, FFT_bf16_im, N, log_n);
    int butterflies = N / 2;
    for (int half = 1; half < N; half *= 2) {
        FFT_bf16_butterfly_kernel<<<(butterflies + threads - 1) / threads, threads>>>(FFT_bf16_re, FFT_bf16_im, N,
                                                                                      half);
    }
    FFT_bf16_store_kernel<<<blocks, threads>>>(FFT_bf16_re, FFT_bf16_im, output_real, output_img, N);
    cudaDeviceSynchronize();
}
