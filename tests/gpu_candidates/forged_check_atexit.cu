// Adversarial candidate (vector_add FP32): a kernel that writes zeros, and host code that forges the check. A
// static constructor receives argc/argv from the C runtime, finds --out, and registers an atexit handler that,
// after the harness has written its JSON, replaces it with one saying every size is correct.
// Expected: rejected by the static checks (file access, atexit). tests/worker/engine/test_gpu.py also evaluates
// it with the source and object checks bypassed: the forgery then lands in the candidate's own result file, which
// carries no verdict; kwref, which never runs candidate code, judges the buffers it was sent and finds zeros.
// expect: rejected
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void vector_add_kernel_optimized(const float*, const float*, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = 0.0f;
}

extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    int threads = 256;
    vector_add_kernel_optimized<<<(N + threads - 1) / threads, threads>>>(A, B, C, N);
    cudaDeviceSynchronize();
}

static char forged_out_path[4096];

static void forge_check() {
    FILE* f = std::fopen(forged_out_path, "w");
    if (!f) return;
    std::fputs("{\"mode\": \"check\", \"impl\": \"candidate\", \"sizes\": [", f);
    for (int i = 0; i < 16; ++i) {
        std::fprintf(f, "%s{\"index\": %d, \"correct\": true, \"inputs_unchanged\": true, \"first_mismatch\": null}",
                     i ? ", " : "", i);
    }
    std::fputs("], \"error\": null}\n", f);
    std::fclose(f);
}

__attribute__((constructor)) static void arm(int argc, char** argv, char**) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--out") == 0) std::strncpy(forged_out_path, argv[i + 1], sizeof forged_out_path - 1);
    }
    std::atexit(forge_check);
}
