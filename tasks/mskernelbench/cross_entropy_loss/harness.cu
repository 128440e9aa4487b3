// cross_entropy_loss: loss = -sum_i Y[i] * log(X[i]) over C classes, X and Y probability
// vectors (strictly positive); a float scalar in both precisions (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(cross_entropy_loss, float* loss, const elem_t* X, const elem_t* Y, const int C);

static void setup(kw::Case& c) {
    const size_t C = c.iparam("C");
    c.input<elem_t>("X", C).probabilities();  // uniform(0.01, 1) / sum: all > 0
    c.input<elem_t>("Y", C).probabilities();
    c.output<float>("loss", 1);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<float>("loss"), c.dev<elem_t>("X"), c.dev<elem_t>("Y"), c.iparam("C"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t C = c.iparam("C");
    const elem_t* X = c.host<elem_t>("X");
    const elem_t* Y = c.host<elem_t>("Y");
    double sum = 0;
    for (size_t i = 0; i < C; ++i) {
        const double x = kw::to_double(X[i]);
        if (!(x > 0)) kw::fail("harness_error", "cross_entropy_loss: X[" + std::to_string(i) + "] is not positive");
        sum -= kw::to_double(Y[i]) * std::log(x);
    }
    ref.expect("loss", 1, [&](size_t) { return sum; });
}

KW_MAIN(setup, launch, reference)
