// simpson_int: result[0] = sum over the Simpson panels (y[i], y[i+1], y[i+2]), even i <= N - 3, of
// h / 3 (y[i] + 4 y[i+1] + y[i+2]), h = (b - a) / (N - 1): the benchmark's composite rule (for even
// N the last interval is left out); a float in FP32 and a bf16 in BF16 (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(simpson_int, const elem_t* y_samples, elem_t* result, float a, float b, int N);

static void setup(kw::Case& c) {
    if (c.iparam("N") < 3) kw::fail("bad_args", "Simpson integration needs N >= 3 samples");
    c.input<elem_t>("y_samples", c.iparam("N")).uniform(0, 1);
    // 0 when the call starts, as in the benchmark: a kernel may atomicAdd into it (the FP32 baseline does).
    c.output<elem_t>("result", 1).zeroed();
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("y_samples"), c.dev<elem_t>("result"), float(c.constant("a")),
                   float(c.constant("b")), c.iparam("N"));
}

// Weight of y[i] in the bracket: the panels start at the even p <= last = N - 3 rounded down to
// even, and give y[p], y[p+1], y[p+2] the weights 1, 4, 1.
static double simpson_weight(size_t i, size_t N) {
    const size_t last = (N - 3) & ~size_t(1);
    if (i % 2 == 1) return i <= last + 1 ? 4 : 0;
    return (i <= last ? 1 : 0) + (i >= 2 && i - 2 <= last ? 1 : 0);
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N");
    const double a = float(c.constant("a")), b = float(c.constant("b"));  // the kernel receives floats
    const elem_t* y = c.host<elem_t>("y_samples");
    double sum = 0;  // in double: relative error below 1e-15, negligible against the tolerance
    for (size_t i = 0; i < N; ++i) sum += simpson_weight(i, N) * kw::to_double(y[i]);
    const double h = (b - a) / double(N - 1);
    const double integral = h / 3.0 * sum;
    ref.expect("result", 1, [&](size_t) { return integral; });
}

KW_MAIN(setup, launch, reference)
