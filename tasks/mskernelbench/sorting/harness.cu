// sorting: sort data[0..N) ascending, in place (data is an in/out buffer) (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(sorting, elem_t* data, int N);

static void setup(kw::Case& c) {
    // inout: restored from the pristine copy before every call, compared after it.
    c.inout<elem_t>("data", c.iparam("N")).uniform(-1, 1);
}

static void launch(kw::Case& c, kw::Impl impl) { kw_entry(impl)(c.dev<elem_t>("data"), c.iparam("N")); }

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N");
    const elem_t* x = c.host<elem_t>("data");  // the pristine (unsorted) input
    std::vector<double> sorted(N);
    for (size_t i = 0; i < N; ++i) sorted[i] = kw::to_double(x[i]);
    std::sort(sorted.begin(), sorted.end());
    ref.expect("data", 1, [&](size_t i) { return sorted[i]; });
}

KW_MAIN(setup, launch, reference)
