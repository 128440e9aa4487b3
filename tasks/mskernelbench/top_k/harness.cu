// top_k: the k largest of input[0..N) in descending order and their indices; equal
// values ordered by ascending index (see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

#include <numeric>

using kw::elem_t;

KW_ENTRY(top_k, elem_t* top_k_values, int* top_k_indices, const elem_t* input, const int N, const int k);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N"), k = c.iparam("k");
    if (k > N) kw::fail("bad_args", "k is larger than N");
    c.input<elem_t>("input", N).uniform(-1, 1);
    c.output<elem_t>("top_k_values", k);
    c.output<int>("top_k_indices", k);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("top_k_values"), c.dev<int>("top_k_indices"), c.dev<elem_t>("input"), c.iparam("N"),
                   c.iparam("k"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const size_t N = c.iparam("N");
    const elem_t* x = c.host<elem_t>("input");
    std::vector<int> order(N);
    std::iota(order.begin(), order.end(), 0);
    // stable: among equal values the smaller index stays first
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return kw::to_double(x[a]) > kw::to_double(x[b]); });
    ref.expect("top_k_values", 1, [&](size_t j) { return kw::to_double(x[order[j]]); });
    ref.expect("top_k_indices", 1, [&](size_t j) { return double(order[j]); });
}

KW_MAIN(setup, launch, reference)
