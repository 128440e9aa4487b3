// spmv_ell: y = A x, A (rows x cols) in row-major ELL, padded with -1, density `density`
// (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(spmv_ell, int rows, int max_nnz_per_row, const elem_t* values, const int* col_ids, const elem_t* x,
         elem_t* y);

static void setup(kw::Case& c) {
    const int rows = c.iparam("rows"), cols = c.iparam("cols");
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
    c.input<elem_t>("x", cols).uniform(-1, 1);
    c.output<elem_t>("y", rows);
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
