// monte_carlo_int: result[0] = (b - a) / N * sum(y_samples), a float in FP32 and a bf16 in
// BF16 (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(monte_carlo_int, const elem_t* y_samples, elem_t* result, float a, float b, int N);

static void setup(kw::Case& c) {
    c.input<elem_t>("y_samples", c.iparam("N")).uniform(0, 1);
    // 0 when the call starts, as in the benchmark: a kernel may atomicAdd into it (the FP32 baseline does).
    c.output<elem_t>("result", 1).zeroed();
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("y_samples"), c.dev<elem_t>("result"), float(c.constant("a")),
                   float(c.constant("b")), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N");
    const double a = float(c.constant("a")), b = float(c.constant("b"));  // the kernel receives floats
    const elem_t* y = c.host<elem_t>("y_samples");
    double sum = 0;  // in double: relative error below 1e-15, negligible against the tolerance
    for (size_t i = 0; i < N; ++i) sum += kw::to_double(y[i]);
    const double integral = (b - a) / double(N) * sum;
    ref.expect("result", 1, [&](size_t) { return integral; });
}

KW_MAIN(setup, launch, reference)
