// matrix_scalar_mul: B(M,N) = scalar * A(M,N), row-major (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(matrix_scalar_mul, const elem_t* A, elem_t* B, elem_t scalar, int M, int N);

// The constant `scalar` in the element type, rounded as the kernel receives it.
static elem_t scalar_of(const kw::Case& c) {
    const float s = float(c.constant("scalar"));
#ifdef KW_BF16
    __nv_bfloat16_raw raw;
    raw.x = kw::float_to_bf16_bits(s);
    return __nv_bfloat16(raw);
#else
    return s;
#endif
}

static void setup(kw::Case& c) {
    const size_t M = c.iparam("M"), N = c.iparam("N");
    c.input<elem_t>("A", M * N).uniform(-1, 1);
    c.output<elem_t>("B", M * N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("A"), c.dev<elem_t>("B"), scalar_of(c), c.iparam("M"), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const elem_t* A = c.host<elem_t>("A");
    const double s = kw::to_double(scalar_of(c));
    ref.expect("B", 1, [&](size_t i) { return s * kw::to_double(A[i]); });
}

KW_MAIN(setup, launch, reference)
