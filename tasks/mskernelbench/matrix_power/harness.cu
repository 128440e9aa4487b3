// matrix_power: B(N,N) = A(N,N)^P, row-major (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(matrix_power, const elem_t* A, elem_t* B, int N, int P);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N");
    // Entries of variance 1/N: the spectral radius of A is about 1, so the entries of A^P stay
    // near 1/sqrt(N) for every P instead of growing like (N/3)^(P/2) with uniform(-1, 1).
    const double s = std::sqrt(3.0 / double(N));
    c.input<elem_t>("A", N * N).uniform(-s, s);
    c.output<elem_t>("B", N * N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("A"), c.dev<elem_t>("B"), c.iparam("N"), c.iparam("P"));
}

// C = X Y for N x N row-major doubles; i-k-j order in blocks of k, so that the rows of Y in use
// stay in cache (about 0.4 s at N = 1024).
static void matmul(const std::vector<double>& X, const std::vector<double>& Y, std::vector<double>& C, size_t N) {
    std::fill(C.begin(), C.end(), 0.0);
    const size_t kBlock = 64;
    for (size_t kk = 0; kk < N; kk += kBlock) {
        const size_t k_end = std::min(N, kk + kBlock);
        for (size_t i = 0; i < N; ++i) {
            double* c = C.data() + i * N;
            for (size_t k = kk; k < k_end; ++k) {
                const double x = X[i * N + k];
                const double* y = Y.data() + k * N;
                for (size_t j = 0; j < N; ++j) c[j] += x * y[j];
            }
        }
    }
}

// A^P in double by binary powering: A^16 takes 4 products instead of 15 (the powers of A
// commute, so the order of the factors does not matter); at most 5 products (P = 11) for the
// sizes of the spec, about 2 s at N = 1024. P = 0 gives the identity.
static std::vector<double> matrix_power_reference(const std::vector<double>& A, size_t N, long long P) {
    std::vector<double> result(N * N, 0.0), power = A, scratch(N * N);
    for (size_t i = 0; i < N; ++i) result[i * N + i] = 1.0;
    bool identity = true;  // result is still I: the first factor is copied, not multiplied
    for (; P > 0; P >>= 1) {
        if (P & 1) {
            if (identity) {
                result = power;
                identity = false;
            } else {
                matmul(result, power, scratch, N);
                std::swap(result, scratch);
            }
        }
        if (P > 1) {
            matmul(power, power, scratch, N);
            std::swap(power, scratch);
        }
    }
    return result;
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N");
    const elem_t* A = c.host<elem_t>("A");
    std::vector<double> a(N * N);
    for (size_t i = 0; i < N * N; ++i) a[i] = kw::to_double(A[i]);
    const std::vector<double> expected = matrix_power_reference(a, N, c.iparam("P"));
    // The whole of A^P is computed above, so every element is checked (cost 1 per lookup).
    ref.expect("B", 1, [&](size_t i) { return expected[i]; });
}

KW_MAIN(setup, launch, reference)
