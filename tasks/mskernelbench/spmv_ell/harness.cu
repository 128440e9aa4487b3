// spmv_ell: y = A x, A (rows x cols) in row-major ELL with the benchmark's pattern, padding
// col_ids -1 / values 0; y starts at 0 (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(spmv_ell, int rows, int max_nnz_per_row, const elem_t* values, const int* col_ids, const elem_t* x,
         elem_t* y);

// The benchmark's pattern: nnz = floor(rows * cols * density), at least rows; every row first
// gets one entry, the other nnz - rows go to uniformly drawn rows; all columns uniform, kept in
// the order drawn (unsorted; a column may repeat in a row). max_nnz_per_row is the longest row;
// padding slots have col_ids -1 and values 0.
static void setup(kw::Case& c) {
    const int rows = c.iparam("rows"), cols = c.iparam("cols");
    const size_t nnz = std::max<size_t>(size_t(rows), size_t(double(rows) * cols * c.constant("density")));
    kw::Rng pattern = c.rng("pattern");
    std::vector<std::vector<int>> row_cols(rows);
    for (size_t p = 0; p < nnz; ++p) {
        const int r = p < size_t(rows) ? int(p) : int(pattern.below(rows));
        row_cols[r].push_back(int(pattern.below(cols)));
    }
    size_t width = 1;
    for (const auto& r : row_cols) width = std::max(width, r.size());
    std::vector<int> col_ids(size_t(rows) * width, -1);
    for (int r = 0; r < rows; ++r) std::copy(row_cols[r].begin(), row_cols[r].end(), col_ids.begin() + size_t(r) * width);
    c.input<int>("col_ids", col_ids.size()).set(col_ids);
    kw::Buffer& values = c.input<elem_t>("values", col_ids.size());
    kw::Rng& draw = values.rng();
    values.fill([&](size_t i) { return col_ids[i] < 0 ? 0.0 : draw.uniform(-1, 1); });
    c.input<elem_t>("x", cols).uniform(-1, 1);
    c.output<elem_t>("y", rows).zeroed();  // the benchmark zeroes y before every call
}

static void launch(kw::Case& c, kw::Impl impl) {
    const int rows = c.iparam("rows");
    const int width = int(c.buffer("col_ids").count() / size_t(rows));
    kw_entry(impl)(rows, width, c.dev<elem_t>("values"), c.dev<int>("col_ids"), c.dev<elem_t>("x"),
                   c.dev<elem_t>("y"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t rows = c.iparam("rows"), width = c.buffer("col_ids").count() / rows;
    const elem_t* values = c.host<elem_t>("values");
    const int* col = c.host<int>("col_ids");
    const elem_t* x = c.host<elem_t>("x");
    ref.expect("y", double(width), [&](size_t r) {
        double sum = 0;
        for (size_t s = r * width; s < (r + 1) * width; ++s)
            if (col[s] != -1) sum += kw::to_double(values[s]) * kw::to_double(x[col[s]]);
        return sum;
    });
}

KW_MAIN(setup, launch, reference)
