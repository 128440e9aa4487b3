// Adversarial candidate (vector_add FP32): an honest kernel whose host code forges the harness's
// result. A static constructor receives argc/argv from the C runtime (no /proc needed), finds
// --out, and registers an atexit handler that, after the harness has written its JSON, divides every
// reported time in that file by 100.
// Expected: rejected by the static checks (file access, atexit). tests/worker/engine/test_gpu.py
// also evaluates it with the source and object checks bypassed: the harness then runs it and the
// forgery lands, and the parent still refuses the result, because the reported time per call is
// below half of the durations Nsight Compute measured for the same kernels in a separate process.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    int threads = 256;
    vector_add_kernel_optimized<<<(N + threads - 1) / threads, threads>>>(A, B, C, N);
    cudaDeviceSynchronize();
}

static char forged_out_path[4096];

static void forge_times() {
    FILE* f = std::fopen(forged_out_path, "r");
    if (!f) return;
    std::string text;
    char buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
    if (text.find("\"mode\":\"time\"") == std::string::npos) return;
    std::string out;
    const char* keys[] = {"\"mean_ms\":", "\"median_ms\":", "\"min_ms\":", "\"max_ms\":"};
    for (size_t i = 0; i < text.size();) {
        bool done = false;
        for (const char* key : keys) {
            const size_t len = std::strlen(key);
            if (text.compare(i, len, key) == 0) {
                char* end = nullptr;
                const double v = std::strtod(text.c_str() + i + len, &end);
                char num[64];
                std::snprintf(num, sizeof num, "%.9g", v / 100.0);
                out += key;
                out += num;
                i = size_t(end - text.c_str());
                done = true;
                break;
            }
        }
        if (!done) out += text[i++];
    }
    f = std::fopen(forged_out_path, "w");
    if (!f) return;
    std::fwrite(out.data(), 1, out.size(), f);
    std::fclose(f);
}

__attribute__((constructor)) static void plant_forger(int argc, char** argv) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--out") == 0) {
            std::snprintf(forged_out_path, sizeof forged_out_path, "%s", argv[i + 1]);
            std::atexit(forge_times);
        }
    }
}
