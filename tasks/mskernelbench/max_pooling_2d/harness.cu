// max_pooling_2d: max over k x k windows (stride s, p padding cells per side that never win)
// of an NCHW input; output NCHW with H_out = (H + 2p - k) / s + 1 (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(max_pooling_2d, const elem_t* input, elem_t* output, int N, int C, int H, int W, int kernel_size, int stride,
         int padding);

struct Pool {
    size_t n, c, h, w, k, s, p, out_h, out_w;
};

static Pool shape(const kw::Case& c) {
    Pool g{size_t(c.iparam("N")), size_t(c.iparam("C")), size_t(c.iparam("H")), size_t(c.iparam("W")),
           size_t(c.iparam("kernel_size")), size_t(c.iparam("stride")), size_t(c.iparam("padding")), 0, 0};
    if (g.k < 1 || g.s < 1) kw::fail("bad_args", "kernel_size and stride must be >= 1");
    if (g.p >= g.k) kw::fail("bad_args", "padding must be smaller than kernel_size (no all-padding windows)");
    if (g.h + 2 * g.p < g.k || g.w + 2 * g.p < g.k) kw::fail("bad_args", "the window is larger than the padded input");
    g.out_h = (g.h + 2 * g.p - g.k) / g.s + 1;
    g.out_w = (g.w + 2 * g.p - g.k) / g.s + 1;
    return g;
}

static void setup(kw::Case& c) {
    const Pool g = shape(c);
    c.input<elem_t>("input", g.n * g.c * g.h * g.w).uniform(-1, 1);
    c.output<elem_t>("output", g.n * g.c * g.out_h * g.out_w);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("input"), c.dev<elem_t>("output"), c.iparam("N"), c.iparam("C"), c.iparam("H"),
                   c.iparam("W"), c.iparam("kernel_size"), c.iparam("stride"), c.iparam("padding"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const Pool g = shape(c);
    const elem_t* in = c.host<elem_t>("input");
    ref.expect("output", double(g.k * g.k), [&](size_t idx) {
        const size_t ow = idx % g.out_w, oh = (idx / g.out_w) % g.out_h, plane = idx / (g.out_w * g.out_h);
        const elem_t* x = in + plane * g.h * g.w;  // plane = n * C + c
        double best = -std::numeric_limits<double>::infinity();
        for (size_t a = 0; a < g.k; ++a) {
            const long long h = (long long)(oh * g.s + a) - (long long)g.p;
            if (h < 0 || h >= (long long)g.h) continue;  // padding row
            for (size_t b = 0; b < g.k; ++b) {
                const long long w = (long long)(ow * g.s + b) - (long long)g.p;
                if (w < 0 || w >= (long long)g.w) continue;  // padding column
                best = std::max(best, kw::to_double(x[size_t(h) * g.w + size_t(w)]));
            }
        }
        return best;
    });
}

KW_MAIN(setup, launch, reference)
