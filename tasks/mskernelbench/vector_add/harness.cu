// vector_add: C = A + B (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(vector_add, const elem_t* A, const elem_t* B, elem_t* C, int N);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N");
    c.input<elem_t>("A", N).uniform(-1, 1);
    c.input<elem_t>("B", N).uniform(-1, 1);
    c.output<elem_t>("C", N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("A"), c.dev<elem_t>("B"), c.dev<elem_t>("C"), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const elem_t* A = c.host<elem_t>("A");
    const elem_t* B = c.host<elem_t>("B");
    ref.expect("C", 1, [&](size_t i) { return kw::to_double(A[i]) + kw::to_double(B[i]); });
}

KW_MAIN(setup, launch, reference)
