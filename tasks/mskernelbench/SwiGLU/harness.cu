// SwiGLU: output = g * sigmoid(beta * g) * v, element-wise (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(SwiGLU, elem_t* output, const elem_t* gate_input, const elem_t* value_input, float beta, int N);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N");
    c.input<elem_t>("gate_input", N).uniform(-1, 1);
    c.input<elem_t>("value_input", N).uniform(-1, 1);
    c.output<elem_t>("output", N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("output"), c.dev<elem_t>("gate_input"), c.dev<elem_t>("value_input"),
                   float(c.constant("beta")), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const elem_t* g = c.host<elem_t>("gate_input");
    const elem_t* v = c.host<elem_t>("value_input");
    const double beta = float(c.constant("beta"));  // the value the kernel receives
    ref.expect("output", 1, [&](size_t i) {
        const double x = kw::to_double(g[i]);
        return x / (1.0 + std::exp(-beta * x)) * kw::to_double(v[i]);
    });
}

KW_MAIN(setup, launch, reference)
