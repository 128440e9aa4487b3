// cross_entropy_loss: loss = -sum over Y[i] != 0 of Y[i] * log(max(X[i], 1e-8)) over C classes, X and Y
// probability vectors; a float scalar in both precisions, zeroed before every call (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(cross_entropy_loss, float* loss, const elem_t* X, const elem_t* Y, const int C);

// As the benchmark's test: uniform(0, 1) draws divided by their sum (entries about 2u / C).
static void probability_vector(kw::Buffer& b) {
    std::vector<double> u(b.count());
    double sum = 0;
    for (double& v : u) sum += (v = b.rng().uniform01());
    b.fill([&](size_t i) { return u[i] / sum; });
}

static void setup(kw::Case& c) {
    const size_t C = c.iparam("C");
    probability_vector(c.input<elem_t>("X", C));
    probability_vector(c.input<elem_t>("Y", C));
    c.output<float>("loss", 1).zeroed();  // the benchmark's kernels accumulate into it with atomicAdd
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<float>("loss"), c.dev<elem_t>("X"), c.dev<elem_t>("Y"), c.iparam("C"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t C = c.iparam("C");
    const elem_t* X = c.host<elem_t>("X");
    const elem_t* Y = c.host<elem_t>("Y");
    const double x_floor = double(1e-8f);  // the float the kernels compare with
    double sum = 0;
    for (size_t i = 0; i < C; ++i) {
        const double y = kw::to_double(Y[i]);
        if (y != 0) sum -= y * std::log(std::max(kw::to_double(X[i]), x_floor));
    }
    ref.expect("loss", 1, [&](size_t) { return sum; });
}

KW_MAIN(setup, launch, reference)
