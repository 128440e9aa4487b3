// conv_1d: "valid" 1D cross-correlation of input (input_size) with kernel (kernel_size);
// output has input_size - kernel_size + 1 elements (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(conv_1d, const elem_t* input, const elem_t* kernel, elem_t* output, int input_size, int kernel_size);

static void setup(kw::Case& c) {
    const size_t n = c.iparam("input_size"), k = c.iparam("kernel_size");
    if (k < 1 || k > n) kw::fail("bad_args", "kernel_size must be in [1, input_size]");
    c.input<elem_t>("input", n).uniform(-1, 1);
    c.input<elem_t>("kernel", k).uniform(-1, 1);
    c.output<elem_t>("output", n - k + 1);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("input"), c.dev<elem_t>("kernel"), c.dev<elem_t>("output"), c.iparam("input_size"),
                   c.iparam("kernel_size"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t k = c.iparam("kernel_size");
    const elem_t* in = c.host<elem_t>("input");
    const elem_t* w = c.host<elem_t>("kernel");
    // kernel_size multiply-adds per element (products of float or bf16 values are exact in double).
    ref.expect("output", double(k), [&](size_t i) {
        double sum = 0;
        for (size_t j = 0; j < k; ++j) sum += kw::to_double(in[i + j]) * kw::to_double(w[j]);
        return sum;
    });
}

KW_MAIN(setup, launch, reference)
