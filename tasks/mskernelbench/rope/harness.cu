// rope: rotate each interleaved pair (x[m, 2k], x[m, 2k+1]) of input(M, D) by the angle
// m * base^(-2k/D) (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(rope, elem_t* output, const elem_t* input, int M, int D, float base);

static void setup(kw::Case& c) {
    const size_t M = c.iparam("M"), D = c.iparam("D");
    if (D % 2 != 0) kw::fail("bad_args", "rope needs an even D");
    c.input<elem_t>("input", M * D).uniform(-1, 1);
    c.output<elem_t>("output", M * D);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("output"), c.dev<elem_t>("input"), c.iparam("M"), c.iparam("D"),
                   float(c.constant("base")));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t D = c.iparam("D");
    const elem_t* x = c.host<elem_t>("input");
    const double base = float(c.constant("base"));  // the value the kernel receives
    std::vector<double> theta(D / 2);
    for (size_t k = 0; k < D / 2; ++k) theta[k] = std::pow(base, -2.0 * double(k) / double(D));
    ref.expect("output", 1, [&](size_t i) {
        const size_t m = i / D, k = (i % D) / 2;
        const size_t pair = m * D + 2 * k;  // index of x[m, 2k]
        const double phi = double(m) * theta[k];
        const double c0 = std::cos(phi), s0 = std::sin(phi);
        const double x0 = kw::to_double(x[pair]), x1 = kw::to_double(x[pair + 1]);
        return i % 2 == 0 ? x0 * c0 - x1 * s0 : x0 * s0 + x1 * c0;
    });
}

KW_MAIN(setup, launch, reference)
