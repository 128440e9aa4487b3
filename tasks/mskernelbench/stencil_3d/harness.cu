// stencil_3d: one step of the 7-point stencil on u_old [nx, ny, nz] (row-major, u[i, j, k]
// at (i * ny + j) * nz + k); boundary points copied unchanged (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(stencil_3d, elem_t* u_new, const elem_t* u_old, float r, int nx, int ny, int nz);

static void setup(kw::Case& c) {
    const size_t nx = c.iparam("nx"), ny = c.iparam("ny"), nz = c.iparam("nz");
    c.input<elem_t>("u_old", nx * ny * nz).uniform(-1, 1);
    c.output<elem_t>("u_new", nx * ny * nz);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("u_new"), c.dev<elem_t>("u_old"), float(c.constant("r")), c.iparam("nx"),
                   c.iparam("ny"), c.iparam("nz"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t nx = c.iparam("nx"), ny = c.iparam("ny"), nz = c.iparam("nz");
    const size_t plane = ny * nz;
    const double r = float(c.constant("r"));  // the kernel receives r as a float
    const elem_t* u = c.host<elem_t>("u_old");
    ref.expect("u_new", 8, [&](size_t idx) {
        const size_t i = idx / plane, j = (idx / nz) % ny, k = idx % nz;
        const double center = kw::to_double(u[idx]);
        if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || k == 0 || k == nz - 1) return center;  // boundary
        const double neighbours = kw::to_double(u[idx - plane]) + kw::to_double(u[idx + plane]) +
                                  kw::to_double(u[idx - nz]) + kw::to_double(u[idx + nz]) +
                                  kw::to_double(u[idx - 1]) + kw::to_double(u[idx + 1]);
        return center + r * (neighbours - 6.0 * center);
    });
}

KW_MAIN(setup, launch, reference)
