// triangle_attention: per batch b, head h, position i and dimension d, the causal softmax
// over keys j <= i of the per-dimension scores query[b,h,i,d] * key[b,h,j,d] / sqrt(head_dim),
// applied to value[b,h,j,d] (the benchmark's definition; see spec.toml). The upper-triangular
// mask marks j > i as hidden. Protocol in tasks/_harness/kw_harness.cuh.
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
    const size_t S = c.iparam("seq_length"), D = c.iparam("head_dim"), H = c.iparam("head_num");
    const elem_t* Q = c.host<elem_t>("query");
    const elem_t* K = c.host<elem_t>("key");
    const elem_t* V = c.host<elem_t>("value");
    const float* mask = c.host<float>("attention_mask");
    const double scale = 1.0 / std::sqrt(double(D));
    std::vector<double> score(S);
    // Each element has its own softmax over j <= i: about 4 * (i + 1) operations (an exp among
    // them), 2 * seq_length on average; all but the smallest sizes are checked on a sample.
    ref.expect("output", 4.0 * double(S), [&](size_t e) {
        const size_t d = e % D, i = (e / D) % S, bh = e / (D * S), b = bh / H;
        const size_t head_base = bh * S * D + d;  // element (b, h, 0, d)
        const float* m = mask + (b * S + i) * S;
        const double q = kw::to_double(Q[e]);
        double max_s = -INFINITY;
        for (size_t j = 0; j <= i; ++j) {  // only keys j <= i take part, as in the benchmark
            score[j] = m[j] > 0.5f ? -INFINITY : q * kw::to_double(K[head_base + j * D]) * scale;
            max_s = std::max(max_s, score[j]);
        }
        double sum = 0, acc = 0;
        for (size_t j = 0; j <= i; ++j) {
            const double w = std::exp(score[j] - max_s);  // 0 for a hidden key
            sum += w;
            acc += w * kw::to_double(V[head_base + j * D]);
        }
        return acc / sum;
    });
}

KW_MAIN(setup, launch, reference)
