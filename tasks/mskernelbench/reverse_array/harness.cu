// reverse_array: output[i] = input[N - 1 - i] (see spec.toml). `input` is non-const in the
// interface but declared as an input buffer here, so any change to it fails the size.
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(reverse_array, elem_t* output, elem_t* input, int N);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N");
    c.input<elem_t>("input", N).distinct();
    c.output<elem_t>("output", N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("output"), c.dev<elem_t>("input"), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N");
    const elem_t* x = c.host<elem_t>("input");
    ref.expect("output", 1, [&](size_t i) { return kw::to_double(x[N - 1 - i]); });
}

KW_MAIN(setup, launch, reference)
