// simpson_int: result[0] = h / 3 * sum_i w_i * y_samples[i], h = (b - a) / (N - 1), with the
// weights of Table 7's formula taken literally (w_0 = w_{N-1} = 1, 4 on odd i <= N-2, 2 on
// even 2 <= i <= N-3, so 0 on i = N-2 when N is even); a float in FP32 and a bf16 in BF16
// (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(simpson_int, const elem_t* y_samples, elem_t* result, float a, float b, int N);

static void setup(kw::Case& c) {
    if (c.iparam("N") < 3) kw::fail("bad_args", "Simpson integration needs N >= 3 samples");
    c.input<elem_t>("y_samples", c.iparam("N")).uniform(0, 1);
    c.output<elem_t>("result", 1);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("y_samples"), c.dev<elem_t>("result"), float(c.constant("a")),
                   float(c.constant("b")), c.iparam("N"));
}

// Weight of y[i] in the bracket of Table 7's formula.
static double simpson_weight(size_t i, size_t N) {
    if (i == 0 || i == N - 1) return 1;  // y_0 + y_{N-1}
    if (i % 2 == 1) return 4;            // 4 * sum over i = 1, 3, 5, ... <= N - 2
    if (i <= N - 3) return 2;            // 2 * sum over i = 2, 4, 6, ... <= N - 3
    return 0;                            // i = N - 2 with N even: in neither sum
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
