// conv_2d: "valid" 2D cross-correlation of input (input_rows x input_cols) with kernel
// (kernel_rows x kernel_cols), row-major (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(conv_2d, const elem_t* input, const elem_t* kernel, elem_t* output, int input_rows, int input_cols,
         int kernel_rows, int kernel_cols);

static void setup(kw::Case& c) {
    const size_t ir = c.iparam("input_rows"), ic = c.iparam("input_cols");
    const size_t kr = c.iparam("kernel_rows"), kc = c.iparam("kernel_cols");
    if (kr > ir || kc > ic) kw::fail("bad_args", "the kernel is larger than the input");
    c.input<elem_t>("input", ir * ic).uniform(-1, 1);
    c.input<elem_t>("kernel", kr * kc).uniform(-1, 1);
    c.output<elem_t>("output", (ir - kr + 1) * (ic - kc + 1));
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("input"), c.dev<elem_t>("kernel"), c.dev<elem_t>("output"), c.iparam("input_rows"),
                   c.iparam("input_cols"), c.iparam("kernel_rows"), c.iparam("kernel_cols"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t ic = c.iparam("input_cols"), kr = c.iparam("kernel_rows"), kc = c.iparam("kernel_cols");
    const size_t out_cols = ic - kc + 1;
    const elem_t* in = c.host<elem_t>("input");
    const elem_t* k = c.host<elem_t>("kernel");
    // kr * kc multiply-adds per element: the big sizes are checked on a sample.
    ref.expect("output", double(kr * kc), [&](size_t i) {
        const size_t row = i / out_cols, col = i % out_cols;
        double sum = 0;
        for (size_t m = 0; m < kr; ++m)
            for (size_t n = 0; n < kc; ++n) sum += kw::to_double(in[(row + m) * ic + col + n]) * kw::to_double(k[m * kc + n]);
        return sum;
    });
}

KW_MAIN(setup, launch, reference)
