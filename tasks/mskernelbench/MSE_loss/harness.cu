// MSE_loss: loss = (1/N) sum_i (X[i] - Y[i])^2, a float scalar in both precisions, zeroed
// before every call (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(MSE_loss, float* loss, const elem_t* X, const elem_t* Y, int N);  // top-level const of N: same type

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N");
    c.input<elem_t>("X", N).uniform(-1, 1);
    c.input<elem_t>("Y", N).uniform(-1, 1);
    c.output<float>("loss", 1).zeroed();  // the benchmark's kernels accumulate into it with atomicAdd
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<float>("loss"), c.dev<elem_t>("X"), c.dev<elem_t>("Y"), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N");
    const elem_t* X = c.host<elem_t>("X");
    const elem_t* Y = c.host<elem_t>("Y");
    double sum = 0;  // differences and squares of float / bf16 values are exact in double
    for (size_t i = 0; i < N; ++i) {
        const double d = kw::to_double(X[i]) - kw::to_double(Y[i]);
        sum += d * d;
    }
    const double mse = sum / double(N);
    ref.expect("loss", 1, [&](size_t) { return mse; });
}

KW_MAIN(setup, launch, reference)
