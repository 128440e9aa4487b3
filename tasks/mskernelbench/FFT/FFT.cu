// MSKernelBench baseline: FFT (FP32), forward DFT X_k = sum_n x_n exp(-2 pi i k n / N),
// unnormalized, natural order; N a power of two.
//
// Naive iterative radix-2 Cooley-Tukey (as in the benchmark): a bit-reversal permutation from
// the input into the output arrays, then log2(N) butterfly passes in place on the outputs,
// one launch per pass, one thread per butterfly, each thread computing its own twiddle factor.
#include <cuda_runtime.h>

__global__ void FFT_bit_reverse_kernel(const float* input_real, const float* input_img, float* output_real,
                                       float* output_img, int N, int log_n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        int j = log_n == 0 ? 0 : (int)(__brev((unsigned int)i) >> (32 - log_n));
        output_real[i] = input_real[j];
        output_img[i] = input_img[j];
    }
}

// One pass: butterflies of span 2 * half; twiddle exp(-2 pi i pos / (2 * half)).
__global__ void FFT_butterfly_kernel(float* re, float* im, int N, int half) {
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

extern "C" void FFT(const float* input_real, const float* input_img, float* output_real, float* output_img, int N) {
    int log_n = 0;
    while ((1 << log_n) < N) ++log_n;
    int threads = 256;
    FFT_bit_reverse_kernel<<<(N + threads - 1) / threads, threads>>>(input_real, input_img, output_real, output_img, N,
                                                                    log_n);
    int butterflies = N / 2;
    for (int half = 1; half < N; half *= 2) {
        FFT_butterfly_kernel<<<(butterflies + threads - 1) / threads, threads>>>(output_real, output_img, N, half);
    }
    cudaDeviceSynchronize();
}
