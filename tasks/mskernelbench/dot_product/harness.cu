// dot_product: loss = sum_i X[i] * Y[i], a float scalar in both precisions (see
// spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(dot_product, float* loss, const elem_t* X, const elem_t* Y, const int N);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N");
    c.input<elem_t>("X", N).uniform(-1, 1);
    c.input<elem_t>("Y", N).uniform(-1, 1);
    c.output<float>("loss", 1).zeroed();  // the benchmark zeroes loss before every call; kernels accumulate into it
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<float>("loss"), c.dev<elem_t>("X"), c.dev<elem_t>("Y"), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N");
    const elem_t* X = c.host<elem_t>("X");
    const elem_t* Y = c.host<elem_t>("Y");
    double sum = 0;  // products of bf16 or float values are exact in double
    for (size_t i = 0; i < N; ++i) sum += kw::to_double(X[i]) * kw::to_double(Y[i]);
    ref.expect("loss", 1, [&](size_t) { return sum; });
}

KW_MAIN(setup, launch, reference)
