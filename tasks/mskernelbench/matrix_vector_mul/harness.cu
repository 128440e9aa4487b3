// matrix_vector_mul: y(M) = A(M,N) x(N), A row-major (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(matrix_vector_mul, const elem_t* A, const elem_t* x, elem_t* y, int M, int N);

static void setup(kw::Case& c) {
    const size_t M = c.iparam("M"), N = c.iparam("N");
    c.input<elem_t>("A", M * N).uniform(-1, 1);
    c.input<elem_t>("x", N).uniform(-1, 1);
    c.output<elem_t>("y", M);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("A"), c.dev<elem_t>("x"), c.dev<elem_t>("y"), c.iparam("M"), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N");
    const elem_t* A = c.host<elem_t>("A");
    const elem_t* x = c.host<elem_t>("x");
    // N multiply-adds per element of y (at most 2048 * 65536 in all: a full check).
    ref.expect("y", double(N), [&](size_t i) {
        const elem_t* row = A + i * N;
        double sum = 0;
        for (size_t j = 0; j < N; ++j) sum += kw::to_double(row[j]) * kw::to_double(x[j]);
        return sum;
    });
}

KW_MAIN(setup, launch, reference)
