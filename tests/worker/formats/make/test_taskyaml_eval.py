"""The task.yaml runner, run for real: make, g++ and a harness on the CPU (the stand-in GPU of conftest).

Each test writes a small task folder in the CUDAHercules layout: a Makefile that builds ./test with g++,
a harness (test.cpp) that checks the solution against its "expert" reference (reference.h) for three
cases, calls it five more times as if timed, and prints `Kernel time` / `Ref time` per case, then
`Passed`. On the CPU the times are not measured: the solution and the reference each declare theirs
(cost_ms), which stands in for CUDA-event timing so that P and the expert-relative speed can be checked
exactly.
"""

import dataclasses
import math
from pathlib import Path

import pytest
import yaml

from tests.worker.conftest import CPU_STAND_IN
from worker.engine.results import Evaluation, Verdict
from worker.formats.cuda.evaluation import EvalOptions
from worker.formats.make.evaluation import evaluate_make, evaluate_make_baseline, validate_make
from worker.formats.make.output import parse_times
from worker.formats.make.schema import load_make_spec
from worker.formats.make.spec import MakeTaskSpec

FIXTURES = Path(__file__).parents[2] / "fixtures" / "taskyaml"

MAKEFILE = "test: test.cpp solution.h reference.h\n\tg++ -O1 -std=c++17 -o test test.cpp\n\nclean:\n\trm -f test\n"

HARNESS = r"""
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "solution.h"
#include "reference.h"

static double env_number(const char* name, double fallback) {
    const char* v = getenv(name);
    return v && *v ? atof(v) : fallback;
}

int main() {
    const double atol = env_number("KW_ATOL", 1e-6), rtol = env_number("KW_RTOL", 1e-6);
    const int seed = (int)env_number("KW_SEED", 1) % 97;
    const int sizes[] = {100, 1000, 5000};
    for (int c = 0; c < 3; ++c) {
        const int n = sizes[c];
        std::vector<float> x(n), y(n, NAN), r(n);
        for (int i = 0; i < n; ++i) x[i] = (float)((i * 37 + seed) % 101) / 7.0f;
        reference_scale(x.data(), r.data(), n);
        scale(x.data(), y.data(), n);
        for (int i = 0; i < n; ++i) {
            if (!(std::fabs(y[i] - r[i]) <= atol + rtol * std::fabs(r[i]))) {
                printf("Failed: case %d index %d expected %g got %g\n", c + 1, i, r[i], y[i]);
                return 1;
            }
        }
        // The "timed" calls (their times are declared, see cost_ms): the output poisoned first, the last call's
        // written under $KW_OUTPUTS where the task declares correctness.outputs; this program does not check it.
        for (int i = 0; i < n; ++i) y[i] = NAN;
        for (int t = 0; t < 5; ++t) scale(x.data(), y.data(), n);
        if (const char* dir = getenv("KW_OUTPUTS")) {
            char path[512];
            snprintf(path, sizeof path, "%s/case%d.bin", dir, c + 1);
            FILE* f = fopen(path, "wb");
            if (!f || fwrite(y.data(), sizeof(float), n, f) != (size_t)n || fclose(f)) return 2;
        }
        printf("case %d: n=%d\n", c + 1, n);
        printf("Kernel time: %.3f ms\n", cost_ms(c));
        printf("Ref time: %.3f ms\n", reference_cost_ms(c));
    }
    printf("Passed\n");
    return 0;
}
"""

REFERENCE = """#pragma once
inline void reference_scale(const float* x, float* y, int n) { for (int i = 0; i < n; ++i) y[i] = 2.0f * x[i]; }
inline double reference_cost_ms(int c) { return 2.0 * (c + 1); }
"""


def solution(body: str = "y[i] = 2.0f * x[i];", costs: str = "4.0 * (c + 1)", extra: str = "") -> str:
    return (
        "#pragma once\n#include <cstdio>\n#include <cstdlib>\n"
        f"{extra}\n"
        f"inline void scale(const float* x, float* y, int n) {{ for (int i = 0; i < n; ++i) {{ {body} }} }}\n"
        f"inline double cost_ms(int c) {{ return {costs}; }}\n"
    )


NAIVE = solution()  # cases cost 4, 8, 12 ms; the reference 2, 4, 6 ms
FAST = solution(costs="c == 2 ? 2.0 : 1.0 * (c + 1)")  # 1, 2, 2 ms: speedups 4, 4, 6


def task_data(**changes) -> dict:
    data = {
        "schema_version": 1,
        "task_id": "cpu/scale",
        "name": "scale",
        "task_class": 1,
        "domain": "test",
        "tags": ["elementwise"],
        "hardware": {"min_sm": 80, "tested_sms": [90], "required_features": []},
        "runner": {"backend": "class1_make", "timeout_sec": 30, "env": {"KH_BENCHMARK": "5"},
                   "solution_file": "solution.h"},
        "build": {"cmd": "make test", "clean_cmd": "make clean"},
        "execute": {"cmd": "./test", "success": {"exit_code": 0, "stdout_regex": "^Passed$"}},
        "correctness": {"mode": "stdout_or_exit", "tolerances": {"atol": 1.0e-6, "rtol": 1.0e-6}},
        "performance": {"enabled": True, "metric": "speedup_ref_over_sol",
                        "parser": {"kernel_time_ms_regex": "Kernel time:\\s*([0-9.]+)\\s*ms",
                                   "ref_time_ms_regex": "Ref time:\\s*([0-9.]+)\\s*ms"}},
        "anti_cheat": {"blocked_patterns": ["reference_scale"], "required_patterns": ["\\bscale\\s*\\("]},
    }
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        node = data
        for p in parents:
            node = node[p]
        node[key] = value
    return data


def make_task(root: Path, data: dict | None = None, files: dict | None = None) -> MakeTaskSpec:
    folder = root / "cpu" / "scale"
    folder.mkdir(parents=True)
    contents = {"Makefile": MAKEFILE, "test.cpp": HARNESS, "reference.h": REFERENCE, "solution.h": NAIVE}
    for name, text in (contents | (files or {})).items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "task.yaml").write_text(yaml.safe_dump(data or task_data(), sort_keys=False), encoding="utf-8")
    return load_make_spec(folder / "task.yaml")


@pytest.fixture
def task(tmp_path) -> MakeTaskSpec:
    return make_task(tmp_path / "tasks")


def run(spec, source, chain, options, **kwargs) -> Evaluation:
    return evaluate_make(spec, "fp32", source, kwargs.pop("flags", None), options, chain=chain, **kwargs)


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- a valid candidate


def test_a_correct_faster_candidate_scores_p_and_expert_speed_from_the_parsed_times(task, cpu_chain, options):
    ev = run(task, FAST, cpu_chain, options)
    assert ev.verdict == Verdict.OK, ev.reason
    assert ev.kind == "candidate" and ev.gpu == "CPU stand-in" and ev.reason.endswith("3 case(s) timed")
    assert [s.params for s in ev.sizes] == [{"case": 1}, {"case": 2}, {"case": 3}]
    assert [s.baseline.mean_ms for s in ev.sizes] == [4.0, 8.0, 12.0]
    assert [s.candidate.mean_ms for s in ev.sizes] == [1.0, 2.0, 2.0]
    assert [s.reference.mean_ms for s in ev.sizes] == [2.0, 4.0, 6.0]
    assert all(s.candidate.samples == 1 and s.candidate.cv == 0 and s.complexity == 1.0 for s in ev.sizes)
    assert [s.speedup for s in ev.sizes] == [4.0, 4.0, 6.0]
    assert ev.score == pytest.approx(14 / 3)  # the mean speedup over the shipped solution
    assert [s.reference_speedup for s in ev.sizes] == [2.0, 2.0, 3.0]
    assert ev.expert_speedup == pytest.approx(math.prod([2.0, 2.0, 3.0]) ** (1 / 3))  # s_t = t_ref / t_cand
    assert ev.compile.ok and ev.compile.role == "candidate" and ev.compile.command == "make test"
    assert "g++" in ev.compile.log
    assert {"compile", "check", "time_baseline", "lock_wait", "total"} <= set(ev.phases)  # evaluate.py's names
    assert Evaluation.from_json(ev.to_json()) == ev


def test_the_baseline_times_are_cached_per_task_folder(task, cpu_chain, options):
    first = run(task, FAST, cpu_chain, options)
    second = run(task, FAST, cpu_chain, options)
    assert not first.baseline_cached and second.baseline_cached
    assert "time_baseline" not in second.phases
    assert [s.baseline for s in second.sizes] == [s.baseline for s in first.sizes]
    (task.directory / "test.cpp").write_text(HARNESS + "// changed\n", encoding="utf-8")
    assert not run(task, FAST, cpu_chain, options).baseline_cached  # a changed folder is timed again


def test_the_workspace_is_a_copy_and_the_task_folder_is_left_alone(task, cpu_chain, options, tmp_path):
    before = snapshot(task.directory)
    ev = run(task, FAST, cpu_chain, dataclasses.replace(options, keep_work_dir=True), work_dir=tmp_path / "work")
    assert ev.ok
    assert snapshot(task.directory) == before  # no build output, no candidate written there
    assert (tmp_path / "work" / "candidate" / "solution.h").read_text(encoding="utf-8") == FAST
    assert (tmp_path / "work" / "candidate" / "test").is_file()
    assert (tmp_path / "work" / "baseline" / "solution.h").read_text(encoding="utf-8") == NAIVE


def test_scratch_is_removed_after_a_run(task, cpu_chain, options, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    assert run(task, FAST, cpu_chain, options).ok
    assert not any((tmp_path / "scratch").iterdir())


def test_the_tolerances_reach_the_harness(tmp_path, cpu_chain, options):
    off = solution(body="y[i] = 2.0f * x[i] + 0.05f;")
    loose = make_task(tmp_path / "loose", task_data(correctness__tolerances={"atol": 0.1, "rtol": 0.0}))
    assert run(loose, off, cpu_chain, options).ok
    strict = make_task(tmp_path / "strict", task_data(correctness__tolerances={"atol": 0.01, "rtol": 0.0}))
    assert run(strict, off, cpu_chain, options).verdict == Verdict.INCORRECT


def test_proposed_compile_flags_are_noted_and_not_used(task, cpu_chain, options):
    ev = run(task, FAST, cpu_chain, options, flags="nvcc -O3 -arch=sm_90")
    assert ev.ok and "the proposed 'nvcc -O3 -arch=sm_90' were not used" in ev.notes[0]


# ---------------------------------------------------------------- failures


def test_a_wrong_result_is_incorrect_with_the_harness_line(task, cpu_chain, options):
    ev = run(task, solution(body="y[i] = 2.0f * x[i] + (i == 7 ? 1.0f : 0.0f);"), cpu_chain, options)
    assert ev.verdict == Verdict.INCORRECT
    assert "exit status 1 (expected 0)" in ev.reason and "no output line matches /^Passed$/" in ev.reason
    assert "Failed: case 1 index 7 expected" in ev.reason
    assert ev.score is None and ev.expert_speedup is None and ev.sizes == ()


def test_a_candidate_that_never_lets_the_harness_print_passed_is_incorrect(task, cpu_chain, options):
    ev = run(task, solution(body="exit(0);"), cpu_chain, options)  # exits 0 before the harness's verdict
    assert ev.verdict == Verdict.INCORRECT
    assert ev.reason.startswith("the task's validator did not pass: no output line matches /^Passed$/")
    assert ev.score is None


def test_a_build_failure_is_compile_error_with_makes_output(task, cpu_chain, options):
    ev = run(task, solution(body="y[i] = 2.0f * x[i] +;"), cpu_chain, options)
    assert ev.verdict == Verdict.COMPILE_ERROR
    assert not ev.compile.ok and ev.compile.role == "candidate" and ev.compile.command == "make test"
    assert "error" in ev.compile.log and "make: ***" in ev.compile.log
    assert ev.reason.startswith("candidate failed to build: `make test` failed (exit status 2): ")
    assert "check" not in ev.phases


def test_a_hang_is_a_timeout(tmp_path, cpu_chain, options):
    spec = make_task(tmp_path, task_data(runner__timeout_sec=2))
    ev = run(spec, solution(body="volatile int spin = 1; while (spin) {}"), cpu_chain, options)
    assert ev.verdict == Verdict.TIMEOUT
    assert ev.crash.kind == "timeout" and "2 s wall-clock limit" in ev.reason


def test_a_crash_is_a_runtime_error(task, cpu_chain, options):
    ev = run(task, solution(body="*(volatile int*)nullptr = 1;"), cpu_chain, options)
    assert ev.verdict == Verdict.RUNTIME_ERROR
    assert ev.crash.kind == "host_segfault" and ev.crash.signal == 11
    assert ev.reason.startswith("host_segfault: the harness died from SIGSEGV")


def test_cuda_error_text_in_a_failed_run_is_a_runtime_error(task, cpu_chain, options):
    body = 'fprintf(stderr, "CUDA error: an illegal memory access was encountered\\n"); exit(3);'
    ev = run(task, solution(body=body), cpu_chain, options)
    assert ev.verdict == Verdict.RUNTIME_ERROR
    assert ev.crash.kind == "illegal_address" and "illegal memory access" in ev.crash.message


def test_a_rule_breaking_candidate_is_rejected_before_any_build(task, cpu_chain, options):
    source = '#include "reference.h"\n' + solution(body="reference_scale(x, y, n); return;")
    ev = run(task, source, cpu_chain, options)
    assert ev.verdict == Verdict.REJECTED and "compile" not in ev.phases
    assert [v.split(":")[0] for v in ev.static_violations] == ["RULE reference-include", "RULE blocked-pattern"]
    assert ev.reason.endswith("(+1 more)")


def test_min_sm_above_the_gpu_is_no_gpu_with_the_message(tmp_path, cpu_chain, options):
    spec = make_task(tmp_path, task_data(hardware__min_sm=100))
    ev = run(spec, FAST, cpu_chain, options)
    assert ev.verdict == Verdict.NO_GPU
    assert ev.reason == "needs sm_100 or newer; this worker's CPU stand-in is sm_90"
    assert "compile" not in ev.phases


def test_without_a_gpu_the_run_is_no_gpu_but_compile_only_builds(task, no_gpu_chain, options):
    ev = run(task, FAST, no_gpu_chain, options)
    assert ev.verdict == Verdict.NO_GPU and "none is present (nvidia-smi not found (test))" in ev.reason
    built = run(task, FAST, no_gpu_chain, options, compile_only=True)
    assert built.verdict == Verdict.OK and built.kind == "compile_only" and built.compile.ok
    assert "no GPU is present" in built.reason


def test_a_gpu_that_stays_busy_is_a_timeout(task, cpu_chain, options):
    from worker.engine.gpu_lock import gpu_lock

    with gpu_lock(CPU_STAND_IN.lock_key, options.lock_dir):
        ev = run(task, FAST, cpu_chain, dataclasses.replace(options, lock_timeout_s=0.3))
    assert ev.verdict == Verdict.TIMEOUT and "the GPU stayed busy" in ev.reason


def test_performance_off_means_valid_without_a_score(tmp_path, cpu_chain, options):
    spec = make_task(tmp_path, task_data(performance={"enabled": False}))
    ev = run(spec, FAST, cpu_chain, options)
    assert ev.ok and ev.score is None and "measures no performance" in ev.reason


# ---------------------------------------------------------------- the task's own problems


def test_the_baseline_evaluation_times_the_shipped_solution(task, cpu_chain, options):
    ev = evaluate_make_baseline(task, "fp32", options, chain=cpu_chain)
    assert ev.verdict == Verdict.OK and ev.kind == "baseline" and ev.compile.role == "baseline"
    assert [s.baseline.mean_ms for s in ev.sizes] == [4.0, 8.0, 12.0]
    assert [s.reference_speedup for s in ev.sizes] == [0.5, 0.5, 0.5]
    assert ev.expert_speedup == pytest.approx(0.5) and ev.score is None
    again = evaluate_make_baseline(task, "fp32", options, chain=cpu_chain)
    assert again.baseline_cached and again.sizes == ev.sizes


def test_validate_builds_runs_and_parses_the_shipped_solution(task, cpu_chain, options):
    ev = validate_make(task, "fp32", options, chain=cpu_chain)
    assert ev.verdict == Verdict.OK and ev.kind == "validate" and not ev.baseline_cached
    assert len(ev.sizes) == 3


def test_validate_reports_a_harness_whose_times_do_not_parse(tmp_path, cpu_chain, options):
    spec = make_task(tmp_path, files={"test.cpp": HARNESS.replace("Ref time:", "Reference:")})
    ev = validate_make(spec, "fp32", options, chain=cpu_chain)
    assert ev.verdict == Verdict.RUNTIME_ERROR and ev.kind == "validate"
    assert ev.crash.kind == "harness_error"
    assert "the shipped solution's output does not parse (a task problem" in ev.reason
    assert "no readable reference time" in ev.reason
    # A candidate is not blamed for it either.
    cand = run(spec, FAST, cpu_chain, options)
    assert cand.verdict == Verdict.RUNTIME_ERROR and cand.crash.kind == "harness_error"
    assert "a task problem" in cand.reason and cand.compile.role == "candidate"


def test_validate_reports_a_shipped_solution_that_breaks_the_rules(tmp_path, cpu_chain, options):
    spec = make_task(tmp_path, task_data(anti_cheat={"required_patterns": ["__global__"]}))
    ev = validate_make(spec, "fp32", options, chain=cpu_chain)
    assert ev.verdict == Verdict.REJECTED and "(a task problem)" in ev.reason


def test_a_shipped_solution_that_fails_blames_the_task(tmp_path, cpu_chain, options):
    spec = make_task(tmp_path, files={"solution.h": solution(body="y[i] = 0;")})
    ev = evaluate_make_baseline(spec, "fp32", options, chain=cpu_chain)
    assert ev.verdict == Verdict.INCORRECT
    assert ev.reason.startswith("the shipped solution failed (a task problem, not the candidate's)")


def test_a_missing_program_after_the_build_is_a_task_problem(tmp_path, cpu_chain, options):
    spec = make_task(tmp_path, files={"Makefile": "test:\n\t@echo nothing to build\n"})
    ev = run(spec, FAST, cpu_chain, options)
    assert ev.verdict == Verdict.COMPILE_ERROR and "made no ./test (a task problem" in ev.reason


# ---------------------------------------------------------------- on a GPU


# The shipped example task (make, nvcc, a harness with an "expert" kernel) and its faster candidate.
REPO = Path(__file__).resolve().parents[4]
GPU_TASK = REPO / "tasks" / "cudahercules-examples" / "vector_add_make" / "task.yaml"
FAST_CU = REPO / "demo" / "formats" / "vector_add_make_fast.cu"


def test_the_example_cuda_task_builds_with_nvcc(no_gpu_chain, options):
    spec = load_make_spec(GPU_TASK)
    fast = FAST_CU.read_text(encoding="utf-8")
    ev = evaluate_make(spec, "fp32", fast, None, options, compile_only=True, chain=no_gpu_chain)
    assert ev.verdict == Verdict.OK, ev.compile.log if ev.compile else ev.reason
    assert "nvcc" in ev.compile.log and f"-arch={no_gpu_chain.arch}" in ev.compile.log


def test_a_forbidden_call_the_preprocessor_builds_is_refused_after_the_build(no_gpu_chain, options):
    spec = load_make_spec(GPU_TASK)
    fast = FAST_CU.read_text(encoding="utf-8")
    # `fopen` spliced by backslash-newline: the source rules never see the name, the object check does.
    sneaky = "#include <cstdio>\n" + fast + (
        '\nstatic int peek() { FILE* f = fo\\\npen("reference.cu", "r"); return f != nullptr; }\n'
        "static int peeked = peek();\n")
    ev = evaluate_make(spec, "fp32", sneaky, None, options, compile_only=True, chain=no_gpu_chain)
    assert ev.verdict == Verdict.REJECTED, ev.reason
    assert ev.reason.startswith("RULE object-import: line ") and "fopen" in ev.reason
    assert "preprocessor built it" in ev.reason and ev.compile is not None and ev.compile.ok


@pytest.mark.gpu
def test_a_cuda_task_builds_runs_and_scores_on_the_gpu(chain, tmp_path):
    import worker.engine.toolchain as tc

    real = tc.detect()
    spec = load_make_spec(GPU_TASK)
    options = EvalOptions(timing_cache=str(tmp_path / "timings"), lock_dir=str(tmp_path / "locks"),
                          keep_work_dir=True)
    baseline = validate_make(spec, "fp32", options, chain=real, work_dir=tmp_path / "validate")
    assert baseline.verdict == Verdict.OK, baseline.reason
    fast = FAST_CU.read_text(encoding="utf-8")
    ev = evaluate_make(spec, "fp32", fast, None, options, chain=real, work_dir=tmp_path / "candidate")
    assert ev.verdict == Verdict.OK, ev.reason
    assert ev.baseline_cached and len(ev.sizes) == 3
    output = (tmp_path / "candidate" / "candidate" / "kw-run.stdout").read_text(encoding="utf-8")
    assert [s.candidate.mean_ms for s in ev.sizes] == [k for k, _ in parse_times(output, spec)]
    # One block against a full grid: the naive file is far slower; the candidate is about the expert's speed.
    assert ev.score > 5 and all(s.speedup > 1 for s in ev.sizes)
    assert ev.expert_speedup is not None and 0.5 < ev.expert_speedup < 2.0
