// spmv_coo: y = A x, A (rows x cols) in COO sorted by row then column, density `density`
// (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(spmv_coo, int rows, int nnz, const elem_t* values, const int* row_indices, const int* col_indices,
         const elem_t* x, elem_t* y);

static void setup(kw::Case& c) {
    const int rows = c.iparam("rows"), cols = c.iparam("cols");
    kw::Rng pattern = c.rng("pattern");
    // Row-major selection sampling: entries come sorted by row, then column, no duplicates.
    const kw::Csr csr = kw::random_csr(pattern, rows, cols, c.constant("density"));
    std::vector<int> row_indices(csr.nnz());
    for (int r = 0; r < rows; ++r)
        for (int p = csr.row_offsets[r]; p < csr.row_offsets[r + 1]; ++p) row_indices[p] = r;
    c.input<elem_t>("values", csr.nnz()).uniform(-1, 1);
    c.input<int>("row_indices", csr.nnz()).set(row_indices);
    c.input<int>("col_indices", csr.nnz()).set(csr.col_indices);
    c.input<elem_t>("x", cols).uniform(-1, 1);
    c.output<elem_t>("y", rows);
}

static void launch(kw::Case& c, kw::Impl impl) {
    const int nnz = int(c.buffer("values").count());
    kw_entry(impl)(c.iparam("rows"), nnz, c.dev<elem_t>("values"), c.dev<int>("row_indices"),
                   c.dev<int>("col_indices"), c.dev<elem_t>("x"), c.dev<elem_t>("y"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t rows = c.iparam("rows"), nnz = c.buffer("values").count();
    const elem_t* values = c.host<elem_t>("values");
    const int* row = c.host<int>("row_indices");
    const int* col = c.host<int>("col_indices");
    const elem_t* x = c.host<elem_t>("x");
    std::vector<double> y(rows, 0.0);  // scatter in double: needs no ordering of the entries
    for (size_t p = 0; p < nnz; ++p) y[row[p]] += kw::to_double(values[p]) * kw::to_double(x[col[p]]);
    ref.expect("y", 1, [&](size_t r) { return y[r]; });
}

KW_MAIN(setup, launch, reference)
