// selu: output = lambda * x if x > 0 else lambda * alpha * (exp(x) - 1) (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(selu, elem_t* output, const elem_t* input, const int N, float alpha, float lambda);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N");
    c.input<elem_t>("input", N).uniform(-1, 1);
    c.output<elem_t>("output", N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("output"), c.dev<elem_t>("input"), c.iparam("N"), float(c.constant("alpha")),
                   float(c.constant("lambda")));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const elem_t* x = c.host<elem_t>("input");
    const double alpha = float(c.constant("alpha"));  // the values the kernel receives
    const double lambda = float(c.constant("lambda"));
    ref.expect("output", 1, [&](size_t i) {
        const double v = kw::to_double(x[i]);
        return v > 0 ? lambda * v : lambda * alpha * std::expm1(v);
    });
}

KW_MAIN(setup, launch, reference)
