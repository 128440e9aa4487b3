// spmm_coo: Y(rows, K) = A X, A (rows x cols) in COO sorted by row then column, density
// `density`; X (cols, K) and Y row-major (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(spmm_coo, int rows, int nnz, int K, const elem_t* values, const int* row_indices, const int* col_indices,
         const elem_t* X, elem_t* Y);

static void setup(kw::Case& c) {
    const int rows = c.iparam("rows"), cols = c.iparam("cols");
    const size_t K = c.iparam("K");
    kw::Rng pattern = c.rng("pattern");
    // Row-major selection sampling: entries come sorted by row, then column, no duplicates.
    const kw::Csr csr = kw::random_csr(pattern, rows, cols, c.constant("density"));
    std::vector<int> row_indices(csr.nnz());
    for (int r = 0; r < rows; ++r)
        for (int p = csr.row_offsets[r]; p < csr.row_offsets[r + 1]; ++p) row_indices[p] = r;
    c.input<elem_t>("values", csr.nnz()).uniform(-1, 1);
    c.input<int>("row_indices", csr.nnz()).set(row_indices);
    c.input<int>("col_indices", csr.nnz()).set(csr.col_indices);
    c.input<elem_t>("X", size_t(cols) * K).uniform(-1, 1);
    c.output<elem_t>("Y", size_t(rows) * K);
}

static void launch(kw::Case& c, kw::Impl impl) {
    const int nnz = int(c.buffer("values").count());
    kw_entry(impl)(c.iparam("rows"), nnz, c.iparam("K"), c.dev<elem_t>("values"), c.dev<int>("row_indices"),
                   c.dev<int>("col_indices"), c.dev<elem_t>("X"), c.dev<elem_t>("Y"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t rows = c.iparam("rows"), K = c.iparam("K"), nnz = c.buffer("values").count();
    const elem_t* values = c.host<elem_t>("values");
    const int* row = c.host<int>("row_indices");
    const int* col = c.host<int>("col_indices");
    const elem_t* X = c.host<elem_t>("X");
    // The entries of row r are [start[r], start[r+1]) (they are sorted by row).
    std::vector<size_t> start(rows + 1, 0);
    for (size_t p = 0; p < nnz; ++p) ++start[size_t(row[p]) + 1];
    for (size_t r = 0; r < rows; ++r) start[r + 1] += start[r];
    // About nnz / rows multiply-adds per element: the big sizes are checked on a sample of Y.
    ref.expect("Y", double(nnz) / double(rows), [&](size_t i) {
        const size_t r = i / K, k = i % K;
        double sum = 0;
        for (size_t p = start[r]; p < start[r + 1]; ++p)
            sum += kw::to_double(values[p]) * kw::to_double(X[size_t(col[p]) * K + k]);
        return sum;
    });
}

KW_MAIN(setup, launch, reference)
