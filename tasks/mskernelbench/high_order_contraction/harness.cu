// high_order_contraction: C[a,b,c] = sum_{x,y} A[a,x,b,y] * B[x,c,y], all row-major
// (see spec.toml). Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(high_order_contraction, const elem_t* A, const elem_t* B, elem_t* C, int a_dim, int b_dim, int c_dim,
         int x_dim, int y_dim);

static void setup(kw::Case& c) {
    const size_t a = c.iparam("a_dim"), b = c.iparam("b_dim"), cd = c.iparam("c_dim");
    const size_t x = c.iparam("x_dim"), y = c.iparam("y_dim");
    c.input<elem_t>("A", a * x * b * y).uniform(-1, 1);  // [a_dim, x_dim, b_dim, y_dim]
    c.input<elem_t>("B", x * cd * y).uniform(-1, 1);     // [x_dim, c_dim, y_dim]
    c.output<elem_t>("C", a * b * cd);                   // [a_dim, b_dim, c_dim]
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("A"), c.dev<elem_t>("B"), c.dev<elem_t>("C"), c.iparam("a_dim"), c.iparam("b_dim"),
                   c.iparam("c_dim"), c.iparam("x_dim"), c.iparam("y_dim"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t Bd = c.iparam("b_dim"), Cd = c.iparam("c_dim");
    const size_t Xd = c.iparam("x_dim"), Yd = c.iparam("y_dim");
    const elem_t* A = c.host<elem_t>("A");
    const elem_t* B = c.host<elem_t>("B");
    // x_dim * y_dim multiply-adds per element: the largest size (2.1e9) is checked on a sample.
    ref.expect("C", double(Xd * Yd), [&](size_t i) {
        const size_t a = i / (Bd * Cd), b = (i / Cd) % Bd, cc = i % Cd;
        double sum = 0;
        for (size_t x = 0; x < Xd; ++x) {
            const elem_t* a_row = A + ((a * Xd + x) * Bd + b) * Yd;  // A[a, x, b, :]
            const elem_t* b_row = B + (x * Cd + cc) * Yd;            // B[x, c, :]
            for (size_t y = 0; y < Yd; ++y) sum += kw::to_double(a_row[y]) * kw::to_double(b_row[y]);
        }
        return sum;
    });
}

KW_MAIN(setup, launch, reference)
