import dataclasses

import pytest

from worker.formats.cuda.spec import parse_signature
from worker.formats.cuda.static_checks import check_source, normalize_param_type, strip_comments

GOOD = """\
#include <cuda_runtime.h>
// A comment may say anything: scale(X, Y, N); cudaEventRecord(e); system("rm"); int main(
/* block comments too: #include "evil.h" clock64() std::chrono */
__global__ void __launch_bounds__(256) scale_kernel_optimized(const float* __restrict__ x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const char* note = "strings are ignored: scale( fopen( main(";
    (void)note;
    if (i < n) y[i] = 2.0f * x[i];
}

extern "C" void scale_optimized(const float* X, float* Y, const int N) {
    scale_kernel_optimized<<<(N + 255) / 256, 256>>>(X, Y, N);
    cudaDeviceSynchronize();
}
"""

WRAPPER = (
    'extern "C" void scale_optimized(const float* X, float* Y, int N) '
    "{ body_kernel_optimized<<<1, 1>>>(); }\n"
)
KERNEL = "__global__ void body_kernel_optimized() {}\n"


def rules(source, spec, baseline_kernels=()):
    return [v.rule for v in check_source(source, spec, "fp32", baseline_kernels).violations]


def test_accepts_a_well_formed_candidate_whatever_its_comments_and_strings_say(scale_spec):
    report = check_source(GOOD, scale_spec, "fp32")
    assert report.ok, report.messages()


def test_rejects_a_candidate_without_the_optimized_entry_point(scale_spec):
    report = check_source(
        'extern "C" void scale_fast(const float* X, float* Y, int N) {}\n', scale_spec, "fp32"
    )
    assert [v.rule for v in report.violations] == ["entry-point"]
    assert "scale_optimized" in report.messages()[0]


def test_rejects_an_entry_point_with_different_parameter_types(scale_spec):
    source = KERNEL + 'extern "C" void scale_optimized(float* X, float* Y, int N) {}\n'
    report = check_source(source, scale_spec, "fp32")
    assert rules(source, scale_spec) == ["entry-point"]
    assert (
        "(float*, float*, int)" in report.messages()[0]
        and "(const float*, float*, int)" in report.messages()[0]
    )


@pytest.mark.parametrize(
    "params",
    [
        "const float* a, float* b, int n",
        "float const *X, float *Y, const int N",
        "const float* __restrict__ X, float* __restrict__ Y, int N",
        "const float *const X, float* Y, int",
    ],
)
def test_accepts_equivalent_spellings_of_the_parameter_types(scale_spec, params):
    source = KERNEL + f'extern "C" void scale_optimized({params}) {{}}\n'
    assert rules(source, scale_spec) == []


def test_accepts_an_entry_point_inside_an_extern_c_block(scale_spec):
    source = KERNEL + 'extern "C" {\nvoid scale_optimized(const float* X, float* Y, int N) {}\n}\n'
    assert rules(source, scale_spec) == []


def test_rejects_an_entry_point_without_c_linkage(scale_spec):
    source = KERNEL + "void scale_optimized(const float* X, float* Y, int N) {}\n"
    assert rules(source, scale_spec) == ["entry-point"]
    assert 'write extern "C" before its definition' in check_source(source, scale_spec, "fp32").messages()[0]


def test_rejects_calls_to_the_baseline_and_names_line_and_rule(scale_spec):
    source = WRAPPER + KERNEL + "void helper(const float* X, float* Y, int N) {\n    scale(X, Y, N);\n}\n"
    report = check_source(source, scale_spec, "fp32")
    assert report.messages() == (
        "RULE calls-baseline: line 4 calls scale(); the baseline may not be used by the candidate",
    )


def test_rejects_launching_a_baseline_kernel(scale_spec):
    source = WRAPPER + KERNEL + "void go() { scale_kernel<<<1, 1>>>(); }\n"
    assert rules(source, scale_spec, baseline_kernels=("scale_kernel",)) == ["calls-baseline"]


def test_rejects_the_other_precisions_baseline_too(scale_spec):
    source = WRAPPER + KERNEL + "void go() { scale_bf16(0, 0, 1); }\n"
    assert rules(source, scale_spec) == ["calls-baseline"]


def test_rejects_a_main_function(scale_spec):
    assert rules(WRAPPER + KERNEL + "int main() { return 0; }\n", scale_spec) == ["no-main"]


@pytest.mark.parametrize(
    "snippet",
    [
        "void t() { cudaEvent_t e; cudaEventRecord(e); }",
        "void t() { float ms; cudaEventElapsedTime(&ms, 0, 0); }",
        "__device__ long long t() { return clock64(); }",
        "void t() { auto n = std::chrono::steady_clock::now(); }",
        "void t() { struct timeval tv; gettimeofday(&tv, 0); }",
        'void t() {} __device__ unsigned long long g() { unsigned long long r; asm volatile("mov.u64 %0, '
        '%globaltimer;" : "=l"(r)); return r; }',
    ],
)
def test_rejects_timing_and_clock_functions(scale_spec, snippet):
    assert "timing" in rules(WRAPPER + KERNEL + snippet + "\n", scale_spec)


def test_rejects_forbidden_library_includes_and_calls(scale_spec):
    source = "#include <cublas_v2.h>\n#include <thrust/sort.h>\n" + WRAPPER + KERNEL
    source += "void s(float* p) { thrust::sort(p, p + 4); cublasSgemm(0); }\n"
    assert rules(source, scale_spec) == ["forbidden-library"] * 4


def test_allows_a_library_the_task_allows(scale_spec):
    spec = dataclasses.replace(scale_spec, allowed_libraries=("cublas",))
    source = "#include <cublas_v2.h>\n" + WRAPPER + KERNEL + "void s() { cublasCreate(0); }\n"
    assert rules(source, spec) == []


@pytest.mark.parametrize(
    "include",
    ['#include "helpers.cuh"', "#include </etc/passwd>", "#include <../x.h>", "#include MACRO_HEADER"],
)
def test_rejects_local_and_absolute_includes(scale_spec, include):
    assert rules(include + "\n" + WRAPPER + KERNEL, scale_spec) == ["local-include"]


def test_allows_asm_inside_device_code_only(scale_spec):
    device = '__device__ int lane() { int r; asm volatile("mov.u32 %0, %%laneid;" : "=r"(r)); return r; }\n'
    assert rules(WRAPPER + KERNEL + device, scale_spec) == []
    host = 'void h() { asm volatile("syscall"); }\n'
    assert rules(WRAPPER + KERNEL + host, scale_spec) == ["host-asm"]
    both = '__host__ __device__ void hd() { asm volatile("nop"); }\n'
    assert rules(WRAPPER + KERNEL + both, scale_spec) == ["host-asm"]
    file_scope = '__asm__(".incbin \\"/etc/passwd\\"");\n'
    assert rules(WRAPPER + KERNEL + file_scope, scale_spec) == ["host-asm"]


@pytest.mark.parametrize(
    "snippet",
    [
        'void x() { system("ls"); }',
        'void x() { popen("ls", "r"); }',
        'void x() { fopen("/proc/self/maps", "r"); }',
        'void x() { std::ifstream f("/etc/passwd"); }',
        "void x() { fork(); }",
        'void x() { getenv("OPENAI_API_KEY"); }',
        "void x() { exit(0); }",
    ],
)
def test_rejects_process_file_and_environment_access(scale_spec, snippet):
    assert rules(WRAPPER + KERNEL + snippet + "\n", scale_spec) == ["system-call"]


def test_rejects_device_control_calls(scale_spec):
    assert rules(WRAPPER + KERNEL + "void r() { cudaDeviceReset(); }\n", scale_spec) == ["device-control"]


@pytest.mark.parametrize(
    "kernel",
    [
        "__global__ void scale_optimized_kernel(float* y) {}",
        "__global__ void __launch_bounds__(128, 2) tile(float* y) {}",
        "template <int B> __global__ void tile_kernel_optimized(float* y) {}",
        "static __global__ void helper(float* y) {}",
        'extern "C" __global__ void body_vec4(float* y) {}',
    ],
)
def test_accepts_helper_kernels_of_any_name_and_linkage(scale_spec, kernel):
    assert rules(WRAPPER + KERNEL + kernel + "\n", scale_spec) == []


def test_accepts_an_overload_of_the_entry_point_when_exactly_one_matches_the_interface(scale_spec):
    overload = "__global__ void scale_optimized(const int* pairs, float* y, int n, int k) {}\n"
    assert rules(overload + WRAPPER + KERNEL, scale_spec) == []
    twice = WRAPPER + 'extern "C" void scale_optimized(const float* X, float* Y, int N) {}\n'
    assert rules(twice + KERNEL, scale_spec) == ["entry-point"]


def test_accepts_const_added_to_a_pointee_but_not_other_type_changes(scale_spec):
    added = 'extern "C" void scale_optimized(const float* X, const float* Y, int N) {}\n'
    assert rules(KERNEL + added, scale_spec) == []
    changed = 'extern "C" void scale_optimized(const double* X, float* Y, int N) {}\n'
    assert rules(KERNEL + changed, scale_spec) == ["entry-point"]


def test_accepts_leaving_out_trailing_parameters_the_harness_fills_from_constants(scale_spec):
    iface = parse_signature("void scale(const float* X, float* Y, int N, float alpha)")
    spec = dataclasses.replace(scale_spec, interfaces={"fp32": iface}, constants={"alpha": 1.0})
    short = 'extern "C" void scale_optimized(const float* X, float* Y, int N) {}\n'
    assert rules(KERNEL + short, spec) == []
    # N is a size, not a constant: it cannot be left out.
    shorter = 'extern "C" void scale_optimized(const float* X, float* Y) {}\n'
    assert rules(KERNEL + shorter, spec) == ["entry-point"]
    # A parameter the interface does not have would read a register nobody set.
    longer = 'extern "C" void scale_optimized(const float* X, float* Y, int N, float a, float b = 2) {}\n'
    assert rules(KERNEL + longer, spec) == ["entry-point"]


def test_accepts_header_only_cub_primitives_but_not_device_wide_algorithms(scale_spec):
    block = "#include <cub/cub.cuh>\n#include <cuda/std/limits>\n" + WRAPPER + KERNEL + (
        "__global__ void r(float* y) { using R = cub::BlockReduce<float, 128>;\n"
        "  __shared__ typename R::TempStorage t; y[0] = R(t).Sum(y[threadIdx.x]); }\n")
    assert rules(block, scale_spec) == []
    device = WRAPPER + KERNEL + "void s(float* p) { cub::DeviceReduce::Sum(0, 0, p, p, 4); }\n"
    assert rules(device, scale_spec) == ["forbidden-library"]


def test_decides_asm_inside_loops_of_a_kernel_is_device_code(scale_spec):
    kernel = (
        "__global__ void t(float* y) {\n  for (;;) {\n    for (int i = 0; i < 4; ++i) {\n"
        '      asm volatile("cp.async.commit_group;");\n    }\n    if (y) { while (1) { asm("nop;"); } }\n'
        "  }\n}\n"
    )
    assert rules(WRAPPER + KERNEL + kernel, scale_spec) == []
    host = 'void h() {\n  for (;;) { asm volatile("nop"); }\n}\n'
    assert rules(WRAPPER + KERNEL + host, scale_spec) == ["host-asm"]


def test_rejects_a_symbol_the_task_blocks(scale_spec):
    spec = dataclasses.replace(scale_spec, blocked_symbols=("atomicAdd",))
    source = WRAPPER + KERNEL + "__device__ void a(float* p) { atomicAdd(p, 1.0f); }\n"
    assert rules(source, spec) == ["blocked-symbol"]


def test_token_pasting_is_refused_only_where_the_task_blocks_symbols(scale_spec):
    # Elsewhere the object check sees whatever names the preprocessor builds (tests/worker/engine/test_objcheck.py).
    source = "#define CALL(a, b) a##b\n" + WRAPPER + KERNEL
    assert rules(source, scale_spec) == []
    spec = dataclasses.replace(scale_spec, blocked_symbols=("atomicAdd",))
    assert rules(source, spec) == ["token-pasting"]


def test_stripping_keeps_line_numbers():
    text = 'a /* one\ntwo */ b // three\n"four\\"" c\n'
    stripped = strip_comments(text, blank_strings=True)
    assert stripped.count("\n") == text.count("\n")
    assert "one" not in stripped and "three" not in stripped and "four" not in stripped
    assert stripped.split("\n")[2].endswith("c")


def test_normalizes_parameter_types_for_comparison():
    assert normalize_param_type("const __nv_bfloat16 *__restrict__ in") == "const __nv_bfloat16*"
    assert normalize_param_type("const int N") == "int"
    assert normalize_param_type("int32_t B") == "int32_t"
    assert normalize_param_type("unsigned int") == "unsigned int"
    assert normalize_param_type("float* const out") == "float*"


@pytest.mark.parametrize(
    ("params", "advice"),
    [
        ("const float* X, float* Y, int N, cudaStream_t s = 0",
         "a default value never reaches the harness's call, compiled apart with the task's 3 parameters: "
         "remove `cudaStream_t s = 0`"),
        ("const float* X, float* Y, int N, int blocks", "the harness passes only the task's 3 parameters: "
         "remove `int blocks`"),
        ("const float* X, float* Y", "add the missing parameters (int) in this order"),
        ("const float* X, double* Y, int N", "parameter 2 must be float*, not double*"),
    ],
)
def test_a_mismatched_entry_point_is_told_what_to_change(scale_spec, params, advice):
    source = KERNEL + f'extern "C" void scale_optimized({params}) {{}}\n'
    report = check_source(source, scale_spec, "fp32")
    assert [v.rule for v in report.violations] == ["entry-point"]
    assert advice in report.messages()[0], report.messages()[0]
