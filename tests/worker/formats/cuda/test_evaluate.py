"""The whole evaluation pipeline, run for real on the CPU stand-in task (see conftest)."""

import dataclasses
import json
import shutil
import subprocess

import pytest

from tests.worker.conftest import CPU_TASKS, candidate
from worker.engine import objcheck
from worker.engine.harness import candidate_library
from worker.engine.results import Evaluation, Verdict
from worker.engine.timing import batches_for, timings_by_size
from worker.formats.cuda.evaluation import evaluate, evaluate_baseline, validate
from worker.formats.cuda.spec import load_spec


def run(spec, chain, options, name, **kwargs):
    return evaluate(spec, "fp32", candidate(name), kwargs.pop("flags", None), options, chain=chain, **kwargs)


def test_a_correct_candidate_is_timed_and_scored(scale_spec, cpu_chain, cpu_options):
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_good.cu")
    assert ev.verdict == Verdict.OK, ev.reason
    assert [s.correct for s in ev.sizes] == [True, True, True]
    assert all(s.baseline and s.candidate and s.candidate.samples == 10 for s in ev.sizes)
    assert ev.score is not None and ev.geomean_speedup is not None
    weights = [s.complexity for s in ev.sizes]
    assert ev.score == pytest.approx(
        sum(w * s.speedup for w, s in zip(weights, ev.sizes, strict=True)) / sum(weights)
    )
    assert ev.compile is not None and ev.compile.ok and ev.gpu == "CPU stand-in"
    assert {"compile", "check", "time", "time_baseline", "total"} <= set(ev.phases)


def test_interleaved_timing_takes_turns_so_the_candidate_and_the_baseline_never_run_at_once(
        scale_spec, cpu_chain, cpu_options, tmp_path):
    work = tmp_path / "work"
    # Every call timed alone: batches would need the baseline's cached per-call times first.
    alone = dataclasses.replace(cpu_options, interleave=True, batch_below_ms=0)
    ev = run(scale_spec, cpu_chain, alone, "scale_good.cu", work_dir=work)
    assert ev.verdict == Verdict.OK, ev.reason
    assert not ev.baseline_cached and "time_baseline" not in ev.phases
    cand = json.loads((work / "candidate" / "time-candidate.json").read_text())
    ref = json.loads((work / "reference" / "time-baseline.json").read_text())
    turns = len(scale_spec.sizes) * (1 + cpu_options.iters)  # per size: the warm-up, then one per sample
    assert len(cand["turns"]) == len(ref["turns"]) == turns
    merged = sorted([(a, b, "candidate") for a, b in cand["turns"]] + [(a, b, "baseline") for a, b in ref["turns"]])
    assert all(prev[1] <= nxt[0] for prev, nxt in zip(merged, merged[1:], strict=False)), "two turns overlapped"
    assert [who for *_, who in merged] == ["candidate", "baseline"] * turns  # strictly alternating, candidate first
    # P divides by these baseline times, not by a cached solo run.
    assert [s.baseline.mean_ms for s in ev.sizes] == pytest.approx([s["timing"]["mean_ms"] for s in ref["sizes"]])


def test_short_calls_are_timed_in_the_same_batches_for_the_baseline_and_every_candidate(scale_spec, cpu_chain,
                                                                                         cpu_options, tmp_path):
    batched = dataclasses.replace(cpu_options, batch_below_ms=1e6)  # every size of this CPU task counts as short
    work = tmp_path / "work"
    first = run(scale_spec, cpu_chain, batched, "scale_good.cu", work_dir=work)
    assert first.verdict == Verdict.OK, first.reason
    # The baseline timed per call, the batches decided from that, the baseline timed again in them.
    per_call = json.loads((work / "reference" / "time-baseline.json").read_text())
    decided = batches_for(timings_by_size(per_call), len(scale_spec.sizes), 1e6)
    assert all(b > 1 for b in decided)
    assert [s.baseline.batch for s in first.sizes] == [s.candidate.batch for s in first.sizes] == decided
    (entry,) = [json.loads(p.read_text()) for p in (tmp_path / "timings").glob("*.json")]
    assert entry["batches"] == decided
    second = run(scale_spec, cpu_chain, batched, "scale_good.cu")  # from the cache: the same batches
    assert second.baseline_cached and [s.candidate.batch for s in second.sizes] == decided


# Imports the call that makes a non-blocking stream (never made: the stand-in runs on the CPU).
SCALE_WITH_A_PRIVATE_STREAM = (
    "#include <cuda_runtime.h>\n" + candidate("scale_good.cu").replace(
        "    int i = 0;\n",
        "    static cudaStream_t s;\n    if (N < 0) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);\n"
        "    int i = 0;\n", 1)
)


def test_queued_timing_falls_back_to_synchronized_for_a_candidate_that_can_make_an_unordered_stream(
        scale_spec, cpu_chain, cpu_options, tmp_path):
    def protocols(work):
        runs = [work / "candidate" / "time-candidate.json", work / "reference" / "time-baseline.json"]
        return {json.loads(p.read_text())["config"]["protocol"] for p in runs if p.exists()}

    default = evaluate(scale_spec, "fp32", candidate("scale_good.cu"), None, cpu_options, chain=cpu_chain,
                       work_dir=tmp_path / "default")
    assert default.verdict == Verdict.OK and protocols(tmp_path / "default") == {"synchronized"}
    options = dataclasses.replace(cpu_options, queued_timing=True)
    queued = evaluate(scale_spec, "fp32", candidate("scale_good.cu"), None, options, chain=cpu_chain,
                      work_dir=tmp_path / "queued")
    # Its own baseline timing, not the synchronized one the first evaluation cached
    assert queued.verdict == Verdict.OK and not queued.baseline_cached
    assert protocols(tmp_path / "queued") == {"queued"}
    assert not any("synchronize after every call" in n for n in queued.notes)
    ev = evaluate(scale_spec, "fp32", SCALE_WITH_A_PRIVATE_STREAM, None, options, chain=cpu_chain,
                  work_dir=tmp_path / "synchronized")
    assert ev.verdict == Verdict.OK, ev.reason
    # The baseline's synchronized times are the first evaluation's, from the cache
    assert ev.baseline_cached and protocols(tmp_path / "synchronized") == {"synchronized"}
    assert any("synchronize after every call" in n and "cudaStreamCreateWithFlags" in n for n in ev.notes), ev.notes


def test_a_baseline_that_queues_work_no_wrapper_sees_makes_the_timing_synchronized(cpu_chain, cpu_options,
                                                                                    tmp_path):
    """The baseline is timed as the candidate is: where its object queues work the queued sample's wrappers do not
    see (here a host function, never queued: the stand-in runs on the CPU), both are timed synchronized."""
    folder = tmp_path / "cpu" / "scale"
    shutil.copytree(CPU_TASKS / "cpu" / "scale", folder)
    (folder / "scale.cu").write_text(
        "#include <cuda_runtime.h>\nstatic void CUDART_CB nothing(void*) {}\n"
        'extern "C" void scale(const float* X, float* Y, int N) {\n'
        "    if (N < 0) cudaLaunchHostFunc(0, nothing, nullptr);\n"
        "    for (int i = 0; i < N; ++i) Y[i] = 2.0f * X[i];\n}\n")
    spec = load_spec(folder / "spec.toml")
    options = dataclasses.replace(cpu_options, queued_timing=True)
    ev = evaluate(spec, "fp32", candidate("scale_good.cu"), None, options, chain=cpu_chain, work_dir=tmp_path / "w")
    assert ev.verdict == Verdict.OK, ev.reason
    runs = [tmp_path / "w" / "candidate" / "time-candidate.json", tmp_path / "w" / "reference" / "time-baseline.json"]
    assert {json.loads(p.read_text())["config"]["protocol"] for p in runs} == {"synchronized"}
    assert any("synchronize after every call" in n and "cudaLaunchHostFunc" in n for n in ev.notes), ev.notes


def test_queued_timing_times_the_candidate_beside_a_baseline_whose_call_waits_for_the_device_more_than_once(
        cpu_chain, cpu_options, tmp_path):
    """The host's speed moves from one second to the next on a VM (docs/benchmarks.md): a call that goes back and
    forth between host and device holds it, so the queued protocol times such a task's candidates beside the
    baseline, turn by turn, and divides by those times; a call that waits once (at its end) keeps the cache."""
    def task(syncs_per_call: int):
        folder = tmp_path / f"syncs{syncs_per_call}" / "cpu" / "scale"
        shutil.copytree(CPU_TASKS / "cpu" / "scale", folder)
        (folder / "scale.cu").write_text(
            'extern "C" void kw_standin_sync();\n'
            'extern "C" void scale(const float* X, float* Y, int N) {\n'
            "    for (int i = 0; i < N; ++i) Y[i] = 2.0f * X[i];\n"
            f"    for (int s = 0; s < {syncs_per_call}; ++s) kw_standin_sync();\n}}\n")
        return load_spec(folder / "spec.toml")

    queued = dataclasses.replace(cpu_options, queued_timing=True)
    for syncs in (1, 3):
        spec = task(syncs)
        evaluate(spec, "fp32", candidate("scale_good.cu"), None, queued, chain=cpu_chain)  # the baseline cached
        work = tmp_path / f"work{syncs}"
        ev = evaluate(spec, "fp32", candidate("scale_good.cu"), None, queued, chain=cpu_chain, work_dir=work)
        assert ev.verdict == Verdict.OK, ev.reason
        beside = [n for n in ev.notes if "timed beside its baseline" in n]
        if syncs == 1:
            assert not beside and ev.baseline_cached, ev.notes
            continue
        assert beside and "synchronizes with the host 3 times" in beside[0], ev.notes
        # P divides by the pair's baseline side, not by the cached solo times that decided the pairing.
        assert not ev.baseline_cached
        ref = json.loads((work / "reference" / "time-baseline.json").read_text())
        assert [s.baseline.mean_ms for s in ev.sizes] == pytest.approx([s["timing"]["mean_ms"] for s in ref["sizes"]])
        timing = ref["sizes"][0]["timing"]
        assert timing["closed_syncs"] == 3 * queued.iters * timing["batch"]


def test_baseline_times_are_reused_from_the_cache(scale_spec, cpu_chain, cpu_options):
    solo = cpu_options
    first = run(scale_spec, cpu_chain, solo, "scale_good.cu")
    second = run(scale_spec, cpu_chain, solo, "scale_good.cu")
    assert not first.baseline_cached and second.baseline_cached
    assert "time_baseline" in first.phases and "time_baseline" not in second.phases
    assert [s.baseline for s in second.sizes] == [s.baseline for s in first.sizes]
    fresh = run(scale_spec, cpu_chain, dataclasses.replace(solo, use_baseline_cache=False), "scale_good.cu")
    assert not fresh.baseline_cached


def test_noisy_baseline_times_are_never_cached_so_the_next_evaluation_times_the_baseline_again(
        scale_spec, cpu_chain, cpu_options, tmp_path):
    strict = dataclasses.replace(cpu_options, cache_max_cv=0.0)  # every CPU time has some spread: all "noisy"
    first = run(scale_spec, cpu_chain, strict, "scale_good.cu")
    second = run(scale_spec, cpu_chain, strict, "scale_good.cu")
    assert first.verdict == second.verdict == Verdict.OK, first.reason
    assert not second.baseline_cached and "time_baseline" in second.phases
    assert not list((tmp_path / "timings").glob("*.json"))


def test_a_noisy_entry_already_in_the_cache_is_measured_again_not_divided_by(scale_spec, cpu_chain, cpu_options,
                                                                            tmp_path):
    first = run(scale_spec, cpu_chain, cpu_options, "scale_good.cu")  # no limit: cached
    (path,) = (tmp_path / "timings").glob("*.json")
    entry = json.loads(path.read_text())
    entry["timings"]["1"]["cv"] = 1.38  # one slow sample among fifty, as a max_pooling_2d baseline kept on an H100
    path.write_text(json.dumps(entry))
    limited = dataclasses.replace(cpu_options, cache_max_cv=1.0)
    second = run(scale_spec, cpu_chain, limited, "scale_good.cu")
    assert first.verdict == second.verdict == Verdict.OK
    assert not second.baseline_cached and "time_baseline" in second.phases


def test_a_wrong_element_is_incorrect_with_the_first_mismatch(scale_spec, cpu_chain, cpu_options):
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_wrong.cu")
    assert ev.verdict == Verdict.INCORRECT
    mismatch = ev.sizes[0].first_mismatch
    assert mismatch["index"] == 7 and mismatch["output"] == "Y" and mismatch["seed"] == cpu_options.seed_base
    assert "Y[7]" in ev.reason and "N=1000" in ev.reason
    assert "never written" not in ev.reason  # a wrong value is not an unwritten one
    assert ev.score is None and all(s.candidate is None for s in ev.sizes)


def test_an_unwritten_output_fails_through_the_poison(scale_spec, cpu_chain, cpu_options):
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_skips_tail.cu")
    assert ev.verdict == Verdict.INCORRECT
    assert ev.sizes[0].first_mismatch["index"] == 999
    assert "got nan" in ev.reason
    assert "1 of them never written by the call" in ev.reason, ev.reason  # the message says what happened
    Evaluation.from_json(ev.to_json())  # the NaN survives as strict JSON


def test_less_work_once_timing_starts_is_incorrect_and_names_the_timed_call(scale_spec, cpu_chain, cpu_options):
    alone = dataclasses.replace(cpu_options, batch_below_ms=0)  # one call per sample: the count below is exact
    ev = run(scale_spec, cpu_chain, alone, "scale_lazy_after_12_calls.cu")
    assert ev.verdict == Verdict.INCORRECT, ev.reason
    # The timing process makes 3 warm-up calls at N=1000, then timed calls 0-8 are its calls 4-12 and timed
    # call 9 (its 13th) is the first to skip work.
    assert "timed call 9" in ev.reason and "N=1000" in ev.reason and "Y[500]" in ev.reason
    assert ev.score is None


def test_less_work_inside_a_batch_of_timed_calls_is_incorrect_and_names_the_sample(scale_spec, cpu_chain,
                                                                                   cpu_options):
    # The default protocol: the stand-in's calls are far under batch_below_ms, so every sample is 64 launches,
    # each on its own buffers and each checked like a call timed alone.
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_lazy_after_12_calls.cu")
    assert ev.verdict == Verdict.INCORRECT, ev.reason
    assert "N=1000" in ev.reason and "launches per sample" in ev.reason, ev.reason
    assert ev.score is None


def test_results_remembered_by_input_address_are_never_accepted(scale_spec, cpu_chain, cpu_options):
    # Correctness seeds already change the contents behind the same address; timed calls get fresh ones too.
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_remembers_by_address.cu")
    assert ev.verdict == Verdict.INCORRECT, ev.reason
    assert "Y[0]" in ev.reason and ev.score is None


def _trusted(spec, chain, options, name, work_dir=None):
    """The candidate built as trusted code: no source or object check, so only the rest of the protocol stands
    between it and the verdict (docs/threat-model.md, defence in depth)."""
    from worker.engine.context import guarded
    from worker.formats.cuda.context import CudaContext
    from worker.formats.cuda.evaluation import _evaluate

    ctx = CudaContext(spec, "fp32", options, chain, work_dir, None)
    ctx.trusted = True
    return guarded(ctx, "candidate", lambda: _evaluate(ctx, candidate(name), None, False, trusted=True))


def test_the_check_verdict_comes_from_a_process_linked_without_the_candidate(scale_spec, cpu_chain, cpu_options,
                                                                             tmp_path):
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_good.cu", work_dir=tmp_path / "work")
    assert ev.verdict == Verdict.OK, ev.reason
    work = tmp_path / "work" / "build"
    nm = subprocess.run(["nm", str(work / "kwref")], capture_output=True, text=True, check=True).stdout
    ran = candidate_library(work / "kwbench") or work / "kwbench"  # loaded after the lockdown, or linked in
    assert " T scale_optimized" not in nm and " T scale_optimized" in subprocess.run(
        ["nm", str(ran)], capture_output=True, text=True, check=True).stdout
    verdict = json.loads(next((tmp_path / "work").rglob("compare-baseline.json")).read_text())
    assert [s["correct"] for s in verdict["sizes"]] == [True, True, True]
    sent = json.loads(next((tmp_path / "work").rglob("outputs-candidate.json")).read_text())
    assert all(s["correct"] is None for s in sent["sizes"])  # the candidate's process judges nothing


def test_a_result_forged_by_the_candidates_exit_handler_does_not_reach_the_verdict(scale_spec, cpu_chain,
                                                                                    cpu_options):
    ev = _trusted(scale_spec, cpu_chain, cpu_options, "scale_forges_its_check.cu")
    assert ev.verdict == Verdict.INCORRECT, ev.reason
    assert "Y[0] expected" in ev.reason and "got 0" in ev.reason, ev.reason


def test_a_candidate_process_that_exits_early_with_a_forged_result_is_incorrect(scale_spec, cpu_chain, cpu_options):
    ev = _trusted(scale_spec, cpu_chain, cpu_options, "scale_exits_with_a_forged_result.cu")
    assert ev.verdict == Verdict.INCORRECT, ev.reason
    assert "ended without sending what the check needs" in ev.reason and "size 0 seed" in ev.reason, ev.reason


def test_candidate_code_can_rewrite_neither_the_reference_executable_nor_its_verdict(scale_spec, cpu_chain,
                                                                                     cpu_options, tmp_path):
    work = tmp_path / "work"
    # Not interleaved: the timing's process then runs while kwref does not, so what refuses the write is the
    # confinement, not a busy executable.
    ev = _trusted(scale_spec, cpu_chain, dataclasses.replace(cpu_options, use_baseline_cache=False, interleave=False),
                  "scale_overwrites_the_reference.cu", work_dir=work)
    assert ev.verdict == Verdict.OK, ev.reason  # an honest result, from an intact reference
    assert (work / "build" / "kwref").read_bytes()[:4] == b"\x7fELF"
    # The check's process (while kwref runs beside it, the kernel may answer "Text file busy" first) and the
    # timing's process (kwref has ended) both try.
    attempts = "".join(p.read_text() for p in sorted((work / "candidate").glob("*.stderr")))
    assert "kwref: Permission denied" in (work / "candidate" / "time-candidate.stderr").read_text(), attempts
    assert "compare-baseline.json: Permission denied" in attempts
    assert "done" not in attempts


@pytest.mark.parametrize("lockdown", [None, "1", "0"], ids=["by default", "lockdown", "first stage only"])
def test_the_lockdown_takes_proc_and_new_sockets_from_the_candidates_calls(lockdown, scale_spec, cpu_chain,
                                                                            cpu_options, tmp_path, monkeypatch):
    if lockdown is None:
        monkeypatch.delenv("KW_LOCKDOWN", raising=False)
    else:
        monkeypatch.setenv("KW_LOCKDOWN", lockdown)
    work = tmp_path / "work"
    ev = _trusted(scale_spec, cpu_chain, cpu_options, "scale_reaches_out.cu", work_dir=work)
    assert ev.verdict == Verdict.OK, ev.reason  # the JSON is still written in the run's own folder
    attempts = (work / "candidate" / "outputs-candidate.stderr").read_text()
    if lockdown != "0":
        assert "proc: Permission denied" in attempts and "socket: Operation not permitted" in attempts, attempts
    else:  # the control: the first stage lets a CUDA program have both (the driver needs them to start)
        assert "proc: opened" in attempts and "socket: created" in attempts, attempts


@pytest.mark.parametrize("late", ["1", "0"], ids=["loaded after the lockdown", "linked in"])
def test_a_candidate_loaded_after_the_lockdown_runs_its_constructors_under_it(late, scale_spec, cpu_chain,
                                                                              cpu_options, tmp_path, monkeypatch):
    monkeypatch.delenv("KW_LOCKDOWN", raising=False)
    monkeypatch.setenv("KW_LOAD_AFTER_LOCKDOWN", late)
    work = tmp_path / "work"
    ev = _trusted(scale_spec, cpu_chain, cpu_options, "scale_reaches_out_early.cu", work_dir=work)
    assert ev.verdict == Verdict.OK, ev.reason
    attempts = (work / "candidate" / "outputs-candidate.stderr").read_text()
    library = work / "build" / "candidate.so"
    if late == "1":
        assert "constructor proc: Permission denied" in attempts, attempts
        assert "constructor socket: Operation not permitted" in attempts, attempts
        assert library.is_file()
        # kwbench holds the harness and the baseline only: the candidate's code is nowhere in it
        assert "scale_optimized" not in objcheck.global_definitions(work / "build" / "kwbench")
        assert objcheck.needed_libraries(library) <= objcheck.needed_libraries(work / "build" / "kwbench")
    else:  # the control: linked in, its constructor runs before main, under the first stage only
        assert "constructor proc: opened" in attempts and "constructor socket: created" in attempts, attempts
        assert not library.exists()


def test_a_library_left_by_an_earlier_build_is_never_loaded_into_a_linked_one(scale_spec, cpu_chain, cpu_options,
                                                                               tmp_path, monkeypatch):
    work = tmp_path / "work"
    monkeypatch.setenv("KW_LOAD_AFTER_LOCKDOWN", "1")
    assert run(scale_spec, cpu_chain, cpu_options, "scale_wrong.cu", work_dir=work).verdict == Verdict.INCORRECT
    assert (work / "build" / "candidate.so").is_file()
    monkeypatch.setenv("KW_LOAD_AFTER_LOCKDOWN", "0")
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_good.cu", work_dir=work)
    assert ev.verdict == Verdict.OK, ev.reason  # its own candidate, not the wrong one the old library held
    assert not (work / "build" / "candidate.so").exists()


def test_a_timing_without_its_call_checks_is_refused():
    from worker.engine.results import SizeResult
    from worker.formats.cuda.verdicts import timed_call_failure

    sizes = [SizeResult(index=0, params={"N": 8}, complexity=8)]
    unchecked = {"sizes": [{"index": 0, "correct": None, "timing": {"mean_ms": 1.0}}]}
    assert "not checked" in timed_call_failure(sizes, unchecked)
    checked = {"sizes": [{"index": 0, "correct": True, "timing": {"mean_ms": 1.0, "checked_calls": 50}}]}
    assert timed_call_failure(sizes, checked) is None


def test_a_wrong_timed_call_names_how_its_sample_was_timed():
    from worker.engine.results import SizeResult
    from worker.formats.cuda.verdicts import timed_call_failure

    sizes = [SizeResult(index=0, params={"N": 8}, complexity=8)]
    wrong = {"index": 0, "correct": False, "first_mismatch": {"output": "Y", "index": 3, "timed_call": 37}}

    def reason(**timing):
        return timed_call_failure(sizes, {"sizes": [{**wrong, "timing": {"checked_calls": 40, **timing}}]})

    assert "timed call 37 (of 40 checked)" in reason(batch=1)
    assert "16 launches per sample" in reason(batch=16)
    assert "16 calls per sample, each timed alone" in reason(batch=16, spaced=True)


def test_modifying_an_input_is_incorrect(scale_spec, cpu_chain, cpu_options):
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_modifies_input.cu")
    assert ev.verdict == Verdict.INCORRECT
    assert ev.sizes[0].inputs_unchanged is False and "modified its inputs" in ev.reason


def test_a_crash_is_located_at_its_size_and_classified(scale_spec, cpu_chain, cpu_options):
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_crashes_at_5000.cu")
    assert ev.verdict == Verdict.RUNTIME_ERROR
    assert ev.crash.kind == "host_segfault" and ev.crash.size_index == 1
    assert "N=5000" in ev.reason
    assert "compute-sanitizer not found" in ev.memcheck_log  # the CPU stand-in has none


def test_a_hang_is_killed_and_reported_as_timeout(scale_spec, cpu_chain, cpu_options):
    ev = run(scale_spec, cpu_chain, dataclasses.replace(cpu_options, check_timeout_s=2), "scale_hangs.cu")
    assert ev.verdict == Verdict.TIMEOUT
    assert ev.crash.kind == "timeout" and ev.crash.size_index == 2
    assert ev.memcheck_log == ""


def test_a_compile_error_keeps_the_log(scale_spec, cpu_chain, cpu_options):
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_syntax_error.cu")
    assert ev.verdict == Verdict.COMPILE_ERROR
    assert 'expected a ";"' in ev.reason and 'expected a ";"' in ev.compile.log


def test_static_rejection_happens_before_any_build(scale_spec, cpu_chain, cpu_options):
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_calls_baseline.cu")
    assert ev.verdict == Verdict.REJECTED and ev.compile is None and "compile" not in ev.phases
    assert ev.reason.startswith("RULE calls-baseline: line 1")
    assert len(ev.static_violations) == 2


def test_rejected_flags_are_noted_and_the_run_goes_on(scale_spec, cpu_chain, cpu_options):
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_good.cu", flags="nvcc -O3; rm -rf /")
    assert ev.verdict == Verdict.OK
    assert "';'" in ev.notes[0] and ev.compile.command.startswith("nvcc -O3 -arch=sm_90 -std=c++17")


def test_without_a_gpu_the_run_stops_after_compiling_with_no_gpu(scale_spec, no_gpu_chain, cpu_options):
    ev = run(scale_spec, no_gpu_chain, cpu_options, "scale_good.cu")
    assert ev.verdict == Verdict.NO_GPU and "needs a GPU" in ev.reason
    assert ev.compile is not None and ev.compile.ok


def test_compile_only_builds_without_a_gpu_and_says_so(scale_spec, no_gpu_chain, cpu_options):
    ev = run(scale_spec, no_gpu_chain, cpu_options, "scale_good.cu", compile_only=True)
    assert ev.verdict == Verdict.OK and ev.kind == "compile_only"
    assert "no GPU is present" in ev.reason and ev.sizes == ()


def test_baseline_only_evaluation_times_the_baseline(scale_spec, cpu_chain, cpu_options):
    ev = evaluate_baseline(scale_spec, "fp32", cpu_options, chain=cpu_chain)
    assert ev.verdict == Verdict.OK and ev.kind == "baseline"
    assert all(s.baseline is not None and s.candidate is None for s in ev.sizes)


def test_validate_checks_the_baseline_against_the_cpu_reference(scale_spec, cpu_chain, cpu_options):
    for precision in ("fp32", "bf16"):
        ev = validate(scale_spec, precision, cpu_options, chain=cpu_chain)
        assert ev.verdict == Verdict.OK and ev.kind == "validate", ev.reason
        assert all(s.correct for s in ev.sizes)


def test_a_real_evaluation_round_trips_through_json(scale_spec, cpu_chain, cpu_options):
    ev = run(scale_spec, cpu_chain, cpu_options, "scale_good.cu")
    assert Evaluation.from_json(ev.to_json()) == ev


def _stand_in_ncu(tmp_path, cpu_chain):
    """A toolchain whose ncu runs its target and, when the target succeeds, prints a real ncu CSV."""
    from pathlib import Path

    kit = tmp_path / "kit"
    (kit / "bin").mkdir(parents=True)
    csv = kit / "details.csv"
    csv.write_text((Path(__file__).parents[2] / "fixtures" / "ncu" / "vadd_h100_details.csv").read_text())
    tool = kit / "bin" / "ncu"
    tool.write_text('#!/bin/sh\n'  # the target is the first argument that is an executable file
                    'while [ $# -gt 0 ] && ! { [ -f "$1" ] && [ -x "$1" ]; }; do shift; done\n'
                    f'"$@" >/dev/null || exit $?\ncat {csv}\n')
    tool.chmod(0o755)
    return dataclasses.replace(cpu_chain, ncu=str(tool))


def test_the_profiled_harness_writes_its_result_inside_the_tools_confinement(scale_spec, cpu_chain, cpu_options,
                                                                            tmp_path):
    """Under ncu the harness may write only the tool's run folder: on an H200 (2026-11-27) its result file lay
    beside that folder, the harness exited 2 ("cannot write") and nothing was profiled."""
    chain = _stand_in_ncu(tmp_path, cpu_chain)
    ev = evaluate_baseline(scale_spec, "fp32", dataclasses.replace(cpu_options, profile="filtered"), chain=chain)
    assert ev.verdict == Verdict.OK, ev.reason
    assert not [n for n in ev.notes if "profile" in n], ev.notes
    assert {p.kernel for p in ev.profiles} == {"vadd"} and len(ev.profiles) == len(scale_spec.sizes)


@pytest.mark.parametrize("late", ["1", "0"], ids=["loaded after the lockdown", "linked in"])
def test_a_profiled_candidate_runs_its_own_code_under_the_tool(late, scale_spec, cpu_chain, cpu_options, tmp_path,
                                                              monkeypatch):
    """Under ncu the candidate must be there however it was built: a kwbench without it, given no --candidate,
    would profile nothing and the candidate would have no profile."""
    chain = _stand_in_ncu(tmp_path, cpu_chain)
    monkeypatch.setenv("KW_LOAD_AFTER_LOCKDOWN", late)
    ev = run(scale_spec, chain, dataclasses.replace(cpu_options, profile="filtered"), "scale_good.cu",
             work_dir=tmp_path / "work")
    # The stand-in's canned H100 durations are far above the CPU's times: the profiler cross-check refusing the
    # candidate's time shows its own profile was taken and read.
    assert ev.verdict == Verdict.INCORRECT and "under Nsight Compute" in ev.reason, ev.reason
    assert not [n for n in ev.notes if "profile" in n], ev.notes
    assert len(ev.profiles) == len(scale_spec.sizes)
    assert (tmp_path / "work" / "build" / "candidate.so").exists() == (late == "1")
