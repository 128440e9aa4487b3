"""correctness.outputs, run for real on the CPU stand-in: the program's validator runs in the candidate's
process and can be forged; the outputs it writes under $KW_OUTPUTS are compared in the worker with those of the
shipped solution's own run, so a forged success line, a missing, extra or linked file is not `ok`."""

from pathlib import Path

import numpy as np
import pytest

from tests.worker.formats.make.test_taskyaml_eval import NAIVE, make_task, run, solution, task_data
from worker.engine.results import Verdict
from worker.engine.taskspec import SpecError, Tolerance
from worker.formats.make import outputs
from worker.formats.make.evaluation import evaluate_make, validate_make
from worker.formats.make.schema import load_make_spec

# After the harness has printed "Failed" and returned 1, an atexit handler prints times and a success line
# assembled at run time (literals would be refused by the source rule) and ends the process with status 0.
FORGES_SUCCESS = """#include <unistd.h>
static void kw_forge() {
    for (int c = 0; c < 3; ++c) printf("%cernel time: 0.5 ms\\n%cef time: %d ms\\n", 'K', 'R', 2 * (c + 1));
    printf("%c%s\\n", 'P', "assed"); fflush(stdout); _exit(0); }
static int kw_forge_armed = atexit(kw_forge);"""
# ... and also writes every output file itself, all zeros, through a call the source rule cannot see (token
# pasting; a solution file that is a header is not compiled alone, so the object check does not see it either).
FORGES_FILES_TOO = "#define KW_CAT(a, b) a##b\n" + FORGES_SUCCESS.replace("fflush(stdout);", """fflush(stdout);
    static float zeros[5000];
    for (int c = 1; c <= 3; ++c) { char p[64]; snprintf(p, sizeof p, ".kw-outputs/case%d.bin", c);
        FILE* f = KW_CAT(fo, pen)(p, "wb"); fwrite(zeros, 4, c == 1 ? 100 : c == 2 ? 1000 : 5000, f); fclose(f); }""")


@pytest.fixture
def judged(tmp_path):
    return make_task(tmp_path / "tasks", task_data(correctness={
        "mode": "stdout_or_exit", "tolerances": {"atol": 1.0e-6, "rtol": 1.0e-6}, "outputs": {"dtype": "float32"}}))


def test_a_correct_candidate_whose_outputs_match_the_shipped_solutions_is_ok(judged, cpu_chain, options):
    ev = run(judged, solution(costs="1.0"), cpu_chain, options)
    assert ev.verdict == Verdict.OK, ev.reason
    assert ev.score is not None


def test_a_success_line_forged_at_exit_is_incorrect_when_the_outputs_are_judged_outside(
        tmp_path, judged, cpu_chain, options):
    forged = solution(body="y[i] = 0.0f;", extra=FORGES_SUCCESS)
    unjudged = make_task(tmp_path / "plain", task_data())
    plain = run(unjudged, forged, cpu_chain, options)
    assert plain.verdict == Verdict.OK, plain.reason  # the program's own verdict is forged
    ev = run(judged, forged, cpu_chain, options)
    assert ev.verdict == Verdict.INCORRECT
    assert "it wrote no case1.bin under $KW_OUTPUTS" in ev.reason and "outside the candidate's process" in ev.reason


def test_output_files_forged_with_the_success_line_are_compared_element_by_element(judged, cpu_chain, options):
    ev = run(judged, solution(body="y[i] = 0.0f;", extra=FORGES_FILES_TOO), cpu_chain, options)
    assert ev.verdict == Verdict.INCORRECT, ev.reason
    assert "case1.bin: 99 of 100 elements differ from the shipped solution's" in ev.reason
    assert "first at index 0: expected 12.571428, got 0" in ev.reason


def test_less_work_once_timing_starts_is_incorrect_when_the_last_timed_calls_outputs_are_judged(
        tmp_path, judged, cpu_chain, options):
    """Right on each case's checked call, nothing on the timed calls after it: the program's own check passes,
    and the outputs of the last timed call, which the task writes, differ from the shipped solution's."""
    lazy = solution(body="y[i] = 2.0f * x[i];").replace(
        "{ for (int i = 0;", "{ static int kw_calls = 0; if (kw_calls++ % 6 != 0) return; for (int i = 0;")
    assert "kw_calls" in lazy
    plain = run(make_task(tmp_path / "plain", task_data()), lazy, cpu_chain, options)
    assert plain.verdict == Verdict.OK, plain.reason  # the program alone checks only the first call of a case
    ev = run(judged, lazy, cpu_chain, options)
    assert ev.verdict == Verdict.INCORRECT, ev.reason
    assert "case1.bin: 100 of 100 elements differ from the shipped solution's" in ev.reason, ev.reason


def test_an_outputs_folder_swapped_for_a_link_is_not_read(judged, cpu_chain, options):
    swap = """#include <filesystem>
static void kw_swap() { std::filesystem::remove_all(".kw-outputs");
    std::filesystem::create_directory_symlink("../reference/.kw-outputs", ".kw-outputs"); }
static int kw_swap_armed = atexit(kw_swap);"""
    ev = run(judged, solution(extra=swap), cpu_chain, options)
    assert ev.verdict == Verdict.INCORRECT
    assert "its outputs folder is not a folder of its own" in ev.reason


def test_a_shipped_solution_that_writes_no_outputs_is_the_tasks_problem(tmp_path, cpu_chain, options):
    data = task_data(correctness={"mode": "stdout_or_exit", "outputs": {"dtype": "float32"}})
    spec = make_task(tmp_path / "tasks", data)
    harness = (spec.directory / "test.cpp").read_text().replace('getenv("KW_OUTPUTS")', 'getenv("KW_NOWHERE")')
    (spec.directory / "test.cpp").write_text(harness)
    ev = validate_make(spec, "fp32", options, chain=cpu_chain)
    assert ev.verdict == Verdict.RUNTIME_ERROR
    assert "the shipped solution's outputs under $KW_OUTPUTS cannot be used (a task problem" in ev.reason
    candidate = run(spec, NAIVE, cpu_chain, options)
    assert candidate.verdict == Verdict.RUNTIME_ERROR and "a task problem" in candidate.reason


def test_the_outputs_dtype_must_be_one_the_runner_reads(tmp_path):
    with pytest.raises(SpecError, match=r"correctness.outputs.dtype.*'complex64' must be one of float32"):
        make_task(tmp_path / "tasks", task_data(correctness={"mode": "stdout_or_exit",
                                                              "outputs": {"dtype": "complex64"}}))


# ---------------------------------------------------------------- the comparison itself


def _folder(tmp_path, name, files):
    folder = outputs.prepare(tmp_path / name)
    for file, data in files.items():
        (folder / file).write_bytes(data)
    return folder


def test_missing_extra_resized_and_differing_files_are_each_named(tmp_path):
    tol = Tolerance(1e-3, 1e-3, "test")
    shipped = {"a.bin": np.array([1, 2, 3], np.float32), "b.bin": np.array([4], np.float32)}
    assert outputs.compare(dict(shipped), shipped, "float32", tol) is None
    assert "it wrote no b.bin" in outputs.compare({"a.bin": shipped["a.bin"]}, shipped, "float32", tol).reason
    extra = dict(shipped, **{"c.bin": np.zeros(1, np.float32)})
    assert "it wrote c.bin" in outputs.compare(extra, shipped, "float32", tol).reason
    short = dict(shipped, **{"a.bin": np.array([1, 2], np.float32)})
    assert "a.bin holds 2 float32 elements; the shipped solution's 3" in outputs.compare(short, shipped, "float32",
                                                                                        tol).reason
    nan = dict(shipped, **{"a.bin": np.array([1, np.nan, 3], np.float32)})
    assert "first at index 1: expected 2, got nan" in outputs.compare(nan, shipped, "float32", tol).reason


def test_bfloat16_outputs_are_compared_as_numbers_and_integers_exactly(tmp_path):
    one, one_and_a_bit = np.array([0x3F80], np.uint16), np.array([0x3F81], np.uint16)  # 1.0, 1.0078125
    assert outputs.compare({"x": one_and_a_bit}, {"x": one}, "bfloat16", Tolerance(1e-2, 0, "t")) is None
    assert outputs.compare({"x": one_and_a_bit}, {"x": one}, "bfloat16", Tolerance(1e-3, 0, "t")) is not None
    assert outputs.compare({"x": np.array([7], np.int32)}, {"x": np.array([8], np.int32)}, "int32",
                           Tolerance(1, 1, "t")).reason.endswith("expected 8, got 7")


def test_links_hard_links_and_odd_names_in_a_candidates_folder_are_refused(tmp_path):
    real = _folder(tmp_path, "real", {"a.bin": b"\0" * 8})
    linked = _folder(tmp_path, "linked", {})
    (linked / "a.bin").symlink_to(real / "a.bin")
    with pytest.raises(outputs.OutputsError, match="cannot be read as a file"):
        outputs.read(linked, "float32")
    hard = _folder(tmp_path, "hard", {})
    (hard / "a.bin").hardlink_to(real / "a.bin")
    with pytest.raises(outputs.OutputsError, match="not a plain file of its own"):
        outputs.read(hard, "float32")
    swapped = tmp_path / "swapped"
    swapped.symlink_to(real)
    with pytest.raises(outputs.OutputsError, match="not a folder of its own"):
        outputs.read(swapped, "float32")
    odd = _folder(tmp_path, "odd", {".hidden": b"\0" * 4})
    with pytest.raises(outputs.OutputsError, match="plain names only"):
        outputs.read(odd, "float32")
    ragged = _folder(tmp_path, "ragged", {"a.bin": b"\0" * 6})
    with pytest.raises(outputs.OutputsError, match="not a whole number of float32 elements"):
        outputs.read(ragged, "float32")


# ---------------------------------------------------------------- the shipped CUDA example

REPO = Path(__file__).parents[4]
CUDA_TASK = REPO / "tasks" / "cudahercules-examples" / "vector_add_make" / "task.yaml"
FORGED_CU = REPO / "tests/worker/fixtures/taskyaml/candidates/vector_add_make_forged_success_at_exit.cu"
LAZY_CU = REPO / "tests/worker/fixtures/taskyaml/candidates/vector_add_make_lazy_when_timed.cu"


@pytest.mark.parametrize("path", [FORGED_CU, LAZY_CU], ids=["forged success", "lazy when timed"])
def test_a_cheating_cuda_solution_passes_every_rule_before_it_runs(no_gpu_chain, options, path):
    # What stops each is what happens after the build (the GPU tests below): nothing before it.
    spec = load_make_spec(CUDA_TASK)
    assert spec.correctness.outputs is not None
    ev = evaluate_make(spec, "fp32", path.read_text(encoding="utf-8"), None, options, compile_only=True,
                       chain=no_gpu_chain)
    assert ev.verdict == Verdict.OK and ev.kind == "compile_only", ev.reason


@pytest.mark.gpu
def test_gpu_a_cuda_solution_that_forges_its_success_at_exit_is_incorrect(options):
    import worker.engine.toolchain as tc

    ev = evaluate_make(load_make_spec(CUDA_TASK), "fp32", FORGED_CU.read_text(encoding="utf-8"), None, options,
                       chain=tc.detect())
    assert ev.verdict == Verdict.INCORRECT, ev.reason
    assert "it wrote no n1048576.bin under $KW_OUTPUTS" in ev.reason


@pytest.mark.gpu
def test_gpu_a_cuda_solution_that_does_nothing_once_timing_starts_is_incorrect(options):
    """The example's harness poisons C after the warm-up and checks (and writes under $KW_OUTPUTS) what the last
    timed call left."""
    import worker.engine.toolchain as tc

    ev = evaluate_make(load_make_spec(CUDA_TASK), "fp32", LAZY_CU.read_text(encoding="utf-8"), None, options,
                       chain=tc.detect())
    assert ev.verdict == Verdict.INCORRECT, ev.reason
    assert "the last timed call" in ev.reason, ev.reason
