// spmm_coo: Y(rows, K) = A X, A (rows x cols) in COO with the benchmark's pattern (one entry in
// every row, then random positions, in no order); X (cols, K) and Y row-major; Y starts at 0
// (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(spmm_coo, int rows, int nnz, int K, const elem_t* values, const int* row_indices, const int* col_indices,
         const elem_t* X, elem_t* Y);

// nnz = floor(rows * cols * density), at least rows. Entry r < rows sits in row r; the others
// in uniformly drawn rows; every column is uniform. Positions may repeat (their values add up).
static void setup(kw::Case& c) {
    const int rows = c.iparam("rows"), cols = c.iparam("cols");
    const size_t K = c.iparam("K");
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
    c.input<elem_t>("X", size_t(cols) * K).uniform(-1, 1);
    c.output<elem_t>("Y", size_t(rows) * K).zeroed();  // the benchmark zeroes Y before every call
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
    // The entries regrouped by row (a counting sort): by_row[start[r] .. start[r+1]) are row r's.
    std::vector<size_t> start(rows + 1, 0);
    for (size_t p = 0; p < nnz; ++p) ++start[size_t(row[p]) + 1];
    for (size_t r = 0; r < rows; ++r) start[r + 1] += start[r];
    std::vector<size_t> fill(start.begin(), start.end() - 1), by_row(nnz);
    for (size_t p = 0; p < nnz; ++p) by_row[fill[row[p]]++] = p;
    // About nnz / rows multiply-adds per element: the big sizes are checked on a sample of Y.
    ref.expect("Y", double(nnz) / double(rows), [&](size_t i) {
        const size_t r = i / K, k = i % K;
        double sum = 0;
        for (size_t q = start[r]; q < start[r + 1]; ++q) {
            const size_t p = by_row[q];
            sum += kw::to_double(values[p]) * kw::to_double(X[size_t(col[p]) * K + k]);
        }
        return sum;
    });
}

KW_MAIN(setup, launch, reference)
