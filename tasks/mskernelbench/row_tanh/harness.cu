// row_tanh: out = tanh(x) element-wise (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(row_tanh, elem_t* out, const elem_t* input, const int N);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N");
    c.input<elem_t>("input", N).uniform(-1, 1);
    c.output<elem_t>("out", N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("out"), c.dev<elem_t>("input"), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const elem_t* x = c.host<elem_t>("input");
    ref.expect("out", 1, [&](size_t i) { return std::tanh(kw::to_double(x[i])); });
}

KW_MAIN(setup, launch, reference)
