// merge_attn_states: V_out[t,h,:] = (V_a w_a + V_b w_b) / (w_a + w_b) and
// LSE_out[h,t] = log(w_a + w_b) + max, with w = exp(LSE - max) per (head, token); V is
// (tokens, heads, head_size), LSE is (heads, tokens). See spec.toml.
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(merge_attn_states, elem_t* V_out, elem_t* LSE_out, const elem_t* V_a, const elem_t* lse_a,
         const elem_t* V_b, const elem_t* lse_b, int num_tokens, int num_heads, int head_size);

static void setup(kw::Case& c) {
    const size_t T = c.iparam("num_tokens"), H = c.iparam("num_heads"), D = c.iparam("head_size");
    c.input<elem_t>("V_a", T * H * D).uniform(-1, 1);
    c.input<elem_t>("lse_a", H * T).uniform(-1, 1);
    c.input<elem_t>("V_b", T * H * D).uniform(-1, 1);
    c.input<elem_t>("lse_b", H * T).uniform(-1, 1);
    c.output<elem_t>("V_out", T * H * D);
    c.output<elem_t>("LSE_out", H * T);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("V_out"), c.dev<elem_t>("LSE_out"), c.dev<elem_t>("V_a"), c.dev<elem_t>("lse_a"),
                   c.dev<elem_t>("V_b"), c.dev<elem_t>("lse_b"), c.iparam("num_tokens"), c.iparam("num_heads"),
                   c.iparam("head_size"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t T = c.iparam("num_tokens"), H = c.iparam("num_heads"), D = c.iparam("head_size");
    const elem_t* Va = c.host<elem_t>("V_a");
    const elem_t* Vb = c.host<elem_t>("V_b");
    const elem_t* la = c.host<elem_t>("lse_a");
    const elem_t* lb = c.host<elem_t>("lse_b");
    // Per (head, token), in the LSE layout: the two normalized weights and the merged LSE.
    std::vector<double> pa(H * T), pb(H * T), lse(H * T);
    for (size_t k = 0; k < H * T; ++k) {
        const double a = kw::to_double(la[k]), b = kw::to_double(lb[k]);
        const double m = std::max(a, b);
        const double wa = std::exp(a - m), wb = std::exp(b - m);
        pa[k] = wa / (wa + wb);
        pb[k] = wb / (wa + wb);
        lse[k] = std::log(wa + wb) + m;
    }
    ref.expect("V_out", 1, [&](size_t e) {
        const size_t t = e / (H * D), h = (e / D) % H;
        return kw::to_double(Va[e]) * pa[h * T + t] + kw::to_double(Vb[e]) * pb[h * T + t];
    });
    ref.expect("LSE_out", 1, [&](size_t k) { return lse[k]; });
}

KW_MAIN(setup, launch, reference)
