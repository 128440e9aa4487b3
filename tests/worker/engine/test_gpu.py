"""On a GPU machine: the real tasks, the real harness, the real candidates (`make test-gpu`).

Skipped without a GPU (nvidia-smi -L fails). Each file in tests/gpu_candidates/ says in its
header comment which task it is for, "(vector_add FP32)", and what should happen,
"// Expected: incorrect ..."; an explicit `// expect: <verdict>` line wins over the prose.
"""

from __future__ import annotations

import dataclasses
import time

import pytest

from testing.gpu_candidates import CANDIDATE_FILES, CASES, LIBRARY, expected_verdict, options_for, task_of
from worker.engine import toolchain as tc
from worker.engine.results import Bottleneck, Verdict
from worker.formats.cuda.evaluation import EvalOptions, evaluate, evaluate_baseline, validate

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_chain():
    chain = tc.detect()
    if chain.gpu is None:
        pytest.skip(chain.gpu_reason)
    return chain


@pytest.fixture
def options(tmp_path_factory, shared_build_cache):
    # shared_build_cache honours KW_TEST_BUILD_CACHE, so objects compiled elsewhere can be carried in.
    root = tmp_path_factory.getbasetemp()
    return EvalOptions(build_cache=str(shared_build_cache), timing_cache=str(root / "gpu-times"), iters=20)


@pytest.mark.parametrize(("spec", "precision"), CASES, ids=[f"{s.name}-{p}" for s, p in CASES])
def test_baseline_matches_its_cpu_reference(spec, precision, gpu_chain, options):
    ev = validate(spec, precision, options, chain=gpu_chain)
    assert ev.verdict == Verdict.OK, ev.reason


@pytest.mark.parametrize("path", CANDIDATE_FILES, ids=[p.name for p in CANDIDATE_FILES])
def test_candidate_gets_its_expected_verdict(path, gpu_chain, options):
    want = expected_verdict(path)
    if want is None:
        pytest.skip(f"no expected verdict for {path.name} (add `// expect: <verdict>`)")
    task, precision = task_of(path)
    options = options_for(path, options)
    ev = evaluate(LIBRARY[task], precision, path.read_text(encoding="utf-8"), None, options, chain=gpu_chain)
    assert ev.verdict == want, f"{ev.reason}\n{ev.memcheck_log[-2000:]}"
    if ev.verdict == Verdict.OK:
        assert ev.score is not None and all(s.correct for s in ev.sizes)
    check = DETAILS.get(path.stem)
    if check:
        assert check(ev, options), ev.to_json(indent=1)[:3000]


DETAILS = {
    "cached_result": lambda ev, o: ev.sizes[0].first_mismatch["seed"] == o.seed_base + 1,
    "modifies_input": lambda ev, o: ev.sizes[0].changed_input == "A",
    "oob_write": lambda ev, o: "past the end of C" in (ev.sizes[0].out_of_bounds or ""),
    "unwritten_output": lambda ev, o: ev.sizes[0].first_mismatch["got"] == "nan" and "never written" in ev.reason,
    "infinite_loop": lambda ev, o: ev.crash.size_index == 0 and "candidate call" in ev.crash.message,
    "size_special_case": lambda ev, o: ev.sizes[0].correct and not ev.sizes[1].correct,
    "oob_write_far": lambda ev, o: ev.crash.kind == "illegal_address",
}


VADD_ILLEGAL = """
__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i + (1 << 28)] = A[i] + B[i];  // far past the end: a real fault
}
extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    vector_add_kernel_optimized<<<(N + 255) / 256, 256>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
"""

VADD_ONE_PAST = """
__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= N) C[i] = (i < N ? A[i] + B[i] : 0.0f);  // writes C[N]: caught by the guard zone
}
extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    vector_add_kernel_optimized<<<(N + 256) / 256, 256>>>(A, B, C, N);
    cudaDeviceSynchronize();
}
"""

def test_an_illegal_address_is_classified_and_memchecked(gpu_chain, options):
    ev = evaluate(LIBRARY["vector_add"], "fp32", VADD_ILLEGAL, None, options, chain=gpu_chain)
    assert ev.verdict == Verdict.RUNTIME_ERROR
    assert ev.crash.kind == "illegal_address" and ev.crash.size_index == 0
    if gpu_chain.sanitizer:
        assert "Invalid __global__ write" in ev.memcheck_log


def test_a_write_one_past_the_end_is_caught_by_the_guard_zone(gpu_chain, options):
    ev = evaluate(LIBRARY["vector_add"], "fp32", VADD_ONE_PAST, None, options, chain=gpu_chain)
    assert ev.verdict == Verdict.INCORRECT
    assert ev.sizes[0].out_of_bounds and "past the end" in ev.reason


# A deliberately slow vector_add over [lo, hi) (the sum recomputed 256 times: hundreds of microseconds at
# N = 2^18), for the tests below that place its work where a sample might miss it.
VADD_SLOW_KERNEL = """
__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int lo, int hi) {{
    int i = lo + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= hi) return;
    float c = 0.0f;
    for (int r = 0; r < 256; ++r) c = A[i] + B[i] + c * 1e-30f;
    C[i] = c;
}}
"""
# Launched on a stream of each kind and left running when the entry returns: whichever the stream, the sample must
# hold the kernel.
VADD_SLOW_ON = VADD_SLOW_KERNEL + """
extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {{
    static cudaStream_t s = 0;
    static bool made = false;
    if (!made) {{ {make} made = true; }}
    vector_add_kernel_optimized<<<(N + 255) / 256, 256, 0, s>>>(A, B, C, 0, N);  // no synchronize on purpose
}}
"""
STREAMS = {
    "default": "s = 0;",
    "blocking": "cudaStreamCreate(&s);",
    "per-thread": "s = cudaStreamPerThread;",
    "non-blocking": "cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);",
}


def test_work_left_running_on_any_stream_is_inside_the_timed_sample(gpu_chain, options):
    """Queued samples rely on the default stream ordering the call's work: it does for blocking and per-thread
    streams; a candidate that can make a non-blocking stream is timed with a device-wide synchronize instead. Had a
    sample missed the kernel, its time would be the spacer's gap (about a microsecond), not the kernel's."""
    queued = dataclasses.replace(options, queued_timing=True)
    evs = {kind: evaluate(LIBRARY["vector_add"], "fp32", VADD_SLOW_ON.format(make=make), None, queued,
                          chain=gpu_chain) for kind, make in STREAMS.items()}
    for kind, ev in evs.items():
        assert ev.verdict == Verdict.OK, f"{kind}: {ev.reason}"
        synchronized = any("synchronize after every call" in n for n in ev.notes)
        assert synchronized == (kind == "non-blocking"), (kind, ev.notes)
    largest = {kind: ev.sizes[-1].candidate.median_ms for kind, ev in evs.items()}
    assert all(ms >= 0.7 * largest["default"] for ms in largest.values()), largest


# Its work placed around the call's own synchronizes (queued samples close a segment at each:
# tasks/_harness/kw_sync.h). Whatever the placement, the work must stay inside the sample.
VADD_SLOW_AROUND_SYNC = VADD_SLOW_KERNEL + """
static void part(const float* A, const float* B, float* C, int lo, int hi) {{
    if (hi > lo) vector_add_kernel_optimized<<<(hi - lo + 255) / 256, 256>>>(A, B, C, lo, hi);
}}
extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {{
    {body}
}}
"""
AROUND_SYNC = {
    "then synchronizes": "part(A, B, C, 0, N); cudaDeviceSynchronize();",
    "works after its synchronize": "cudaDeviceSynchronize(); part(A, B, C, 0, N); cudaStreamSynchronize(0);",
    "synchronizes between halves": "part(A, B, C, 0, N / 2); cudaDeviceSynchronize(); part(A, B, C, N / 2, N); "
                                   "cudaDeviceSynchronize();",
    "leaves it running after a synchronize": "cudaDeviceSynchronize(); part(A, B, C, 0, N);",
    # cudaFree waits for the device too: it closes a segment, and the block is kept for the next call.
    "frees scratch while its work runs": "float* s = nullptr; cudaMalloc(&s, 64); part(A, B, C, 0, N); cudaFree(s);",
    "works in scratch it allocates": "float* s = nullptr; cudaMalloc(&s, N * sizeof(float)); part(A, B, s, 0, N); "
                                     "cudaMemcpyAsync(C, s, N * sizeof(float), cudaMemcpyDeviceToDevice); "
                                     "cudaDeviceSynchronize(); cudaFree(s);",
    # Synchronous copies through pageable memory go through the harness's pinned staging area.
    "copies through the host between halves": "part(A, B, C, 0, N / 2); cudaDeviceSynchronize(); "
                                              "float* h = (float*)malloc(N / 2 * sizeof(float)); "
                                              "cudaMemcpy(h, C, N / 2 * sizeof(float), cudaMemcpyDeviceToHost); "
                                              "cudaMemcpy(C, h, N / 2 * sizeof(float), cudaMemcpyHostToDevice); "
                                              "free(h); part(A, B, C, N / 2, N); cudaDeviceSynchronize();",
    # The host's time between a synchronize and the next work is on the host's clock: it must count in full.
    "computes half on the host": "part(A, B, C, 0, N / 2); cudaDeviceSynchronize(); const int h = N - N / 2; "
                                 "float* a = (float*)malloc(3 * h * sizeof(float)); float* b = a + h; "
                                 "float* c = b + h; "
                                 "cudaMemcpy(a, A + N / 2, h * sizeof(float), cudaMemcpyDeviceToHost); "
                                 "cudaMemcpy(b, B + N / 2, h * sizeof(float), cudaMemcpyDeviceToHost); "
                                 "for (int i = 0; i < h; ++i) { float x = 0.0f; "
                                 "for (int r = 0; r < 64; ++r) x = a[i] + b[i] + x * 1e-30f; c[i] = x; } "
                                 "cudaMemcpy(C + N / 2, c, h * sizeof(float), cudaMemcpyHostToDevice); free(a);",
}


def test_work_around_the_calls_own_synchronize_is_inside_the_queued_sample(gpu_chain, options):
    """A queued sample leaves out only the host's wake-up inside the call's cudaDeviceSynchronize (or cudaFree, or a
    synchronous copy to the host) and a launch's way to an idle GPU: work before it, between two of them, after the
    last one (waited for another way, or left running) is all timed, host work between them on the host's clock, and
    a call that allocates and frees scratch gets its block back from the harness's cache in the next call."""
    queued = dataclasses.replace(options, queued_timing=True)
    evs = {kind: evaluate(LIBRARY["vector_add"], "fp32", VADD_SLOW_AROUND_SYNC.format(body=body), None, queued,
                          chain=gpu_chain) for kind, body in AROUND_SYNC.items()}
    for kind, ev in evs.items():
        assert ev.verdict == Verdict.OK, f"{kind}: {ev.reason}"
    assert evs["then synchronizes"].sizes[-1].candidate.closed_syncs > 0  # the wrapper closed segments
    for kind in ("frees scratch while its work runs", "works in scratch it allocates"):
        timing = evs[kind].sizes[-1].candidate
        assert timing.kept_allocs >= timing.samples and timing.closed_syncs > 0, (kind, timing)
    # A call that synchronizes inside is timed alone behind the spacer (no launch onto an idle GPU): one per sample,
    # or a spaced batch whose every call has its own flush, spacer and events.
    assert all(s.candidate.batch == 1 or s.candidate.spaced
               for ev in evs.values() for s in ev.sizes if s.candidate.closed_syncs), evs
    largest = {kind: ev.sizes[-1].candidate.median_ms for kind, ev in evs.items()}
    assert all(ms >= 0.7 * largest["then synchronizes"] for ms in largest.values()), largest
    # Half the work done by the host, one sequential loop: far slower than the GPU's half it replaces.
    assert largest["computes half on the host"] >= 1.5 * largest["then synchronizes"], largest


def test_baseline_evaluation_is_cached_and_profiled(gpu_chain, options):
    spec = LIBRARY["vector_add"]
    profile = "filtered" if gpu_chain.ncu else "none"
    first = evaluate_baseline(spec, "fp32", dataclasses.replace(options, profile=profile), chain=gpu_chain)
    assert first.verdict == Verdict.OK and all(s.baseline for s in first.sizes)
    again = evaluate_baseline(spec, "fp32", options, chain=gpu_chain)
    assert again.baseline_cached
    if gpu_chain.ncu:
        assert first.profiles, first.notes
        assert {p.size_index for p in first.profiles} == set(range(len(spec.sizes)))
        assert all(p.bottleneck != Bottleneck.UNKNOWN and "Duration" in p.metrics for p in first.profiles)


@pytest.mark.parametrize(("bad", "verdict"), [("infinite_loop.cu", Verdict.TIMEOUT),
                                               ("oob_write_far.cu", Verdict.RUNTIME_ERROR)])
def test_after_a_hung_or_context_poisoning_candidate_the_next_evaluation_is_served(bad, verdict, gpu_chain,
                                                                                   options):
    """Each evaluation is its own process: a killed hang or a poisoned CUDA context ends with it, the GPU lock
    is released, and the next candidate on the same GPU is checked and timed as usual."""
    path = next(p for p in CANDIDATE_FILES if p.name == bad)
    quick = dataclasses.replace(options, check_timeout_s=20)
    ev = evaluate(LIBRARY["vector_add"], "fp32", path.read_text(encoding="utf-8"), None, quick, chain=gpu_chain)
    assert ev.verdict == verdict, ev.reason
    good = next(p for p in CANDIDATE_FILES if p.name == "vector_add_fast.cu")
    started = time.monotonic()
    after = evaluate(LIBRARY["vector_add"], "fp32", good.read_text(encoding="utf-8"), None, options, chain=gpu_chain)
    assert after.verdict == Verdict.OK and all(s.correct for s in after.sizes), after.reason
    assert time.monotonic() - started < 120  # no wait for a lock the failed run still held


def test_a_candidate_turn_carries_its_sass_and_ptx_on_a_gpu_host(gpu_chain, options):
    good = next(p for p in CANDIDATE_FILES if p.name == "vector_add_fast.cu")
    ev = evaluate(LIBRARY["vector_add"], "fp32", good.read_text(encoding="utf-8"), None, options, chain=gpu_chain)
    assert ev.verdict == Verdict.OK
    assert "Function : " in ev.compile.sass and ".entry" in ev.compile.ptx, ev.compile.assembly_note


def test_a_fresh_evaluation_with_unseen_seeds_confirms_a_correct_kernel(gpu_chain, options):
    """Verified before published (worker/engine/verification.py): the record, then a fresh evaluation with a
    new seed base and no cached baseline time, as apps/runs/execution.turn_verify runs it. A kernel whose time
    is the device's (matrix_mul_fast: P 4.31-4.34 in every session): vector_add_fast's calls are mostly the
    host's launch and synchronize, so with other tests building beside it its P moved from 3.85 to 7.05
    (2026-11-29), which the check rightly calls a disagreement."""
    from worker.engine.verification import compare, fresh_options

    source = (CANDIDATE_FILES[0].parent / "matrix_mul_fast.cu").read_text(encoding="utf-8")
    recorded = evaluate(LIBRARY["matrix_mul"], "fp32", source, None, options, chain=gpu_chain)
    fresh = evaluate(LIBRARY["matrix_mul"], "fp32", source, None, fresh_options(987_654_321, options), chain=gpu_chain)
    agreement = compare(recorded.verdict, recorded.score, recorded.gpu, fresh)
    assert agreement.verified, agreement.summary


def test_a_timing_forged_past_every_check_is_refused_by_the_profiler_cross_check(gpu_chain, options):
    """Defence in depth (docs/threat-model.md): forged_time_atexit.cu is rejected by the source and object
    checks; built with both bypassed (as trusted code), its atexit handler rewrites the harness's result and
    divides every time by 100. The parent compares the reported time with the kernel durations Nsight Compute
    measured in a separate process and refuses it."""
    from worker.engine.context import guarded
    from worker.formats.cuda.context import CudaContext
    from worker.formats.cuda.evaluation import _evaluate

    if not gpu_chain.ncu:
        pytest.skip("ncu (Nsight Compute) not found")
    source = (CANDIDATE_FILES[0].parent / "forged_time_atexit.cu").read_text(encoding="utf-8")
    ctx = CudaContext(LIBRARY["vector_add"], "fp32", dataclasses.replace(options, profile="filtered"), gpu_chain, None,
                   None)
    ctx.trusted = True
    ev = guarded(ctx, "candidate", lambda: _evaluate(ctx, source, None, False, trusted=True))
    # The notes say whether Nsight Compute ran (without its durations there is nothing to cross-check).
    assert ev.verdict == Verdict.INCORRECT, f"{ev.reason}; notes: {ev.notes}; profiles: {len(ev.profiles)}"
    assert "forged" in ev.reason and "Nsight Compute" in ev.reason


def test_a_check_forged_past_every_check_does_not_reach_the_verdict(gpu_chain, options):
    """forged_check_atexit.cu, built as trusted code (no source or object check): its zeros are judged by kwref,
    which never runs candidate code, from the buffers the candidate's process sent; the result file its exit
    handler rewrites carries no verdict (docs/evaluation.md, "Who decides the verdict")."""
    from worker.engine.context import guarded
    from worker.formats.cuda.context import CudaContext
    from worker.formats.cuda.evaluation import _evaluate

    source = (CANDIDATE_FILES[0].parent / "forged_check_atexit.cu").read_text(encoding="utf-8")
    ctx = CudaContext(LIBRARY["vector_add"], "fp32", options, gpu_chain, None, None)
    ctx.trusted = True
    ev = guarded(ctx, "candidate", lambda: _evaluate(ctx, source, None, False, trusted=True))
    assert ev.verdict == Verdict.INCORRECT, ev.reason
    assert "C[0] expected" in ev.reason and "got 0" in ev.reason, ev.reason


@pytest.mark.parametrize(("stream", "kind"), [
    (b"", "evidence_missing"),
    (b"KWCASE1\0" + (7).to_bytes(8, "little"), "evidence_invalid"),  # another size's record
    (b"NOTACASE" * 8, "evidence_invalid"),
    (b"KWCASE1\0" + (0).to_bytes(8, "little"), "evidence_invalid"),  # cut off inside the record
], ids=["nothing", "wrong size", "no marker", "cut off"])
def test_kwref_refuses_evidence_that_is_not_the_case_it_rebuilt(stream, kind, gpu_chain, options, tmp_path):
    """The reader of the split check (EvidenceReader, kw_harness.cuh) trusts nothing it is sent."""
    import os

    from worker.engine.harness import run_harness
    from worker.formats.cuda.build import build

    spec = LIBRARY["vector_add"]
    built = build(spec, "fp32", gpu_chain, None, work_dir=tmp_path / "build", cache_dir=options.build_cache)
    assert built.ok and built.reference, built.failure
    read_fd, write_fd = os.pipe()
    os.write(write_fd, stream)
    os.close(write_fd)
    run = run_harness(built.reference, spec, "fp32", "compare", "baseline", [dict(spec.sizes[0])], tmp_path / "ref",
                      120, evidence_fd=read_fd, seeds=1)
    assert run.crash is not None and run.crash.kind == kind, run.crash


def test_less_work_while_timed_names_the_timed_call(gpu_chain, options):
    path = CANDIDATE_FILES[0].parent / "lazy_when_timed.cu"
    ev = evaluate(LIBRARY["vector_add"], "fp32", path.read_text(encoding="utf-8"), None, options, chain=gpu_chain)
    assert ev.verdict == Verdict.INCORRECT
    assert "timed call 0" in ev.reason and "N=1024" in ev.reason, ev.reason


VADD_LAZY_SOMETIMES = """
__global__ void vector_add_kernel_optimized(const float* A, const float* B, float* C, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
}
static int calls = 0;
extern "C" void vector_add_optimized(const float* A, const float* B, float* C, int N) {
    const int n = ++calls > 20 && calls % 5 == 0 ? N / 2 : N;  // every fifth call once timing starts
    vector_add_kernel_optimized<<<(n + 255) / 256, 256>>>(A, B, C, n);
    cudaDeviceSynchronize();
}
"""


def test_less_work_on_one_call_of_a_spaced_batch_is_incorrect_and_names_the_call(gpu_chain, options):
    """Queued, short calls that synchronize inside are timed in spaced batches (each call behind its own flush and
    spacer, the sample their sum): every call of a batch is still checked on its own buffers, so one lazy call in
    five is found and named."""
    ev = evaluate(LIBRARY["vector_add"], "fp32", VADD_LAZY_SOMETIMES, None,
                  dataclasses.replace(options, queued_timing=True), chain=gpu_chain)
    assert ev.verdict == Verdict.INCORRECT, ev.reason
    assert "calls per sample, each timed alone" in ev.reason and "N=1024" in ev.reason, ev.reason


def test_a_memo_keyed_by_contents_never_hits_and_gets_an_honest_time(gpu_chain, options):
    path = CANDIDATE_FILES[0].parent / "memo_by_contents.cu"
    ev = evaluate(LIBRARY["dot_product"], "fp32", path.read_text(encoding="utf-8"), None, options, chain=gpu_chain)
    assert ev.verdict == Verdict.OK, ev.reason
    assert ev.score is not None and ev.score < 2.0, ev.score  # a hit would be tens of times faster


def test_a_call_that_waits_for_the_device_more_than_once_is_timed_beside_its_baseline_when_queued(gpu_chain,
                                                                                                 options):
    """rms_norm's baseline call allocates, synchronizes twice and frees: the host's speed, which moves from second to
    second on a VM, is in its time, so the queued protocol times a candidate beside it, turn by turn on one CPU,
    and P divides by that run's baseline. The baseline's own code as the candidate then scores about 1."""
    spec = LIBRARY["rms_norm"]
    source = (spec.baseline_source("fp32").read_text(encoding="utf-8")
              .replace("rms_norm_", "rms_norm_mine_").replace("void rms_norm(", "void rms_norm_optimized("))
    queued = evaluate(spec, "fp32", source, None, dataclasses.replace(options, queued_timing=True), chain=gpu_chain)
    assert queued.verdict == Verdict.OK, queued.reason
    assert any("timed beside its baseline" in n for n in queued.notes), queued.notes
    assert not queued.baseline_cached and 0.8 < queued.score < 1.25, queued.score
    synchronized = evaluate(spec, "fp32", source, None, options, chain=gpu_chain)
    assert synchronized.verdict == Verdict.OK, synchronized.reason
    assert not any("timed beside its baseline" in n for n in synchronized.notes), synchronized.notes
