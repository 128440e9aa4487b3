// prefix_sum: inclusive scan, output[i] = input[0] + ... + input[i] (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(prefix_sum, elem_t* output, const elem_t* input, const int N);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N");
    c.input<elem_t>("input", N).uniform(-1, 1);
    c.output<elem_t>("output", N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("output"), c.dev<elem_t>("input"), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N");
    const elem_t* x = c.host<elem_t>("input");
    std::vector<double> scan(N);  // exact: N <= 2^18 terms of 8 or 24 bits fit in a double
    double sum = 0;
    for (size_t i = 0; i < N; ++i) scan[i] = (sum += kw::to_double(x[i]));
    ref.expect("output", 1, [&](size_t i) { return scan[i]; });
}

KW_MAIN(setup, launch, reference)
