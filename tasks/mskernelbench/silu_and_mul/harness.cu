// silu_and_mul: in (B, 2D) = [x | g] per row, out (B, D) = silu(x) * g (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(silu_and_mul, const elem_t* in, elem_t* out, int32_t B, int32_t D);

static void setup(kw::Case& c) {
    const size_t B = c.iparam("B"), D = c.iparam("D");
    c.input<elem_t>("in", B * 2 * D).uniform(-1, 1);
    c.output<elem_t>("out", B * D);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("in"), c.dev<elem_t>("out"), c.iparam("B"), c.iparam("D"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t D = c.iparam("D");
    const elem_t* in = c.host<elem_t>("in");
    ref.expect("out", 1, [&](size_t i) {
        const size_t b = i / D, j = i % D;
        const double x = kw::to_double(in[b * 2 * D + j]);
        const double g = kw::to_double(in[b * 2 * D + D + j]);
        return x / (1.0 + std::exp(-x)) * g;
    });
}

KW_MAIN(setup, launch, reference)
