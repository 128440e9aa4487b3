// triangle_attention: per batch b and head h, output = P V with P the row softmax of
// Q K^T / sqrt(head_dim) over the causal positions j <= i (the upper-triangular mask
// marks j > i as hidden). See spec.toml. Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(triangle_attention, const elem_t* query, const elem_t* key, const elem_t* value,
         const float* attention_mask, elem_t* output, int batch_size, int head_num, int seq_length, int head_dim);

static void setup(kw::Case& c) {
    const size_t B = c.iparam("batch_size"), H = c.iparam("head_num");
    const size_t S = c.iparam("seq_length"), D = c.iparam("head_dim");
    c.input<elem_t>("query", B * H * S * D).uniform(-1, 1);
    c.input<elem_t>("key", B * H * S * D).uniform(-1, 1);
    c.input<elem_t>("value", B * H * S * D).uniform(-1, 1);
    // causal mask, 1 = hidden: mask[b, i, j] = 1 exactly where j > i
    c.input<float>("attention_mask", B * S * S).fill([&](size_t k) { return (k % S) > (k / S) % S ? 1.0 : 0.0; });
    c.output<elem_t>("output", B * H * S * D);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("query"), c.dev<elem_t>("key"), c.dev<elem_t>("value"),
                   c.dev<float>("attention_mask"), c.dev<elem_t>("output"), c.iparam("batch_size"),
                   c.iparam("head_num"), c.iparam("seq_length"), c.iparam("head_dim"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t H = c.iparam("head_num"), S = c.iparam("seq_length"), D = c.iparam("head_dim");
    const elem_t* Q = c.host<elem_t>("query");
    const elem_t* K = c.host<elem_t>("key");
    const elem_t* V = c.host<elem_t>("value");
    const float* mask = c.host<float>("attention_mask");
    const double scale = 1.0 / std::sqrt(double(D));
    // One query row (b, h, i) at a time: its weights and all head_dim outputs, cached, since
    // the (sorted) checked elements of a row come one after another.
    size_t cached = SIZE_MAX;
    std::vector<double> p(S), out(D);
    auto row_outputs = [&](size_t row) {
        const size_t bh = row / S, i = row % S, b = bh / H;
        const elem_t* q = Q + row * D;
        const elem_t* k0 = K + bh * S * D;
        const elem_t* v0 = V + bh * S * D;
        const float* m = mask + (b * S + i) * S;
        double max_s = -INFINITY;
        for (size_t j = 0; j <= i; ++j) {
            if (m[j] != 0.0f) {  // never for the causal mask, whose hidden positions are j > i
                p[j] = -INFINITY;
                continue;
            }
            double s = 0;
            for (size_t d = 0; d < D; ++d) s += kw::to_double(q[d]) * kw::to_double(k0[j * D + d]);
            p[j] = s * scale;
            max_s = std::max(max_s, p[j]);
        }
        double sum = 0;
        for (size_t j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - max_s));
        std::fill(out.begin(), out.end(), 0.0);
        for (size_t j = 0; j <= i; ++j) {
            const double w = p[j] / sum;
            for (size_t d = 0; d < D; ++d) out[d] += w * kw::to_double(v0[j * D + d]);
        }
        cached = row;
    };
    // Cost per checked element: one row's scores and outputs, about (seq_length / 2 + 1) * 2 * head_dim.
    ref.expect("output", double(S / 2 + 1) * 2.0 * double(D), [&](size_t e) {
        if (e / D != cached) row_outputs(e / D);
        return out[e % D];
    });
}

KW_MAIN(setup, launch, reference)
