// softmax: each row of x(N,C) mapped to exp(x - max) / sum(exp(x - max)) (see
// spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(softmax, elem_t* out, const elem_t* input, int N, int C);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N"), C = c.iparam("C");
    c.input<elem_t>("input", N * C).uniform(-1, 1);
    c.output<elem_t>("out", N * C);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("out"), c.dev<elem_t>("input"), c.iparam("N"), c.iparam("C"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N"), C = c.iparam("C");
    const elem_t* x = c.host<elem_t>("input");
    std::vector<double> row_max(N, -INFINITY), row_sum(N, 0.0);
    for (size_t r = 0; r < N; ++r) {
        for (size_t j = 0; j < C; ++j) row_max[r] = std::max(row_max[r], kw::to_double(x[r * C + j]));
        for (size_t j = 0; j < C; ++j) row_sum[r] += std::exp(kw::to_double(x[r * C + j]) - row_max[r]);
    }
    ref.expect("out", 1, [&](size_t i) {
        const size_t r = i / C;
        return std::exp(kw::to_double(x[i]) - row_max[r]) / row_sum[r];
    });
}

KW_MAIN(setup, launch, reference)
