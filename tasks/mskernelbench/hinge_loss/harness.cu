// hinge_loss: per sample, loss[i] = max(0, 1 - p[i]) if targets[i] == 1 and
// max(0, 1 + p[i]) if targets[i] == 0 (labels in {0, 1}, see spec.toml).
// Protocol in tasks/_harness/kw_harness.cuh.
#include "kw_harness.cuh"

using kw::elem_t;

KW_ENTRY(hinge_loss, elem_t* loss, const elem_t* predictions, const int* targets, int N);

static void setup(kw::Case& c) {
    const size_t N = c.iparam("N");
    c.input<elem_t>("predictions", N).uniform(-2, 2);
    c.input<int>("targets", N).randint(0, 1);
    c.output<elem_t>("loss", N);
}

static void launch(kw::Case& c, kw::Impl impl) {
    kw_entry(impl)(c.dev<elem_t>("loss"), c.dev<elem_t>("predictions"), c.dev<int>("targets"), c.iparam("N"));
}

static void reference(kw::Case& c, kw::Reference& ref) {
    const elem_t* p = c.host<elem_t>("predictions");
    const int* t = c.host<int>("targets");
    ref.expect("loss", 1, [&](size_t i) {
        if (t[i] != 0 && t[i] != 1) kw::fail("harness_error", "hinge_loss: a target is not 0 or 1");
        const double y = t[i] == 1 ? 1.0 : -1.0;
        return std::max(0.0, 1.0 - y * kw::to_double(p[i]));
    });
}

KW_MAIN(setup, launch, reference)
