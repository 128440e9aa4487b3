"""task.yaml tasks: the schema, the stdout parsers and the anti-cheat rules (worker/formats/make/)."""

import copy
import shutil
from pathlib import Path

import pytest
import yaml

from worker.engine.sandbox import SandboxResult
from worker.engine.taskspec import SpecError
from worker.formats.make.output import matches_success, parse_times, times_problem
from worker.formats.make.schema import load_make_spec
from worker.formats.make.spec import MakeTaskSpec
from worker.formats.make.static_checks import check_solution

FIXTURES = Path(__file__).parents[2] / "fixtures" / "taskyaml"
PAPER_TASK = FIXTURES / "class1" / "gemm_softmax"


def paper_data() -> dict:
    return yaml.safe_load((PAPER_TASK / "task.yaml").read_text(encoding="utf-8"))


def write_task(tmp_path: Path, data: dict, name: str = "gemm_softmax", files: dict | None = None) -> Path:
    folder = tmp_path / "suite" / name
    folder.mkdir(parents=True)
    shutil.copy(PAPER_TASK / "solution.h", folder / "solution.h")
    for file, text in (files or {}).items():
        (folder / file).write_text(text, encoding="utf-8")
    (folder / "task.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return folder / "task.yaml"


def broken(tmp_path: Path, change) -> SpecError:
    data = copy.deepcopy(paper_data())
    change(data)
    with pytest.raises(SpecError) as info:
        load_make_spec(write_task(tmp_path, data))
    return info.value


@pytest.fixture(scope="module")
def paper_spec() -> MakeTaskSpec:
    return load_make_spec(PAPER_TASK / "task.yaml")


# ---------------------------------------------------------------- schema


def test_the_papers_example_validates_with_every_member_the_app_uses(paper_spec):
    s = paper_spec
    assert s.backend == "make" and s.name == "gemm_softmax" and s.suite == "class1"
    assert s.task_id == "class1/general/gemm_softmax" and s.task_class == 1 and s.domain == "ml"
    assert s.hardware.min_sm == 80 and s.hardware.tested_sms == (80,)
    assert s.runner.backend == "class1_make" and s.runner.solution_file == "solution.h"
    assert s.runner.timeout_sec == 180 and s.runner.env == {"KH_BENCHMARK": "20"}
    assert s.build.argv == ("make", "test") and s.build.clean_argv == ("make", "clean")
    assert s.execute.argv == ("./test",) and s.execute.success.stdout_regex == "Passed"
    assert s.correctness.mode == "stdout_or_exit"
    assert (s.tolerance("fp32").atol, s.tolerance("fp32").rtol) == (0.01, 0.01)
    assert s.performance.enabled and s.performance.metric == "speedup_ref_over_sol"
    assert s.anti_cheat.required_patterns == ("__global__\\s+void", "<<<.*>>>")
    assert s.title == "Gemm Softmax" and s.category == "dense_linear_algebra"  # guessed from the tag gemm
    assert s.description.startswith("Fused batched GEMM")  # from description.txt beside it
    assert "NVIDIA/cutlass" in s.provenance and "BSD-3-Clause" in s.provenance
    assert s.precisions == ("fp32",) and s.sizes == () and s.complexity == "1" and s.complexity_of({}) == 1.0
    assert s.baseline_source("fp32") == PAPER_TASK / "solution.h"
    assert [p.name for p in s.source_files("fp32")] == ["description.txt", "solution.h", "task.yaml"]
    assert s.success_checks() == ("exit code 0", "output matching /Passed/")


def test_extension_keys_override_the_guesses(tmp_path):
    data = paper_data() | {"title": "Fused GEMM", "category": "fusion", "precision": "bf16",
                           "description": "Write it fast."}
    spec = load_make_spec(write_task(tmp_path, data))
    assert (spec.title, spec.category, spec.precisions, spec.description) == (
        "Fused GEMM", "fusion", ("bf16",), "Write it fast.")


@pytest.mark.parametrize(
    ("tags", "expected"),
    [(["layernorm"], "normalization"), (["flash", "attention"], "attention"), (["fft"], "signal"),
     (["conv2d"], "convolution"), (["radix_sort"], "scan_sort"), (["spmv"], "sparse_matrix"),
     (["crypto"], "other")],
)
def test_the_category_is_guessed_from_tags_and_name(tmp_path, tags, expected):
    data = paper_data() | {"tags": tags, "name": "task_x"}
    assert load_make_spec(write_task(tmp_path, data, name="task_x")).category == expected


def test_without_a_description_a_sentence_is_made(tmp_path):
    spec = load_make_spec(write_task(tmp_path, paper_data()))  # no description.txt in this copy
    assert "ml" in spec.description and "solution.h" in spec.description


def test_the_build_outputs_and_hidden_files_are_not_task_sources(tmp_path):
    path = write_task(tmp_path, paper_data(), files={"Makefile": "test:\n", "test.o": "x", ".notes": "x"})
    (path.parent / "test").write_bytes(b"\x7fELF rest of a program")
    (path.parent / "build").mkdir()
    (path.parent / "build" / "a.cu").write_text("x")
    names = [p.name for p in load_make_spec(path).source_files("fp32")]
    assert names == ["Makefile", "solution.h", "task.yaml"]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda d: d.pop("runner"), "runner", "is required"),
        (lambda d: d["runner"].pop("solution_file"), "runner.solution_file", "is required"),
        (lambda d: d.update(schema_version=2), "schema_version", "only schema_version 1"),
        (lambda d: d.update(name="other"), "name", "must equal the task's folder name"),
        (lambda d: d.update(tags="gemm"), "tags", "must be a list of strings"),
        (lambda d: d["hardware"].update(min_sm="sm_80"), "hardware.min_sm", "like 80, 90 or 100"),
        (lambda d: d["runner"].update(timeout_sec="long"), "runner.timeout_sec", "must be a number"),
        (lambda d: d["correctness"]["tolerances"].update(atol="1e-5"), "correctness.tolerances.atol",
         "write 1.0e-5"),
        (lambda d: d["correctness"]["tolerances"].update(rtol=-0.1), "correctness.tolerances.rtol", ">= 0"),
        (lambda d: d["correctness"].update(mode="fuzzy"), "correctness.mode", "stdout_or_exit, exit_code"),
        (lambda d: d["performance"].update(metric="sol_over_ref"), "performance.metric", "not supported"),
        (lambda d: d["performance"].update(enabled="yes please"), "performance.enabled", "true or false"),
        (lambda d: d["source"].update(commit=1234567), "source.commit", "quote it"),
    ],
)
def test_a_missing_or_mistyped_field_is_named(tmp_path, change, field, message):
    err = broken(tmp_path, change)
    assert err.field == field and message in err.message
    assert err.path.endswith("task.yaml")


def test_an_unknown_key_lists_the_known_ones(tmp_path):
    err = broken(tmp_path, lambda d: d["runner"].update(gpus=2))
    assert err.field == "runner.gpus"
    assert "unknown key gpus" in err.message and "solution_file" in err.message and "timeout_sec" in err.message
    top = broken(tmp_path / "top", lambda d: d.update(priority=1))
    assert top.field == "priority" and "schema_version" in top.message and "anti_cheat" in top.message


def test_an_unsupported_backend_names_the_supported_ones(tmp_path):
    err = broken(tmp_path, lambda d: d["runner"].update(backend="class2_python"))
    assert err.field == "runner.backend"
    assert "'class2_python' is not supported: supported backends are class1_make, make" in err.message


@pytest.mark.parametrize(
    ("section", "command", "char"),
    [("build", "make test; rm -rf /", ";"), ("build", "make test && make run", "&"),
     ("execute", "./test > out.txt", ">"), ("execute", "./test $(cat secret)", "$"),
     ("execute", "./test | tee log", "|"), ("execute", "./test *.bin", "*"), ("build", "make `id`", "`")],
)
def test_shell_metacharacters_in_a_command_are_refused_by_name(tmp_path, section, command, char):
    err = broken(tmp_path, lambda d: d[section].update(cmd=command))
    assert err.field == f"{section}.cmd"
    assert f"shell metacharacter {char!r}" in err.message and "never through a shell" in err.message


def test_a_metacharacter_in_clean_cmd_is_refused_too(tmp_path):
    err = broken(tmp_path, lambda d: d["build"].update(clean_cmd="make clean\nrm -rf ~"))
    assert err.field == "build.clean_cmd" and "'\\n'" in err.message


@pytest.mark.parametrize(
    ("section", "command", "message"),
    [("build", "bash -c make", "must run make, not 'bash'"), ("build", "nvcc -o test test.cu", "must run make"),
     ("build", "make -C /tmp test", "make option '-C' is not allowed"),
     ("build", "make -f ../Makefile", "make option '-f'"),
     ("build", "make test OUT=../../x", "may not point outside"),
     ("execute", "test", "must be a path inside the task folder"),
     ("execute", "/usr/bin/python3 run.py", "must be a path inside the task folder"),
     ("execute", "./../other/test", "must be a path inside the task folder"),
     ("execute", "./test ../secret", "points outside the task folder"),
     ("execute", "./solution.h", "runs the solution file itself")],
)
def test_commands_run_make_and_a_program_of_the_folder(tmp_path, section, command, message):
    err = broken(tmp_path, lambda d: d[section].update(cmd=command))
    assert err.field == f"{section}.cmd" and message in err.message


def test_make_options_that_keep_the_build_in_place_are_allowed(tmp_path):
    data = paper_data()
    data["build"]["cmd"] = "make -s -j8 test ARCH=sm_90"
    data["execute"]["cmd"] = "./bin/test --size 1024"
    assert load_make_spec(write_task(tmp_path, data)).build.argv == ("make", "-s", "-j8", "test", "ARCH=sm_90")


@pytest.mark.parametrize("solution", ["../solution.h", "src/solution.h", ".hidden.h", "Makefile", "task.yaml"])
def test_the_solution_file_is_a_plain_name_in_the_folder(tmp_path, solution):
    err = broken(tmp_path, lambda d: d["runner"].update(solution_file=solution))
    assert err.field == "runner.solution_file"


def test_a_solution_file_that_does_not_exist_is_named(tmp_path):
    err = broken(tmp_path, lambda d: d["runner"].update(solution_file="kernel.cu"))
    assert err.field == "runner.solution_file" and "'kernel.cu' does not exist" in err.message


@pytest.mark.parametrize("name", ["PATH", "LD_PRELOAD", "PYTHONPATH", "CUDA_VISIBLE_DEVICES", "KW_SEED", "MAKEFILES"])
def test_env_may_not_override_what_the_runner_owns(tmp_path, name):
    err = broken(tmp_path, lambda d: d["runner"]["env"].update({name: "/tmp/x"}))
    assert err.field == f"runner.env.{name}" and "may not be set by a task" in err.message


def test_env_values_are_strings_and_keys_identifiers(tmp_path):
    err = broken(tmp_path, lambda d: d["runner"]["env"].update(KH_BENCHMARK=20))
    assert err.field == "runner.env.KH_BENCHMARK" and 'quote it: "20"' in err.message
    err = broken(tmp_path / "b", lambda d: d["runner"]["env"].update({"BAD-NAME": "1"}))
    assert err.field == "runner.env.BAD-NAME" and "identifier" in err.message


def test_a_bad_regex_reports_the_regex_error(tmp_path):
    err = broken(tmp_path, lambda d: d["execute"]["success"].update(stdout_regex="Pass(ed"))
    assert err.field == "execute.success.stdout_regex"
    assert "is not a valid regular expression: missing ), unterminated subpattern" in err.message
    err = broken(tmp_path / "b", lambda d: d["anti_cheat"]["blocked_patterns"].append("cublas["))
    assert err.field == "anti_cheat.blocked_patterns[0]"


@pytest.mark.parametrize(
    ("regex", "groups"), [("Kernel time:\\s*[0-9.]+\\s*ms", 0), ("(Kernel) time:\\s*([0-9.]+)\\s*ms", 2)]
)
def test_a_time_regex_needs_exactly_one_group(tmp_path, regex, groups):
    err = broken(tmp_path, lambda d: d["performance"]["parser"].update(kernel_time_ms_regex=regex))
    assert err.field == "performance.parser.kernel_time_ms_regex"
    assert f"exactly 1 capturing group (the time in ms), it has {groups}" in err.message
    assert "(?:...)" in err.message


def test_enabled_performance_needs_a_kernel_time_regex(tmp_path):
    err = broken(tmp_path, lambda d: d["performance"].pop("parser"))
    assert err.field == "performance.parser.kernel_time_ms_regex" and "is required" in err.message


def test_stdout_regex_mode_needs_the_regex(tmp_path):
    def change(d):
        d["correctness"]["mode"] = "stdout_regex"
        d["execute"]["success"].pop("stdout_regex")

    err = broken(tmp_path, change)
    assert err.field == "execute.success.stdout_regex"


def test_an_unknown_category_lists_the_known_ones(tmp_path):
    err = broken(tmp_path, lambda d: d.update(category="gemm"))
    assert err.field == "category" and "dense_linear_algebra" in err.message


def test_invalid_yaml_is_a_spec_error(tmp_path):
    folder = tmp_path / "s" / "t"
    folder.mkdir(parents=True)
    (folder / "task.yaml").write_text("name: [unclosed\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_make_spec(folder / "task.yaml")
    assert info.value.field == "yaml"
    with pytest.raises(SpecError, match="does not exist"):
        load_make_spec(tmp_path / "nowhere" / "task.yaml")


# ---------------------------------------------------------------- stdout: validation and times


def result(stdout: str, returncode: int | None = 0) -> SandboxResult:
    return SandboxResult(("./test",), returncode, None, False, 0.1, stdout, "", "", "", "")


def test_times_are_paired_case_by_case_in_output_order(paper_spec):
    out = "n=1\nKernel time: 1.5 ms\nRef time: 0.5 ms\nn=2\nKernel time:2 ms\nRef time:   1.25 ms\nPassed\n"
    assert parse_times(out, paper_spec) == [(1.5, 0.5), (2.0, 1.25)]
    assert times_problem(parse_times(out, paper_spec), paper_spec) == ""


def test_missing_reference_times_show_as_none(paper_spec):
    times = parse_times("Kernel time: 1.0 ms\nRef time: 0.5 ms\nKernel time: 3.0 ms\n", paper_spec)
    assert times == [(1.0, 0.5), (3.0, None)]
    assert "case 2 has no readable reference time" in times_problem(times, paper_spec)


def test_a_non_numeric_time_is_none_and_a_problem(paper_spec):
    times = parse_times("Kernel time: 1.2.3 ms\nRef time: 0.5 ms\n", paper_spec)
    assert times == [(None, 0.5)]
    assert "no line matches the kernel time regex" in times_problem(times, paper_spec)
    times = parse_times("Kernel time: 1 ms\nRef time: 1 ms\nKernel time: . ms\nRef time: 1 ms\n", paper_spec)
    assert times == [(1.0, 1.0), (None, 1.0)] and "case 2 has no readable kernel time" in times_problem(
        times, paper_spec)


def test_no_times_at_all_is_a_problem(paper_spec):
    assert parse_times("Passed\n", paper_spec) == []
    assert "no line matches" in times_problem([], paper_spec)


def test_stdout_or_exit_needs_both_the_exit_code_and_the_regex(paper_spec):
    assert matches_success(result("Passed\n"), paper_spec) == (True, "")
    ok, why = matches_success(result("Failed\n"), paper_spec)
    assert not ok and why == "no output line matches /Passed/"
    ok, why = matches_success(result("Passed\n", returncode=1), paper_spec)
    assert not ok and why == "exit status 1 (expected 0)"


def test_exit_code_mode_ignores_stdout(tmp_path):
    data = paper_data()
    data["correctness"]["mode"] = "exit_code"
    spec = load_make_spec(write_task(tmp_path, data))
    assert matches_success(result("no verdict printed\n"), spec)[0]
    assert not matches_success(result("Passed\n", returncode=3), spec)[0]
    assert spec.success_checks() == ("exit code 0",)


def test_stdout_regex_mode_ignores_the_exit_code(tmp_path):
    data = paper_data()
    data["correctness"]["mode"] = "stdout_regex"
    spec = load_make_spec(write_task(tmp_path, data))
    assert matches_success(result("Passed\n", returncode=3), spec)[0]
    assert not matches_success(result("Failed\n"), spec)[0]


# ---------------------------------------------------------------- anti-cheat


@pytest.fixture
def vector_add_spec() -> MakeTaskSpec:
    return load_make_spec(Path(__file__).resolve().parents[4] / "tasks" / "cudahercules-examples" / "vector_add_make"
                          / "task.yaml")


GOOD = """#include "vector_add.h"
#include <cuda_runtime.h>
__global__ void k(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
void vector_add(const float* A, const float* B, float* C, int n) { k<<<(n + 255) / 256, 256>>>(A, B, C, n); }
"""


def test_a_clean_solution_passes(vector_add_spec):
    report = check_solution(GOOD, vector_add_spec)
    assert report.ok, report.messages()
    shipped = vector_add_spec.baseline_source("fp32").read_text(encoding="utf-8")
    assert check_solution(shipped, vector_add_spec).ok


def test_a_blocked_pattern_names_the_pattern_and_the_line(vector_add_spec):
    source = GOOD + "extern void reference_vector_add(const float*, const float*, float*, int);\n"
    messages = check_solution(source, vector_add_spec).messages()
    assert messages == (
        "RULE blocked-pattern: line 8 matches the blocked pattern /reference_vector_add/: "
        "'extern void reference_vector_add(const float*, const float*, float*, int);'",
    )


def test_a_missing_required_pattern_is_named_and_comments_do_not_count(vector_add_spec):
    source = GOOD.replace("k<<<(n + 255) / 256, 256>>>(A, B, C, n);", "/* k<<<1, 1>>>() */ k_host(A, B, C, n);")
    messages = check_solution(source, vector_add_spec).messages()
    assert messages == ("RULE required-pattern: the required pattern /<<<.*>>>/ is missing (outside comments)",)


@pytest.mark.parametrize(
    ("include", "message"),
    [('#include "reference.h"', "reference.h is a file of the task folder that the shipped solution does not "
                                "include"),
     ("#include <reference.cu>", "reference.cu is a file of the task folder"),
     ('#include "test.cu"', "test.cu is a file of the task folder"),
     ('#include "../vector_add/reference.cu"', "absolute paths and '..' are not allowed"),
     ("#include </etc/passwd>", "absolute paths and '..' are not allowed"),
     ("#include REFERENCE_FILE", "computed includes are not allowed"),
     ('#embed "reference.cu"', "may not embed files")],
)
def test_the_solution_may_not_include_the_reference_or_the_harness(vector_add_spec, include, message):
    messages = check_solution(include + "\n" + GOOD, vector_add_spec).messages()
    assert len(messages) == 1 and messages[0].startswith("RULE reference-include: line 1 ")
    assert message in messages[0]


def test_incbin_is_refused(vector_add_spec):
    source = GOOD + 'asm(".incbin \\"reference.cu\\"");\n'
    assert any("reference-include" in m and ".incbin" in m for m in check_solution(source, vector_add_spec).messages())


def test_printing_the_harness_lines_is_refused(vector_add_spec):
    source = GOOD + 'void fake() { printf("Kernel time: %.3f ms\\n", 0.001); puts("Pass" "ed"); }\n'
    messages = check_solution(source, vector_add_spec).messages()
    assert len(messages) == 2 and all(m.startswith("RULE harness-output: line 8") for m in messages)
    assert "kernel time" in messages[0] and "success" in messages[1]


def test_files_processes_and_the_environment_are_off_limits(vector_add_spec):
    source = GOOD + 'int peek() { const char* v = getenv("KH_BENCHMARK"); FILE* f = fopen("ref.bin", "rb"); ' \
                    'return system("ls") + (v != 0) + (f != 0); }\n'
    rules = [m.split(":")[0] for m in check_solution(source, vector_add_spec).messages()]
    assert rules == ["RULE system-call"] * 3
    # exit() in an error check is what naive solutions do; it stays allowed.
    assert check_solution(GOOD + "void fail() { exit(1); }\n", vector_add_spec).ok
