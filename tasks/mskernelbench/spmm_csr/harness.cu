// spmm_csr: Y(rows, K) = A X, A (rows x cols) in CSR with the benchmark's pattern (the same number
// of entries in every row, up to one, at random columns); X (cols, K) and Y row-major (see
// spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(spmm_csr, int rows, int K, const elem_t* values, const int* col_indices, const int* row_offsets,
         const elem_t* X, elem_t* Y);

// nnz = floor(rows * cols * density), at least rows; row r holds nnz / rows entries, one more
// for r < nnz % rows, at uniformly drawn columns (unsorted; a column may repeat in a row).
static kw::Csr benchmark_csr(kw::Rng& rng, int rows, int cols, double density) {
    const size_t nnz = std::max<size_t>(size_t(rows), size_t(double(rows) * cols * density));
    kw::Csr csr;
    csr.row_offsets.assign(size_t(rows) + 1, 0);
    for (int r = 0; r < rows; ++r) {
        csr.row_offsets[r + 1] = csr.row_offsets[r] + int(nnz / rows) + (size_t(r) < nnz % rows ? 1 : 0);
    }
    csr.col_indices.resize(nnz);
    for (auto& col : csr.col_indices) col = int(rng.below(cols));
    return csr;
}

static void setup(kw::Case& c) {
    const int rows = c.iparam("rows"), cols = c.iparam("cols");
    const size_t K = c.iparam("K");
    kw::Rng pattern = c.rng("pattern");
    const kw::Csr csr = benchmark_csr(pattern, rows, cols, c.constant("density"));
    c.input<elem_t>("values", csr.nnz()).uniform(-1, 1);
    c.input<int>("col_indices", csr.nnz()).set(csr.col_indices);
    c.input<int>("row_offsets", size_t(rows) + 1).set(csr.row_offsets);
    c.input<elem_t>("X", size_t(cols) * K).uniform(-1, 1);
    c.output<elem_t>("Y", size_t(rows) * K);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.iparam("rows"), c.iparam("K"), c.dev<elem_t>("values"), c.dev<int>("col_indices"),
                   c.dev<int>("row_offsets"), c.dev<elem_t>("X"), c.dev<elem_t>("Y"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t rows = c.iparam("rows"), K = c.iparam("K"), nnz = c.buffer("values").count();
    const elem_t* values = c.host<elem_t>("values");
    const int* col = c.host<int>("col_indices");
    const int* offsets = c.host<int>("row_offsets");
    const elem_t* X = c.host<elem_t>("X");
    // About nnz / rows multiply-adds per element: the big sizes are checked on a sample of Y.
    ref.expect("Y", double(nnz) / double(rows), [&](size_t i) {
        const size_t r = i / K, k = i % K;
        double sum = 0;
        for (int p = offsets[r]; p < offsets[r + 1]; ++p)
            sum += kw::to_double(values[p]) * kw::to_double(X[size_t(col[p]) * K + k]);
        return sum;
    });
}

KW_MAIN(setup, launch, reference)
