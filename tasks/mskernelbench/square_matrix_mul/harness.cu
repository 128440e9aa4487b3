// square_matrix_mul: C(M,M) = A(M,M) B(M,M), row-major (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

// A and B are non-const in the benchmark's interface; they are still inputs (checked unchanged).
KW_ENTRY(square_matrix_mul, elem_t* A, elem_t* B, elem_t* C, int M);

static void setup(kw::Case& c) {
    const size_t M = c.iparam("M");
    c.input<elem_t>("A", M * M).uniform(-1, 1);
    c.input<elem_t>("B", M * M).uniform(-1, 1);
    c.output<elem_t>("C", M * M);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("A"), c.dev<elem_t>("B"), c.dev<elem_t>("C"), c.iparam("M"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t M = c.iparam("M");
    const elem_t* A = c.host<elem_t>("A");
    const elem_t* B = c.host<elem_t>("B");
    std::vector<double> Bt(M * M);  // B transposed, so each dot product reads contiguously
    for (size_t k = 0; k < M; ++k)
        for (size_t j = 0; j < M; ++j) Bt[j * M + k] = kw::to_double(B[k * M + j]);
    // M multiply-adds per element: M = 4096 is checked on a sample of C.
    ref.expect("C", double(M), [&](size_t i) {
        const elem_t* a = A + (i / M) * M;
        const double* b = Bt.data() + (i % M) * M;
        double sum = 0;
        for (size_t k = 0; k < M; ++k) sum += kw::to_double(a[k]) * b[k];
        return sum;
    });
}

KW_MAIN(setup, launch, reference)
