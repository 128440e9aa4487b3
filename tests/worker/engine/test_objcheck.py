"""The object check (worker.engine.objcheck) on objects built by the real nvcc.

Each evasion below gets past the source rules (the name never appears as written: split by
backslash-newline, pasted by a macro) and is refused by what the compiler actually made of it.
"""

from __future__ import annotations

import pytest

from worker.engine import objcheck
from worker.engine.results import Verdict
from worker.formats.cuda.build import link_failure
from worker.formats.cuda.evaluation import evaluate
from worker.formats.cuda.static_checks import check_source

ENTRY = 'extern "C" void scale_optimized(const float* X, float* Y, int N) {\n'
GOOD_BODY = "    for (int i = 0; i < N; ++i) Y[i] = 2.0f * X[i];\n"


def compile_to_object(nvcc, tmp_path, source: str, name: str = "k"):
    from worker.engine import sandbox

    (tmp_path / f"{name}.cu").write_text(source)
    res = sandbox.run([nvcc, "-arch=sm_90", "-O3", "-std=c++17", "-c", f"{name}.cu", "-o", f"{name}.o"],
                      tmp_path, 300)
    assert res.ok, res.output
    return tmp_path / f"{name}.o"


def rejected(spec, chain, options, source):
    ev = evaluate(spec, "fp32", source, None, options, chain=chain, compile_only=True)
    assert ev.verdict == Verdict.REJECTED, ev.reason
    return ev


SPLICED_FOPEN = (
    "#include <cstdio>\n" + ENTRY + GOOD_BODY +
    '    FILE* f = fop\\\nen("/proc/self/maps", "r");\n    if (f) Y[0] = 1.0f;\n}\n'
)
PASTED_FOPEN = (
    "#include <cstdio>\n#define JOIN(a, b) a##b\n" + ENTRY + GOOD_BODY +
    '    FILE* f = JOIN(fo, pen)("/etc/passwd", "r");\n    if (f) Y[0] = 1.0f;\n}\n'
)
MACRO_GETENV = (
    "#include <cstdlib>\n#define ENV(x) get ## env(x)\n" + ENTRY + GOOD_BODY +
    '    if (ENV("OPENAI_API_KEY")) Y[0] = 1.0f;\n}\n'
)
SPLICED_OPEN_PROC = (
    "#include <fcntl.h>\n" + ENTRY + GOOD_BODY + '    int fd = op\\\nen("/proc/self/status", O_RDONLY);\n'
    "    if (fd > 0) Y[0] = 1.0f;\n}\n"
)


@pytest.mark.parametrize(
    ("source", "symbol"),
    [(SPLICED_FOPEN, "fopen"), (PASTED_FOPEN, "fopen"), (MACRO_GETENV, "getenv"), (SPLICED_OPEN_PROC, "open")],
    ids=["spliced-fopen", "pasted-fopen", "macro-getenv", "spliced-open-proc"],
)
def test_a_forbidden_call_built_by_the_preprocessor_is_refused_by_the_object_check(
    scale_spec, no_gpu_chain, cpu_options, source, symbol
):
    assert check_source(source, scale_spec, "fp32").ok  # the text rules do not see it
    ev = rejected(scale_spec, no_gpu_chain, cpu_options, source)
    first = ev.static_violations[0]
    assert first.startswith(f"RULE object-import: line 4 {symbol} ") or first.startswith(
        f"RULE object-import: line 3 {symbol} "), ev.static_violations
    assert "in scale_optimized" in first and "preprocessor built it" in first


@pytest.mark.parametrize(
    ("definition", "symbol"),
    [
        ('extern "C" cudaError_t P(cudaEventElapsed, Time)(float* ms, cudaEvent_t, cudaEvent_t) {\n'
         '    *ms = 1e-6f;\n    return cudaSuccess;\n}\n',
         "cudaEventElapsedTime"),
        ('#include <ctime>\nextern "C" int P(clock_, gettime)(clockid_t, timespec* t) { t->tv_nsec = 0; return 0; }\n',
         "clock_gettime"),
        ('#include <cstddef>\nextern "C" void* P(mal, loc)(size_t n) noexcept { static char b[1 << 20]; return b; }\n',
         "malloc"),
        ("int P(ma, in)(int, char**) { return 0; }\n", "main"),
        ("#include <cstddef>\nvoid* operator new(std::size_t n) { static char b[64]; return b; }\n",
         "operator new(unsigned long)"),
    ],
    ids=["cudaEventElapsedTime", "clock_gettime", "malloc", "pasted-main", "operator-new"],
)
def test_a_definition_that_would_interpose_the_harness_runtime_or_libc_is_refused(
    scale_spec, no_gpu_chain, cpu_options, definition, symbol
):
    source = "#define P(a, b) a##b\n" + definition + ENTRY + GOOD_BODY + "}\n"
    assert check_source(source, scale_spec, "fp32").ok
    ev = rejected(scale_spec, no_gpu_chain, cpu_options, source)
    assert any(v.startswith("RULE object-defines") and f" {symbol} is defined by the candidate" in v
               for v in ev.static_violations), ev.static_violations


def test_a_template_instantiation_the_harness_also_emits_is_accepted(scale_spec, no_gpu_chain, cpu_options):
    # std::vector<float> is instantiated weakly by the harness and by this candidate: the link keeps theirs.
    source = "#include <vector>\n" + ENTRY + (
        "    std::vector<float> t(X, X + N);\n    for (int i = 0; i < N; ++i) Y[i] = 2.0f * t[i];\n}\n")
    ev = evaluate(scale_spec, "fp32", source, None, cpu_options, chain=no_gpu_chain, compile_only=True)
    assert ev.verdict != Verdict.REJECTED and not ev.static_violations, ev.reason


def test_a_strong_definition_of_a_template_the_harness_instantiates_is_refused(
    scale_spec, no_gpu_chain, cpu_options
):
    # An explicit specialization is a strong definition: it would replace the harness's weak instantiation.
    source = (
        "#include <vector>\ntemplate <> std::vector<float>::~vector() noexcept {}\n" + ENTRY + GOOD_BODY + "}\n"
    )
    ev = rejected(scale_spec, no_gpu_chain, cpu_options, source)
    assert any(v.startswith("RULE object-defines") and "~vector" in v for v in ev.static_violations), (
        ev.static_violations)


def test_a_system_call_instruction_from_spliced_host_asm_is_refused(scale_spec, no_gpu_chain, cpu_options):
    source = ENTRY + GOOD_BODY + '    __as\\\nm__ volatile("mov $39, %%eax\\n\\tsyscall" ::: "rax", "rcx", "r11");\n}\n'
    assert check_source(source, scale_spec, "fp32").ok
    ev = rejected(scale_spec, no_gpu_chain, cpu_options, source)
    assert any("host-instruction" in v and "`syscall`" in v and "line 1" in v for v in ev.static_violations)


def test_a_device_clock_read_built_by_token_pasting_is_refused_from_the_sass(
    scale_spec, no_gpu_chain, cpu_options
):
    if not all(objcheck_tools()):
        pytest.skip("cuobjdump/nvdisasm not installed")
    source = (
        "#define CAT(a, b) a##b\n__global__ void stamp(long long* t) { *t = CAT(clock, 64)(); }\n"
        + ENTRY + GOOD_BODY + "    stamp<<<1, 1>>>(nullptr);\n}\n"
    )
    assert check_source(source, scale_spec, "fp32").ok
    ev = rejected(scale_spec, no_gpu_chain, cpu_options, source)
    assert any(v.startswith("RULE timing:") and "SR_CLOCK" in v for v in ev.static_violations)


def objcheck_tools():
    from worker.engine import assembly
    return assembly.tools()


def test_using_the_baseline_through_a_pasted_name_is_calls_baseline(scale_spec, no_gpu_chain, cpu_options):
    source = (
        '#define BASE(x) x ## le\nextern "C" void BASE(sca)(const float*, float*, int);\n' + ENTRY
        + "    BASE(sca)(X, Y, N);\n}\n"
    )
    assert check_source(source, scale_spec, "fp32").ok
    ev = rejected(scale_spec, no_gpu_chain, cpu_options, source)
    assert ev.static_violations[0].startswith("RULE calls-baseline:") and " scale is the baseline's" in ev.reason


def test_ordinary_host_code_passes(nvcc, tmp_path):
    source = (
        "#include <cstdio>\n#include <vector>\n#include <cmath>\n#include <iostream>\n"
        "__device__ float sq(float x) { return x * x; }\n"
        "__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = sq(y[i]) + sinf(y[i]); }\n"
        + ENTRY
        + "    std::vector<float> host(N);\n    static std::vector<int> once(4);\n"
        "    float* tmp; cudaMalloc(&tmp, N * sizeof(float)); cudaStream_t s;\n"
        "    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);\n"
        "    k<<<1, 32, 0, s>>>(tmp, N); cudaStreamSynchronize(s); cudaStreamDestroy(s); cudaFree(tmp);\n"
        "    float* p = new float[N]; delete[] p; printf(\"%f\\n\", std::sqrt(2.0));\n"
        "    std::cerr << cudaGetErrorString(cudaGetLastError()) << std::endl;\n"
        "    if (cudaDeviceSynchronize() != cudaSuccess) fprintf(stderr, \"failed\\n\");\n}\n"
    )
    obj = compile_to_object(nvcc, tmp_path, source)
    report = objcheck.check_object(obj, objcheck.ObjectPolicy(entry="scale_optimized"), source)
    assert report.ok, report.messages()


def test_exit_is_allowed_only_as_nvccs_host_stub_of_a_device_function(nvcc, tmp_path):
    device = "__device__ float f(float x) { return x + 1.0f; }\n" + ENTRY + GOOD_BODY + "}\n"
    obj = compile_to_object(nvcc, tmp_path, device, "dev")
    assert "exit" in objcheck.read_object(obj).undefined  # nvcc's own stub
    assert objcheck.check_object(obj, objcheck.ObjectPolicy(), device).ok
    host = "#include <cstdlib>\n" + ENTRY + GOOD_BODY + "    if (N < 0) exit(3);\n}\n"
    obj = compile_to_object(nvcc, tmp_path, host, "host")
    report = objcheck.check_object(obj, objcheck.ObjectPolicy(), host)
    assert report.messages() == ("RULE object-import: line 4 exit ends the process from the candidate's code "
                                 "(in scale_optimized)",)
    assert objcheck.check_object(obj, objcheck.ObjectPolicy(allow_process_exit=True), host).ok


def test_atexit_from_the_candidates_own_code_is_refused(nvcc, tmp_path):
    source = "#include <cstdlib>\nstatic void bye() {}\n" + ENTRY + GOOD_BODY + "    atexit(bye);\n}\n"
    obj = compile_to_object(nvcc, tmp_path, source)
    (msg,) = objcheck.check_object(obj, objcheck.ObjectPolicy(), source).messages()
    assert msg.startswith("RULE object-import: line 5 atexit registers an exit handler")


def test_an_entry_point_with_cxx_linkage_is_named_in_the_report(nvcc, tmp_path):
    source = "void scale_optimized(const float* X, float* Y, int N) {\n" + GOOD_BODY + "}\n"
    obj = compile_to_object(nvcc, tmp_path, source)
    (msg,) = objcheck.check_object(obj, objcheck.ObjectPolicy(entry="scale_optimized"), source).messages()
    assert 'does not define extern "C" scale_optimized' in msg and "scale_optimized(float const*, float*, int)" in msg


def _link(nvcc, tmp_path, objects):
    from worker.engine import sandbox

    res = sandbox.run([nvcc, "-arch=sm_90", *map(str, objects), "-o", "exe"], tmp_path, 300)
    assert not res.ok
    return res.output


HARNESS = 'extern "C" void scale_optimized(const float*, float*, int);\nint shared_counter = 0;\n' \
          "int main() { scale_optimized(0, 0, 0); return shared_counter; }\n"


def test_a_duplicate_definition_at_link_time_blames_the_candidate_with_its_line(nvcc, tmp_path):
    harness = compile_to_object(nvcc, tmp_path, HARNESS, "harness")
    source = ENTRY + GOOD_BODY + "}\nint shared_counter = 1;\n"
    cand = compile_to_object(nvcc, tmp_path, source, "candidate")
    log = _link(nvcc, tmp_path, [harness, cand])
    report = objcheck.check_object(cand, objcheck.ObjectPolicy(), source)
    reason, at_fault = link_failure(log, report, source)
    assert at_fault and reason.startswith("the candidate defines shared_counter (candidate line 4)")


def test_an_undefined_reference_from_the_candidate_blames_the_candidate(nvcc, tmp_path):
    harness = compile_to_object(nvcc, tmp_path, HARNESS, "harness")
    source = 'extern "C" float helper_defined_nowhere(float);\n' + ENTRY + GOOD_BODY + \
             "    Y[0] = helper_defined_nowhere(Y[0]);\n}\n"
    cand = compile_to_object(nvcc, tmp_path, source, "candidate")
    log = _link(nvcc, tmp_path, [harness, cand])
    reason, at_fault = link_failure(log, objcheck.check_object(cand, objcheck.ObjectPolicy(), source), source)
    assert at_fault and reason.startswith("the candidate uses helper_defined_nowhere (candidate line 1)")


def test_a_link_error_outside_the_candidate_is_a_task_problem(nvcc, tmp_path):
    harness = compile_to_object(
        nvcc, tmp_path, HARNESS.replace("return shared_counter;", "return missing_in_harness();")
        .replace("int shared_counter = 0;", 'extern "C" int missing_in_harness();'), "harness")
    source = ENTRY + GOOD_BODY + "}\n"
    cand = compile_to_object(nvcc, tmp_path, source, "candidate")
    log = _link(nvcc, tmp_path, [harness, cand])
    reason, at_fault = link_failure(log, objcheck.check_object(cand, objcheck.ObjectPolicy(), source), source)
    assert not at_fault and "task/harness problem" in reason and "missing_in_harness" in reason


# The shipped harness's runtime (tasks/_harness/kw_runtime.cu) is an object of its own, linked with every task's
# harness.o: its definitions are the harness's as much as harness.o's. Replacing run_main would write any report;
# replacing the timed calls' comparison kernel would pass every call.
@pytest.mark.parametrize(
    ("definition", "symbol"),
    [
        ("namespace kw { struct TaskDef; int run_main(int, char**, const TaskDef&) { return 0; } }\n",
         "kw::run_main("),
        ("#include <cstddef>\nnamespace kw { namespace timed {\n__global__ void compare_kernel(const void*, "
         "const void*, int, size_t, double, double, unsigned long long*, unsigned long long*) {}\n} }\n",
         "kw::timed::compare_kernel("),
    ],
    ids=["run_main", "compare_kernel"],
)
def test_a_definition_of_the_shared_harness_runtime_is_refused(chain, shared_build_cache, tmp_path, definition,
                                                                symbol):
    from testing.gpu_candidates import LIBRARY
    from worker.formats.cuda.evaluation import EvalOptions

    source = definition + (
        'extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {\n'
        "    for (int i = 0; i < N; ++i) C[i] = A[i] + B[i];\n}\n")
    options = EvalOptions(build_cache=str(shared_build_cache), lock_dir=str(tmp_path / "locks"))
    ev = evaluate(LIBRARY["vector_add"], "fp32", source, None, options, chain=chain, compile_only=True,
                  work_dir=tmp_path / "w")
    assert ev.verdict == Verdict.REJECTED, ev.reason
    assert any(v.startswith("RULE object-defines") and symbol in v and "is defined by the candidate" in v
               for v in ev.static_violations), ev.static_violations


# Queued timing counts on stream 0 ordering all of a call's work (docs/evaluation.md, "Timing protocol"): a blocking
# stream it orders; a stream made with flags or a priority, or a CUDA library's calls, it may not.
STREAM_KERNEL = "__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] *= 2.0f; }\n"


@pytest.mark.parametrize(
    ("make_stream", "unordered"),
    [
        ("cudaStreamCreate(&s);", ()),
        ("cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);", ("cudaStreamCreateWithFlags",)),
        ("int lo, hi; cudaDeviceGetStreamPriorityRange(&lo, &hi); cudaStreamCreateWithPriority(&s, 0, hi);",
         ("cudaStreamCreateWithPriority",)),
        ("s = cudaStreamPerThread;", ()),
    ],
    ids=["blocking", "non-blocking", "priority", "per-thread"],
)
def test_only_streams_the_default_stream_does_not_order_make_the_timing_synchronized(nvcc, tmp_path, make_stream,
                                                                                      unordered):
    source = (STREAM_KERNEL + ENTRY + f"    cudaStream_t s; {make_stream}\n"
              "    k<<<1, 32, 0, s>>>(Y, N);\n}\n")
    symbols = objcheck.read_object(compile_to_object(nvcc, tmp_path, source))
    assert objcheck.unordered_work(symbols) == unordered


# Queued samples also count on seeing every way a call queues work (objcheck.QUEUED_WRAPPED: kw_sync.cu's
# wrappers): after a synchronize the host's clock runs until the call queues work again, so work queued any other way
# would run untimed. Such calls make the timing synchronized; queries, blocking streams and host memory do not.
HOST_FN = "static void CUDART_CB host_fn(void*) {}\n"


@pytest.mark.parametrize(
    ("body", "unseen"),
    [
        ("    cudaLaunchHostFunc(0, host_fn, nullptr);\n", ("cudaLaunchHostFunc",)),
        ("    void* p; cudaMallocAsync(&p, 64, 0); cudaFreeAsync(p, 0);\n", ("cudaFreeAsync", "cudaMallocAsync")),
        ("    cudaGraph_t g; cudaGraphExec_t e; cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal);\n"
         "    k<<<1, 32>>>(Y, N); cudaStreamEndCapture(0, &g); cudaGraphInstantiate(&e, g, 0);\n"
         "    cudaGraphLaunch(e, 0);\n",
         ("cudaGraphInstantiate", "cudaGraphLaunch", "cudaStreamBeginCapture", "cudaStreamEndCapture")),
        ("    float* h; cudaMallocHost(&h, 4); k<<<1, 32>>>(Y, N); cudaDeviceSynchronize();\n"
         "    cudaMemcpy(h, Y, 4, cudaMemcpyDeviceToHost); cudaMemsetAsync(Y, 0, 4); int n = 0;\n"
         "    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, 32, 0); cudaFreeHost(h);\n", ()),
    ],
    ids=["host-function", "stream-ordered-allocation", "graph", "wrapped-and-inert"],
)
def test_work_queued_where_no_wrapper_sees_it_makes_the_timing_synchronized(nvcc, tmp_path, body, unseen):
    source = STREAM_KERNEL + HOST_FN + ENTRY + body + "}\n"
    symbols = objcheck.read_object(compile_to_object(nvcc, tmp_path, source))
    assert objcheck.unordered_work(symbols) == unseen
    assert objcheck.unordered_work(objcheck.read_imports(tmp_path / "k.o")) == unseen
    assert objcheck.read_imports(tmp_path / "missing.o") is None


def test_a_library_call_or_an_unreadable_object_makes_the_timing_synchronized(nvcc, tmp_path):
    # cuBLAS's own declarations (its header is not part of every toolkit install)
    source = ('extern "C" int cublasCreate_v2(void**);\n'
              'extern "C" int cublasSscal_v2(void*, int, const float*, float*, int);\n' + ENTRY +
              "    void* h; cublasCreate_v2(&h); cublasSscal_v2(h, N, nullptr, Y, 1);\n}\n")
    symbols = objcheck.read_object(compile_to_object(nvcc, tmp_path, source))
    assert objcheck.unordered_work(symbols, ("cublas",)) == ("cublasCreate_v2", "cublasSscal_v2")
    assert objcheck.unordered_work(symbols, ()) == ()  # without cublas allowed, the object check refuses it anyway
    assert objcheck.unordered_work(None) == ("an object the check could not read",)
