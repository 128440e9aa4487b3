// batch_norm: each column j of x(N,C) normalized with its mean and biased variance over
// the N rows, then scaled by gamma[j] and shifted by beta[j] (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(batch_norm, elem_t* output, const elem_t* input, const elem_t* gamma, const elem_t* beta,
         const float epsilon, const int N, const int C);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N"), C = c.iparam("C");
    c.input<elem_t>("input", N * C).uniform(-1, 1);
    c.input<elem_t>("gamma", C).uniform(-1, 1);
    c.input<elem_t>("beta", C).uniform(-1, 1);
    c.output<elem_t>("output", N * C);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("output"), c.dev<elem_t>("input"), c.dev<elem_t>("gamma"), c.dev<elem_t>("beta"),
                   float(c.constant("epsilon")), c.iparam("N"), c.iparam("C"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N"), C = c.iparam("C");
    const elem_t* x = c.host<elem_t>("input");
    const elem_t* gamma = c.host<elem_t>("gamma");
    const elem_t* beta = c.host<elem_t>("beta");
    const double eps = double(float(c.constant("epsilon")));  // the kernel receives a float
    std::vector<double> mean(C, 0.0), inv_std(C, 0.0);
    for (size_t j = 0; j < C; ++j) {
        double sum = 0;
        for (size_t i = 0; i < N; ++i) sum += kw::to_double(x[i * C + j]);
        mean[j] = sum / double(N);
        double sq = 0;
        for (size_t i = 0; i < N; ++i) {
            const double d = kw::to_double(x[i * C + j]) - mean[j];
            sq += d * d;
        }
        inv_std[j] = 1.0 / std::sqrt(sq / double(N) + eps);
    }
    ref.expect("output", 1, [&](size_t k) {
        const size_t j = k % C;
        return (kw::to_double(x[k]) - mean[j]) * inv_std[j] * kw::to_double(gamma[j]) + kw::to_double(beta[j]);
    });
}

KW_MAIN(setup, launch, reference)
