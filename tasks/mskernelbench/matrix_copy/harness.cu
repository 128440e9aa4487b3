// matrix_copy: B(M,N) = A(M,N), row-major (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

// A is non-const in the benchmark's interface; it is still an input (checked unchanged).
KW_ENTRY(matrix_copy, elem_t* A, elem_t* B, int M, int N);

static void setup(kw::Case& c) {
    const size_t M = c.iparam("M"), N = c.iparam("N");
    c.input<elem_t>("A", M * N).uniform(-1, 1);
    c.output<elem_t>("B", M * N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("A"), c.dev<elem_t>("B"), c.iparam("M"), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const elem_t* A = c.host<elem_t>("A");
    ref.expect("B", 1, [&](size_t i) { return kw::to_double(A[i]); });
}

KW_MAIN(setup, launch, reference)
