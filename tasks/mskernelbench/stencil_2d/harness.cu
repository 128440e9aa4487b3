// stencil_2d: one step of the 5-point stencil on u_old [nx, ny] (row-major, u[i, j] at
// i * ny + j); boundary points copied unchanged (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(stencil_2d, elem_t* u_new, const elem_t* u_old, float r, int nx, int ny);

static void setup(kw::Case& c) {
    const size_t nx = c.iparam("nx"), ny = c.iparam("ny");
    c.input<elem_t>("u_old", nx * ny).uniform(-1, 1);
    c.output<elem_t>("u_new", nx * ny);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("u_new"), c.dev<elem_t>("u_old"), float(c.constant("r")), c.iparam("nx"),
                   c.iparam("ny"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t nx = c.iparam("nx"), ny = c.iparam("ny");
    const double r = float(c.constant("r"));  // the kernel receives r as a float
    const elem_t* u = c.host<elem_t>("u_old");
    ref.expect("u_new", 6, [&](size_t idx) {
        const size_t i = idx / ny, j = idx % ny;
        const double center = kw::to_double(u[idx]);
        if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1) return center;  // boundary: copied
        const double neighbours = kw::to_double(u[idx - ny]) + kw::to_double(u[idx + ny]) +
                                  kw::to_double(u[idx - 1]) + kw::to_double(u[idx + 1]);
        return center + r * (neighbours - 4.0 * center);
    });
}

KW_MAIN(setup, launch, reference)
