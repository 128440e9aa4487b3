// kw_runtime.cu: the harness's task-independent part (options, the driver, checked timing and its kernels, the
// JSON report: everything behind kw::run_main), compiled once per precision and linked with each task's
// harness.o (worker/formats/cuda/build.py), so a task's own harness.cu compiles only its setup, launch and
// reference. Protocol in kw_harness.cuh.
#define KW_HARNESS_RUNTIME
#include "kw_harness.cuh"
