// Harness: for each case, seeded inputs, the reference checked on the CPU, the solution's output
// (poisoned with NaN first) checked against the reference with KW_ATOL/KW_RTOL, then both timed with
// CUDA events (3 warm-up calls, KH_BENCHMARK timed calls, the mean per call). The output is poisoned again
// after the warm-up, so what the last timed call left is checked too: a solution that does less work once
// timing starts fails. Prints one "Kernel time" and one "Ref time" line per case, then "Passed" (exit 0), or
// a "Failed" line (exit 1). Where $KW_OUTPUTS names a folder, the last timed call's output of each case is
// also written there (n<N>.bin, raw float32) for the worker to compare with the shipped solution's, outside
// this process (task.yaml correctness.outputs).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#include "reference.h"
#include "vector_add.h"

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t err_ = (call);                                                               \
        if (err_ != cudaSuccess) {                                                               \
            fprintf(stderr, "CUDA error: %s (%s) at %s:%d\n", cudaGetErrorString(err_),          \
                    cudaGetErrorName(err_), __FILE__, __LINE__);                                 \
            return 2;                                                                            \
        }                                                                                        \
    } while (0)

using Impl = void (*)(const float*, const float*, float*, int);

static double env_number(const char* name, double fallback) {
    const char* value = getenv(name);
    return value && *value ? atof(value) : fallback;
}

// The first element of got outside atol + rtol·|ref| (NaN never within), or -1.
static int first_mismatch(const std::vector<float>& got, const std::vector<float>& ref, double atol, double rtol) {
    for (size_t i = 0; i < got.size(); ++i) {
        if (!(std::fabs(got[i] - ref[i]) <= atol + rtol * std::fabs(ref[i]))) return (int)i;
    }
    return -1;
}

static float uniform(uint64_t& state) {  // xorshift64*: the same inputs for the same KW_SEED
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (float)((state * 2685821657736338717ULL) >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

static int time_ms(Impl impl, const float* A, const float* B, float* C, int n, int iters, float* ms) {
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < 3; ++i) impl(A, B, C, n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemset(C, 0xFF, (size_t)n * sizeof(float)));  // NaN again: the timed calls must write C themselves
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventRecord(start));
    for (int i = 0; i < iters; ++i) impl(A, B, C, n);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaDeviceSynchronize());  // any work on another stream is inside the interval too
    CHECK(cudaGetLastError());
    float total = 0.f;
    CHECK(cudaEventElapsedTime(&total, start, stop));
    *ms = total / iters;
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    return 0;
}

int main() {
    const double atol = env_number("KW_ATOL", 1e-6), rtol = env_number("KW_RTOL", 1e-6);
    const int iters = (int)env_number("KH_BENCHMARK", 20);
    uint64_t state = (uint64_t)env_number("KW_SEED", 20251122) | 1;
    const int sizes[] = {1 << 20, 1 << 22, (1 << 24) + 3};
    for (int n : sizes) {
        std::vector<float> a(n), b(n), ref(n), got(n);
        for (int i = 0; i < n; ++i) {
            a[i] = uniform(state);
            b[i] = uniform(state);
        }
        const size_t bytes = (size_t)n * sizeof(float);
        float *A, *B, *C, *R;
        CHECK(cudaMalloc(&A, bytes));
        CHECK(cudaMalloc(&B, bytes));
        CHECK(cudaMalloc(&C, bytes));
        CHECK(cudaMalloc(&R, bytes));
        CHECK(cudaMemcpy(A, a.data(), bytes, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(B, b.data(), bytes, cudaMemcpyHostToDevice));

        reference_vector_add(A, B, R, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(ref.data(), R, bytes, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; ++i) {
            if (ref[i] != a[i] + b[i]) {
                printf("Failed: the reference is wrong at n=%d index %d\n", n, i);
                return 1;
            }
        }

        CHECK(cudaMemset(C, 0xFF, bytes));  // NaN: an element the solution skips fails
        vector_add(A, B, C, n);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(got.data(), C, bytes, cudaMemcpyDeviceToHost));
        if (int i = first_mismatch(got, ref, atol, rtol); i >= 0) {
            printf("Failed: n=%d index %d expected %.8g got %.8g\n", n, i, ref[i], got[i]);
            return 1;
        }

        float kernel_ms = 0.f, ref_ms = 0.f;
        if (time_ms(vector_add, A, B, C, n, iters, &kernel_ms)) return 2;
        CHECK(cudaMemcpy(got.data(), C, bytes, cudaMemcpyDeviceToHost));  // what the last timed call left
        if (int i = first_mismatch(got, ref, atol, rtol); i >= 0) {
            printf("Failed: n=%d the last timed call, index %d expected %.8g got %.8g\n", n, i, ref[i], got[i]);
            return 1;
        }
        if (const char* dir = getenv("KW_OUTPUTS")) {  // correctness.outputs: the worker compares these too
            char path[4096];
            snprintf(path, sizeof path, "%s/n%d.bin", dir, n);
            FILE* f = fopen(path, "wb");
            if (!f || fwrite(got.data(), sizeof(float), n, f) != (size_t)n || fclose(f)) {
                printf("Failed: cannot write %s\n", path);
                return 2;
            }
        }
        if (time_ms(reference_vector_add, A, B, R, n, iters, &ref_ms)) return 2;
        printf("n=%d\n", n);
        printf("Kernel time: %.6f ms\n", kernel_ms);
        printf("Ref time: %.6f ms\n", ref_ms);
        CHECK(cudaFree(A));
        CHECK(cudaFree(B));
        CHECK(cudaFree(C));
        CHECK(cudaFree(R));
    }
    printf("Passed\n");
    return 0;
}
