"""Every build routes a call's synchronizes, allocations and every runtime call that queues GPU work through the
harness's wrappers (tasks/_harness/kw_sync.h), so a queued sample can close its segments there, see when the call
queues work again and keep the blocks its calls free: real nvcc and objdump, the candidate loaded late and linked in."""

import re
import shutil
import subprocess

import pytest

from testing.gpu_candidates import LIBRARY
from worker.engine.objcheck import QUEUED_WRAPPED
from worker.formats.cuda.build import HARNESS_DIR, build

VECTOR_ADD = LIBRARY["vector_add"]
CANDIDATE = """
__global__ void add_kernel(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
}
extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    float* scratch = nullptr;
    cudaMalloc(&scratch, sizeof(float));  // the runtime header's template, which calls the C function
    add_kernel<<<(N + 255) / 256, 256>>>(A, B, C, N);
    cudaDeviceSynchronize();
    float first = 0.0f;
    cudaMemcpy(&first, C, sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemset(scratch, 0, sizeof(float));
    cudaFree(scratch);
}
"""

pytestmark = pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")


def calls_in(binary: str, function: str) -> list[str]:
    """The functions `function` calls, from objdump's disassembly of `binary`."""
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True, text=True,
                             check=True).stdout
    body = re.search(rf"^[0-9a-f]+ <{re.escape(function)}>:\n(.*?)(?:\n\n|\Z)", listing, re.M | re.S)
    assert body, f"{function} not found in {binary}"
    return re.findall(r"(?:call|jmp)\s+[0-9a-f]+ <([^>@+]+)", body.group(1))  # a tail call is a jmp


def callers_of(binary: str, function: str) -> set[str]:
    """The functions of `binary` that call `function` (directly or through the PLT)."""
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True, text=True,
                             check=True).stdout
    bodies = re.findall(r"^[0-9a-f]+ <([^>]+)>:\n(.*?)(?=\n\n|\Z)", listing, re.M | re.S)
    call = re.compile(rf"(?:call|jmp)\s+[0-9a-f]+ <{re.escape(function)}(?:@plt)?>")
    return {name for name, body in bodies if call.search(body)}


def assert_only_the_wrappers_call_the_runtime(binary: str) -> None:
    """Every call of a wrapped function, the candidate's and the runtime header's template included, goes through
    its wrapper: only kw_sync.cu's own functions (the wrappers, the segment's close, the release of kept blocks)
    reach the real one (the static CUDA runtime's own internals aside)."""
    kw_sync = re.compile(r"^(__wrap_\w+|kw_sync_release|_ZL\d+(close_segment|queue_work|host_memory)[\w.]*)$")
    for name in QUEUED_WRAPPED:
        # The runtime's own: its static internals, and __cudaLaunchKernel (reached only through its wrapper).
        callers = {c for c in callers_of(binary, name) if not c.startswith("libcudart_static")} - {
            "__cudaLaunchKernel"}
        assert callers and all(kw_sync.match(c) for c in callers), (name, callers)


def test_a_late_loaded_candidates_synchronize_reaches_the_wrapper(chain, shared_build_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("KW_LOAD_AFTER_LOCKDOWN", "1")
    built = build(VECTOR_ADD, "fp32", chain, CANDIDATE, None, work_dir=tmp_path / "w", harness_dir=HARNESS_DIR,
                  cache_dir=shared_build_cache)
    assert built.ok and built.library, built.failure and built.failure.log
    assert "__wrap_cudaDeviceSynchronize" in calls_in(built.library, "vector_add_optimized")
    assert_only_the_wrappers_call_the_runtime(built.library)
    exported = subprocess.run(["nm", "-D", "--defined-only", built.library], capture_output=True, text=True,
                              check=True).stdout
    assert re.search(r" T kw_sync_attach$", exported, re.M)  # the harness points it at its state after dlopen
    # A wrapper for each runtime call the object check counts as seen by queued samples (objcheck.QUEUED_WRAPPED),
    # and the launch of <<<>>> reaches one.
    assert {f"__wrap_{n}" for n in QUEUED_WRAPPED} <= set(re.findall(r" T (__wrap_\w+)$", exported, re.M))
    assert "__wrap___cudaLaunchKernel" in calls_in(built.library, "_Z10add_kernelPKfS0_Pfi")
    # kwbench's own objects and the baseline's entry (timed the same way) go through it too.
    assert "__wrap_cudaDeviceSynchronize" in calls_in(built.reference, "vector_add")


def test_a_linked_in_candidates_synchronize_reaches_the_wrapper(chain, shared_build_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("KW_LOAD_AFTER_LOCKDOWN", "0")
    built = build(VECTOR_ADD, "fp32", chain, CANDIDATE, None, work_dir=tmp_path / "w", harness_dir=HARNESS_DIR,
                  cache_dir=shared_build_cache)
    assert built.ok and built.library is None, built.failure and built.failure.log
    assert "__wrap_cudaDeviceSynchronize" in calls_in(built.executable, "vector_add_optimized")
    assert_only_the_wrappers_call_the_runtime(built.executable)


@pytest.mark.parametrize("call", ["kw_sync_attach(0);", "kw_sync_release(0);", "__real_cudaDeviceSynchronize();",
                                  "__wrap_cudaDeviceSynchronize();", "__real_cudaFree(0);", "__wrap_cudaMalloc(0, 4);"])
def test_a_candidate_that_reaches_for_the_wrapper_itself_is_refused(call, chain, shared_build_cache, tmp_path):
    """Pointing the wrapper elsewhere or calling around it could only lengthen the candidate's own time, but the
    harness's symbols are not the candidate's to call: the object check's import allow-list refuses them."""
    source = (f'extern "C" {{ void kw_sync_attach(void*); void kw_sync_release(void*); '
              f'int __real_cudaDeviceSynchronize(void); int __wrap_cudaDeviceSynchronize(void); '
              f'int __real_cudaFree(void*); int __wrap_cudaMalloc(void**, unsigned long); }}\n'
              f'{CANDIDATE.replace("cudaDeviceSynchronize();", call)}')
    built = build(VECTOR_ADD, "fp32", chain, source, None, work_dir=tmp_path / "w", harness_dir=HARNESS_DIR,
                  cache_dir=shared_build_cache)
    assert not built.ok and built.refused, built
    assert any(call.split("(")[0] in message for message in built.refused), built.refused
