// rms_norm: Y = X / sqrt(mean(X^2) + epsilon) * w + b over one vector of length N (see
// spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(rms_norm, elem_t* output, const elem_t* input, const elem_t* weight, const elem_t* bias,
         const float epsilon, const int N);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N");
    c.input<elem_t>("input", N).uniform(-1, 1);
    c.input<elem_t>("weight", N).uniform(-1, 1);
    c.input<elem_t>("bias", N).uniform(-1, 1);
    c.output<elem_t>("output", N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("output"), c.dev<elem_t>("input"), c.dev<elem_t>("weight"), c.dev<elem_t>("bias"),
                   float(c.constant("epsilon")), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N");
    const elem_t* x = c.host<elem_t>("input");
    const elem_t* w = c.host<elem_t>("weight");
    const elem_t* b = c.host<elem_t>("bias");
    double sum_sq = 0;
    for (size_t i = 0; i < N; ++i) sum_sq += kw::to_double(x[i]) * kw::to_double(x[i]);
    const double denom = std::sqrt(sum_sq / double(N) + double(float(c.constant("epsilon"))));  // eps under the root
    ref.expect("output", 1, [&](size_t i) {
        return kw::to_double(x[i]) / denom * kw::to_double(w[i]) + kw::to_double(b[i]);
    });
}

KW_MAIN(setup, launch, reference)
