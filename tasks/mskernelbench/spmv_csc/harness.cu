// spmv_csc: y = A x, A (rows x cols) in CSC with the benchmark's pattern (the same number of
// entries in every column, up to one, at random rows); y starts at 0 (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(spmv_csc, int rows, int columns, const elem_t* values, const int* row_indices, const int* col_offsets,
         const elem_t* x, elem_t* y);

// nnz = floor(rows * cols * density), at least cols; column c holds nnz / cols entries, one
// more for c < nnz % cols, at uniformly drawn rows (unsorted; a row may repeat in a column).
static void setup(kw::Case& c) {
    const int rows = c.iparam("rows"), cols = c.iparam("cols");
    const size_t nnz = std::max<size_t>(size_t(cols), size_t(double(rows) * cols * c.constant("density")));
    kw::Rng pattern = c.rng("pattern");
    std::vector<int> offsets(size_t(cols) + 1), row_indices(nnz);
    for (int col = 0; col < cols; ++col) {
        offsets[col + 1] = offsets[col] + int(nnz / cols) + (size_t(col) < nnz % cols ? 1 : 0);
    }
    for (size_t p = 0; p < nnz; ++p) row_indices[p] = int(pattern.below(rows));
    c.input<elem_t>("values", nnz).uniform(-1, 1);
    c.input<int>("row_indices", nnz).set(row_indices);
    c.input<int>("col_offsets", size_t(cols) + 1).set(offsets);
    c.input<elem_t>("x", cols).uniform(-1, 1);
    c.output<elem_t>("y", rows).zeroed();  // the benchmark zeroes y before every call; kernels may accumulate
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.iparam("rows"), c.iparam("cols"), c.dev<elem_t>("values"), c.dev<int>("row_indices"),
                   c.dev<int>("col_offsets"), c.dev<elem_t>("x"), c.dev<elem_t>("y"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t rows = c.iparam("rows"), cols = c.iparam("cols");
    const elem_t* values = c.host<elem_t>("values");
    const int* row = c.host<int>("row_indices");
    const int* offsets = c.host<int>("col_offsets");
    const elem_t* x = c.host<elem_t>("x");
    std::vector<double> y(rows, 0.0);  // column by column, scattered into the rows, in double
    for (size_t col = 0; col < cols; ++col)
        for (int p = offsets[col]; p < offsets[col + 1]; ++p)
            y[row[p]] += kw::to_double(values[p]) * kw::to_double(x[col]);
    ref.expect("y", 1, [&](size_t r) { return y[r]; });
}

KW_MAIN(setup, launch, reference)
