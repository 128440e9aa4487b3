// softmax_attention: Y = softmax(Q K^T / sqrt(dim_qk)) V, softmax over each row of the
// scores (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(softmax_attention, elem_t* Y, const elem_t* Q, const elem_t* K, const elem_t* V, int q_seq_len,
         int kv_seq_len, int dim_qk, int dim_v);

static void setup(kw::Case& c) {
    const size_t q = c.iparam("q_seq_len"), kv = c.iparam("kv_seq_len");
    const size_t dqk = c.iparam("dim_qk"), dv = c.iparam("dim_v");
    c.input<elem_t>("Q", q * dqk).uniform(-1, 1);
    c.input<elem_t>("K", kv * dqk).uniform(-1, 1);
    c.input<elem_t>("V", kv * dv).uniform(-1, 1);
    c.output<elem_t>("Y", q * dv);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("Y"), c.dev<elem_t>("Q"), c.dev<elem_t>("K"), c.dev<elem_t>("V"),
                   c.iparam("q_seq_len"), c.iparam("kv_seq_len"), c.iparam("dim_qk"), c.iparam("dim_v"));
}

static double dot(const double* a, const double* b, size_t n) {  // four chains, for speed
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t k = 0;
    for (; k + 4 <= n; k += 4) {
        s0 += a[k] * b[k];
        s1 += a[k + 1] * b[k + 1];
        s2 += a[k + 2] * b[k + 2];
        s3 += a[k + 3] * b[k + 3];
    }
    for (; k < n; ++k) s0 += a[k] * b[k];
    return (s0 + s1) + (s2 + s3);
}

// out(rows, cols) = A(rows, depth) B(cols, depth)^T in double, blocked 4 x 2 so that the
// largest size (1024 x 2048 x 4096) takes about 2 s instead of 6.
static void gram(const double* A, const double* B, size_t rows, size_t cols, size_t depth, double* out) {
    size_t i = 0;
    for (; i + 4 <= rows; i += 4) {
        const double *a0 = A + i * depth, *a1 = a0 + depth, *a2 = a1 + depth, *a3 = a2 + depth;
        size_t j = 0;
        for (; j + 2 <= cols; j += 2) {
            const double *b0 = B + j * depth, *b1 = b0 + depth;
            double s00 = 0, s01 = 0, s10 = 0, s11 = 0, s20 = 0, s21 = 0, s30 = 0, s31 = 0;
            for (size_t k = 0; k < depth; ++k) {
                const double x0 = b0[k], x1 = b1[k];
                s00 += a0[k] * x0, s01 += a0[k] * x1;
                s10 += a1[k] * x0, s11 += a1[k] * x1;
                s20 += a2[k] * x0, s21 += a2[k] * x1;
                s30 += a3[k] * x0, s31 += a3[k] * x1;
            }
            double* o = out + i * cols + j;
            o[0] = s00, o[1] = s01, o[cols] = s10, o[cols + 1] = s11;
            o[2 * cols] = s20, o[2 * cols + 1] = s21, o[3 * cols] = s30, o[3 * cols + 1] = s31;
        }
        for (; j < cols; ++j)
            for (size_t r = 0; r < 4; ++r) out[(i + r) * cols + j] = dot(A + (i + r) * depth, B + j * depth, depth);
    }
    for (; i < rows; ++i)
        for (size_t j = 0; j < cols; ++j) out[i * cols + j] = dot(A + i * depth, B + j * depth, depth);
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t q = c.iparam("q_seq_len"), kv = c.iparam("kv_seq_len");
    const size_t dqk = c.iparam("dim_qk"), dv = c.iparam("dim_v");
    const elem_t* Q = c.host<elem_t>("Q");
    const elem_t* K = c.host<elem_t>("K");
    const elem_t* V = c.host<elem_t>("V");
    std::vector<double> Qd(q * dqk), Kd(kv * dqk), Vt(dv * kv);
    for (size_t i = 0; i < q * dqk; ++i) Qd[i] = kw::to_double(Q[i]);
    for (size_t i = 0; i < kv * dqk; ++i) Kd[i] = kw::to_double(K[i]);
    for (size_t j = 0; j < kv; ++j)  // V transposed, so that each output is a contiguous dot product
        for (size_t d = 0; d < dv; ++d) Vt[d * kv + j] = kw::to_double(V[j * dv + d]);

    // P = softmax(Q K^T / sqrt(dim_qk)) row by row, for every row (each is needed: the
    // sampled elements of Y fall in nearly every row).
    std::vector<double> P(q * kv);
    gram(Qd.data(), Kd.data(), q, kv, dqk, P.data());
    const double scale = 1.0 / std::sqrt(double(dqk));
    for (size_t i = 0; i < q; ++i) {
        double* row = P.data() + i * kv;
        double m = -INFINITY;
        for (size_t j = 0; j < kv; ++j) m = std::max(m, row[j] * scale);
        double sum = 0;
        for (size_t j = 0; j < kv; ++j) sum += (row[j] = std::exp(row[j] * scale - m));
        for (size_t j = 0; j < kv; ++j) row[j] /= sum;
    }
    // kv multiply-adds per element of Y: the sizes with q_seq_len = 1024 are checked on a sample.
    ref.expect("Y", double(kv), [&](size_t e) { return dot(P.data() + (e / dv) * kv, Vt.data() + (e % dv) * kv, kv); });
}

KW_MAIN(setup, launch, reference)
