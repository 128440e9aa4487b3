// matrix_mul: C(M,N) = A(M,K) B(K,N), row-major (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(matrix_mul, const elem_t* A, const elem_t* B, elem_t* C, int M, int N, int K);

static void setup(kw::Case& c) {
    const size_t M = c.iparam("M"), N = c.iparam("N"), K = c.iparam("K");
    c.input<elem_t>("A", M * K).uniform(-1, 1);
    c.input<elem_t>("B", K * N).uniform(-1, 1);
    c.output<elem_t>("C", M * N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("A"), c.dev<elem_t>("B"), c.dev<elem_t>("C"), c.iparam("M"), c.iparam("N"),
                   c.iparam("K"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N"), K = c.iparam("K");
    const elem_t* A = c.host<elem_t>("A");
    const elem_t* B = c.host<elem_t>("B");
    std::vector<double> Bt(K * N);  // B transposed, so each dot product reads contiguously
    for (size_t k = 0; k < K; ++k)
        for (size_t n = 0; n < N; ++n) Bt[n * K + k] = kw::to_double(B[k * N + n]);
    // K multiply-adds per element: the big sizes are checked on a sample of C.
    ref.expect("C", double(K), [&](size_t i) {
        const elem_t* a = A + (i / N) * K;
        const double* b = Bt.data() + (i % N) * K;
        double sum = 0;
        for (size_t k = 0; k < K; ++k) sum += kw::to_double(a[k]) * b[k];
        return sum;
    });
}

KW_MAIN(setup, launch, reference)
