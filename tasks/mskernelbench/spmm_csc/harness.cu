// spmm_csc: Y(rows, K) = A X, A (rows x cols) in CSC with the benchmark's pattern (the same number
// of entries in every column, up to one, at random rows); X (cols, K) and Y row-major; Y starts
// at 0 (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(spmm_csc, int rows, int columns, int K, const elem_t* values, const int* row_indices, const int* col_offsets,
         const elem_t* X, elem_t* Y);

// nnz = floor(rows * cols * density), at least cols; column c holds nnz / cols entries, one
// more for c < nnz % cols, at uniformly drawn rows (unsorted; a row may repeat in a column).
static void setup(kw::Case& c) {
    const int rows = c.iparam("rows"), cols = c.iparam("cols");
    const size_t K = c.iparam("K");
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
    c.input<elem_t>("X", size_t(cols) * K).uniform(-1, 1);
    c.output<elem_t>("Y", size_t(rows) * K).zeroed();  // the benchmark zeroes Y before every call
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.iparam("rows"), c.iparam("cols"), c.iparam("K"), c.dev<elem_t>("values"),
                   c.dev<int>("row_indices"), c.dev<int>("col_offsets"), c.dev<elem_t>("X"), c.dev<elem_t>("Y"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t rows = c.iparam("rows"), cols = c.iparam("cols"), K = c.iparam("K");
    const size_t nnz = c.buffer("values").count();
    const elem_t* values = c.host<elem_t>("values");
    const int* row = c.host<int>("row_indices");
    const int* offsets = c.host<int>("col_offsets");
    const elem_t* X = c.host<elem_t>("X");
    // The nonzeros regrouped by row (a counting sort): entries start[r] .. start[r+1]-1 of
    // by_row_col / by_row_val are row r's columns and values.
    std::vector<size_t> start(rows + 1, 0);
    for (size_t p = 0; p < nnz; ++p) ++start[size_t(row[p]) + 1];
    for (size_t r = 0; r < rows; ++r) start[r + 1] += start[r];
    std::vector<size_t> fill(start.begin(), start.end() - 1);
    std::vector<size_t> by_row_col(nnz);
    std::vector<double> by_row_val(nnz);
    for (size_t col = 0; col < cols; ++col) {
        for (int p = offsets[col]; p < offsets[col + 1]; ++p) {
            const size_t q = fill[row[p]]++;
            by_row_col[q] = col;
            by_row_val[q] = kw::to_double(values[p]);
        }
    }
    // About nnz / rows multiply-adds per element.
    ref.expect("Y", double(nnz) / double(rows), [&](size_t i) {
        const size_t r = i / K, k = i % K;
        double sum = 0;
        for (size_t q = start[r]; q < start[r + 1]; ++q) sum += by_row_val[q] * kw::to_double(X[by_row_col[q] * K + k]);
        return sum;
    });
}

KW_MAIN(setup, launch, reference)
