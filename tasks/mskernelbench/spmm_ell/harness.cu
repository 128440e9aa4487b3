// spmm_ell: Y(rows, K) = A X, A (rows x cols) in row-major ELL, padded with -1, density
// `density`; X (cols, K) and Y row-major (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(spmm_ell, int rows, int max_nnz_per_row, int K, const elem_t* values, const int* col_ids, const elem_t* X,
         elem_t* Y);

static void setup(kw::Case& c) {
    const int rows = c.iparam("rows"), cols = c.iparam("cols");
    const size_t K = c.iparam("K");
    kw::Rng pattern = c.rng("pattern");
    const kw::Csr csr = kw::random_csr(pattern, rows, cols, c.constant("density"));
    size_t width = 1;  // max_nnz_per_row: the longest row (at least one slot)
    for (int r = 0; r < rows; ++r) width = std::max<size_t>(width, size_t(csr.row_offsets[r + 1] - csr.row_offsets[r]));
    // Row r's nonzeros (columns ascending) in slots 0.., then -1 padding.
    std::vector<int> col_ids(size_t(rows) * width, -1);
    for (int r = 0; r < rows; ++r)
        for (int p = csr.row_offsets[r]; p < csr.row_offsets[r + 1]; ++p)
            col_ids[size_t(r) * width + size_t(p - csr.row_offsets[r])] = csr.col_indices[p];
    c.input<int>("col_ids", col_ids.size()).set(col_ids);
    kw::Buffer& values = c.input<elem_t>("values", col_ids.size());
    kw::Rng& draw = values.rng();
    values.fill([&](size_t i) { return col_ids[i] < 0 ? -1.0 : draw.uniform(-1, 1); });
    c.input<elem_t>("X", size_t(cols) * K).uniform(-1, 1);
    c.output<elem_t>("Y", size_t(rows) * K);
}

static void launch(kw::Case& c, kw::Impl impl) {
    const int rows = c.iparam("rows");
    const int width = int(c.buffer("col_ids").count() / size_t(rows));
    kw_entry(impl)(rows, width, c.iparam("K"), c.dev<elem_t>("values"), c.dev<int>("col_ids"), c.dev<elem_t>("X"),
                   c.dev<elem_t>("Y"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t rows = c.iparam("rows"), K = c.iparam("K"), width = c.buffer("col_ids").count() / rows;
    const elem_t* values = c.host<elem_t>("values");
    const int* col = c.host<int>("col_ids");
    const elem_t* X = c.host<elem_t>("X");
    // max_nnz_per_row slots per element: the biggest size is checked on a sample of Y.
    ref.expect("Y", double(width), [&](size_t i) {
        const size_t r = i / K, k = i % K;
        double sum = 0;
        for (size_t s = r * width; s < (r + 1) * width; ++s)
            if (col[s] != -1) sum += kw::to_double(values[s]) * kw::to_double(X[size_t(col[s]) * K + k]);
        return sum;
    });
}

KW_MAIN(setup, launch, reference)
