// layer_norm: Y = (x - mean) / sqrt(var + epsilon) * w + b over one vector of length N,
// biased variance (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(layer_norm, elem_t* output, const elem_t* input, const elem_t* weight, const elem_t* bias,
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
    double sum = 0;
    for (size_t i = 0; i < N; ++i) sum += kw::to_double(x[i]);
    const double mean = sum / double(N);
    double sq = 0;
    for (size_t i = 0; i < N; ++i) sq += (kw::to_double(x[i]) - mean) * (kw::to_double(x[i]) - mean);
    const double eps = double(float(c.constant("epsilon")));  // the kernel receives a float
    const double inv_std = 1.0 / std::sqrt(sq / double(N) + eps);
    ref.expect("output", 1, [&](size_t i) {
        return (kw::to_double(x[i]) - mean) * inv_std * kw::to_double(w[i]) + kw::to_double(b[i]);
    });
}

KW_MAIN(setup, launch, reference)
