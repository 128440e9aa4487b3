// FFT: forward DFT X_k = sum_n x_n exp(-2 pi i k n / N), unnormalized, natural order, real and
// imaginary parts in separate arrays; N a power of two (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(FFT, const elem_t* input_real, const elem_t* input_img, elem_t* output_real, elem_t* output_img, int N);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N");
    if (N < 2 || (N & (N - 1)) != 0) kw::fail("bad_args", "N must be a power of two >= 2");
    c.input<elem_t>("input_real", N).uniform(-1, 1);
    c.input<elem_t>("input_img", N).uniform(-1, 1);
    c.output<elem_t>("output_real", N);
    c.output<elem_t>("output_img", N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("input_real"), c.dev<elem_t>("input_img"), c.dev<elem_t>("output_real"),
                   c.dev<elem_t>("output_img"), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N");
    const elem_t* xr = c.host<elem_t>("input_real");
    const elem_t* xi = c.host<elem_t>("input_img");
    // Direct DFT in double. exp(-2 pi i m / N) for m = k * n mod N, from a table of N exact-to-
    // double twiddles (the error is about N * 1e-16, negligible).
    const double pi = 3.14159265358979323846;
    std::vector<double> wr(N), wi(N), in_r(N), in_i(N);
    for (size_t m = 0; m < N; ++m) {
        wr[m] = std::cos(2.0 * pi * double(m) / double(N));
        wi[m] = -std::sin(2.0 * pi * double(m) / double(N));
    }
    for (size_t n = 0; n < N; ++n) {
        in_r[n] = kw::to_double(xr[n]);
        in_i[n] = kw::to_double(xi[n]);
    }
    std::vector<double> out_r(N), out_i(N);
    for (size_t k = 0; k < N; ++k) {
        double sr = 0, si = 0;
        size_t m = 0;  // k * n mod N, advanced by k each step
        for (size_t n = 0; n < N; ++n) {
            sr += in_r[n] * wr[m] - in_i[n] * wi[m];
            si += in_r[n] * wi[m] + in_i[n] * wr[m];
            m = (m + k) & (N - 1);
        }
        out_r[k] = sr;
        out_i[k] = si;
    }
    ref.expect("output_real", 1, [&](size_t k) { return out_r[k]; });
    ref.expect("output_img", 1, [&](size_t k) { return out_i[k]; });
}

KW_MAIN(setup, launch, reference)
