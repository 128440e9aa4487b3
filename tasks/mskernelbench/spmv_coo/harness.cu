// spmv_coo: y = A x, A (rows x cols) in COO with the benchmark's pattern (one entry in every
// row, then random positions, in no order); y starts at 0 (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(spmv_coo, int rows, int nnz, const elem_t* values, const int* row_indices, const int* col_indices,
         const elem_t* x, elem_t* y);

// nnz = floor(rows * cols * density), at least rows. Entry r < rows sits in row r; the others
// in uniformly drawn rows; every column is uniform. Positions may repeat (their values add up).
static void setup(kw::Case& c) {
    const int rows = c.iparam("rows"), cols = c.iparam("cols");
    const size_t nnz = std::max<size_t>(size_t(rows), size_t(double(rows) * cols * c.constant("density")));
    kw::Rng pattern = c.rng("pattern");
    std::vector<int> row_indices(nnz), col_indices(nnz);
    for (size_t p = 0; p < nnz; ++p) {
        row_indices[p] = p < size_t(rows) ? int(p) : int(pattern.below(rows));
        col_indices[p] = int(pattern.below(cols));
    }
    c.input<elem_t>("values", nnz).uniform(-1, 1);
    c.input<int>("row_indices", nnz).set(row_indices);
    c.input<int>("col_indices", nnz).set(col_indices);
    c.input<elem_t>("x", cols).uniform(-1, 1);
    c.output<elem_t>("y", rows).zeroed();  // the benchmark zeroes y before every call; kernels may accumulate
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
