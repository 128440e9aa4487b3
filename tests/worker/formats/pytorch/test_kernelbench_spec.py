"""KernelBench task specs: loading a task folder, every broken field's message, writing one (the importer's)."""

import shutil
import tomllib
from pathlib import Path

import pytest

from worker.engine.taskspec import SpecError, Tolerance
from worker.formats.pytorch.spec import PyTorchTaskSpec, load_pytorch_spec, read_model_file
from worker.formats.pytorch.task_writer import kernelbench_category, toml_string, write_pytorch_task

TASKS = Path(__file__).parents[2] / "fixtures" / "kernelbench" / "tasks" / "kb-test"
MODEL = (TASKS / "scale_add" / "model.py").read_text(encoding="utf-8")


def task_copy(tmp_path, name="scale_add", folder=None) -> Path:
    dest = tmp_path / (folder or name)
    shutil.copytree(TASKS / name, dest)
    return dest / "spec.toml"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_loads_a_task_folder_with_sizes_from_the_constants_and_the_docstring_as_description():
    spec = load_pytorch_spec(TASKS / "scale_add" / "spec.toml")
    assert isinstance(spec, PyTorchTaskSpec) and spec.backend == "pytorch"
    assert (spec.name, spec.suite, spec.category) == ("scale_add", "kb-test", "activation")
    assert spec.title == "Scale add"  # no title in the file: made from the name
    assert spec.description.startswith("Scale the columns of `x` by a learned vector and add `y`:\n$out_{ij}")
    assert spec.sizes == ({"rows": 16, "cols": 16},)
    assert spec.complexity == "1" and spec.complexity_of(spec.sizes[0]) == 1.0
    assert spec.interface == "forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor"
    assert spec.precisions == ("fp32",)
    assert spec.tolerance("fp32") == Tolerance(1e-5, 1e-5, "one multiply-add per element")
    assert spec.tolerance("bf16") == Tolerance(1e-2, 1e-2, "KernelBench's default")
    assert spec.forbid_torch_compute is True and spec.compare_compile is False
    assert spec.directory == TASKS / "scale_add"
    assert spec.baseline_source("fp32") == spec.model_path == TASKS / "scale_add" / "model.py"
    assert spec.source_files("fp32") == (TASKS / "scale_add" / "spec.toml", TASKS / "scale_add" / "model.py")
    assert spec.provenance == "KernelWeb test fixture"


def test_optional_fields_take_their_defaults():
    spec = load_pytorch_spec(TASKS / "scale_add_inplace" / "spec.toml")
    assert spec.precisions == ("fp32",)
    assert spec.tolerance("fp32") == Tolerance(1e-2, 1e-2, "KernelBench's default")  # as its own harness checks
    assert spec.forbid_torch_compute is True and spec.compare_compile is False and spec.provenance == ""
    assert spec.description == "Accumulate into `y` in place and return it: `y += x * w`."


BROKEN = [
    # (file, old text, new text, field, part of the message)
    ("spec.toml", 'backend = "pytorch"', 'backend = "cuda"', "backend", 'must be "pytorch"'),
    ("spec.toml", 'name = "scale_add"', 'name = "other_name"', "name", "must equal the folder name"),
    ("spec.toml", 'suite = "kb-test"\n', "", "suite", "is required"),
    ("spec.toml", 'suite = "kb-test"', 'suite = ""', "suite", "must be a non-empty string"),
    ("spec.toml", 'category = "activation"', 'category = "magic"', "category", "is not one of"),
    ("spec.toml", 'model = "model.py"', 'model = "absent.py"', "model", "absent.py is missing"),
    ("spec.toml", 'model = "model.py"', 'model = "../model.py"', "model", "must be a file name in the task folder"),
    ("spec.toml", 'precisions = ["fp32"]', 'precisions = ["fp16"]', "precisions", "non-empty list of distinct"),
    ("spec.toml", 'precisions = ["fp32"]', "precisions = []", "precisions", "non-empty list"),
    ("spec.toml", "atol = 1e-5", "atol = -1", "tolerance.fp32.atol", "must be a number >= 0"),
    ("spec.toml", "[tolerance.fp32]", "[tolerance.fp16]", "tolerance.fp16", "precision must be one of"),
    ("spec.toml", "forbid_torch_compute = true", "forbid_torch_compute = 1", "rules.forbid_torch_compute",
     "must be true or false"),
    ("spec.toml", "forbid_torch_compute = true", "forbid_cheating = true", "rules.forbid_cheating", "unknown rule"),
    ("spec.toml", 'provenance = "KernelWeb test fixture"', "compare_compile = 1", "compare_compile",
     "must be true or false"),
    ("spec.toml", 'provenance = "KernelWeb test fixture"', "sizes = [1]", "sizes", "unknown keys"),
    ("spec.toml", 'provenance = "KernelWeb test fixture"', "provenance = [1]", "provenance", "must be a string"),
    ("spec.toml", 'backend = "pytorch"', 'backend = "pytorch', "toml", "is not valid TOML"),
    ("model.py", "        return x * self.weight + y", "        return x *", "model", "line 16: not valid Python"),
    ("model.py", "class Model(nn.Module):", "class Reference(nn.Module):", "model", "defines no `class Model"),
    ("model.py", "class Model(nn.Module):", "class Model:", "model", "must subclass nn.Module"),
    ("model.py", "def get_inputs():", "def make_inputs():", "model", "defines no `def get_inputs()`"),
    ("model.py", "def get_init_inputs():", "def init_inputs():", "model", "defines no `def get_init_inputs()`"),
    ("model.py", "    def forward(self", "    def run(self", "model", "defines no forward() method"),
]


@pytest.mark.parametrize(("file", "old", "new", "field", "message"), BROKEN, ids=[f"{b[3]}:{b[4]}" for b in BROKEN])
def test_a_broken_field_raises_a_spec_error_naming_the_file_and_field(tmp_path, file, old, new, field, message):
    spec_path = task_copy(tmp_path)
    edit(spec_path.parent / file, old, new)
    with pytest.raises(SpecError) as err:
        load_pytorch_spec(spec_path)
    assert err.value.field == field and message in err.value.message, str(err.value)
    assert err.value.path == str(spec_path)


def test_a_name_with_other_characters_is_refused(tmp_path):
    spec_path = task_copy(tmp_path, folder="scale-add")
    edit(spec_path, 'name = "scale_add"', 'name = "scale-add"')
    with pytest.raises(SpecError, match=r"\[name\].*must match"):
        load_pytorch_spec(spec_path)


def test_a_missing_spec_file_is_a_spec_error(tmp_path):
    with pytest.raises(SpecError, match=r"\[file\] does not exist"):
        load_pytorch_spec(tmp_path / "nothing" / "spec.toml")


def test_sizes_are_the_numeric_module_constants_arithmetic_included(tmp_path):
    text = (
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return x\n\n"
        "M = 256\nN: int = 2 * M\nK = -(M // 4) + 1\nscale = 0.5\nbig = 2 ** 20\nflag = True\nlabel = 'x'\n"
        "tmp = 3\ntmp = torch.float32\ndim = (M, N)\n\n"
        "def get_inputs():\n    return [torch.randn(M, N)]\n\ndef get_init_inputs():\n    return []\n"
    )
    info = read_model_file(tmp_path / "model.py", text)
    assert info.constants == {"M": 256, "N": 512, "K": -63, "scale": 0.5, "big": 1048576}
    assert info.interface == "forward(self, x)" and info.docstring == ""


def test_write_pytorch_task_writes_a_folder_that_loads_back_with_every_string_intact(tmp_path):
    description = 'Quotes " and \\backslashes\\, a tab\t, lines\nand $\\frac{a}{b}$ math, ünïcödé, a bell \x07.'
    spec = write_pytorch_task(
        tmp_path / "1_Scale_and_add",
        name="1_Scale_and_add",
        suite="kernelbench-l1",
        model_text=MODEL,
        category="activation",
        description=description,
        provenance='KernelBench level 1, problem 1 ("scale")',
        precisions=("fp32", "bf16"),
        forbid_torch_compute=False,
        compare_compile=True,
        tolerances={"bf16": Tolerance(0.02, 0.01, "bf16 rounding")},
    )
    assert spec == load_pytorch_spec(tmp_path / "1_Scale_and_add" / "spec.toml")
    assert spec.title == "Scale and add" and spec.description == description
    assert spec.provenance == 'KernelBench level 1, problem 1 ("scale")'
    assert spec.precisions == ("fp32", "bf16") and spec.tolerance("bf16") == Tolerance(0.02, 0.01, "bf16 rounding")
    assert spec.forbid_torch_compute is False and spec.compare_compile is True
    assert spec.model_path.read_text(encoding="utf-8") == MODEL  # the KernelBench file, verbatim


def test_write_pytorch_task_defaults_the_description_to_the_docstring(tmp_path):
    spec = write_pytorch_task(tmp_path / "t", name="t", suite="s", model_text=MODEL, category="other")
    assert spec.description.startswith("Scale the columns") and spec.forbid_torch_compute is True
    assert spec.title == "T" and spec.precisions == ("fp32",)


def test_write_pytorch_task_leaves_nothing_behind_when_the_model_is_unusable(tmp_path):
    with pytest.raises(SpecError, match="defines no `class Model"):
        write_pytorch_task(tmp_path / "t", name="t", suite="s", model_text="x = 1\n", category="other")
    with pytest.raises(SpecError, match="is not one of"):
        write_pytorch_task(tmp_path / "u", name="u", suite="s", model_text=MODEL, category="magic")
    with pytest.raises(SpecError, match="must equal the folder name"):
        write_pytorch_task(tmp_path / "v", name="w", suite="s", model_text=MODEL, category="other")
    assert list(tmp_path.iterdir()) == []


def test_rewriting_a_task_with_a_bad_model_keeps_the_existing_files(tmp_path):
    write_pytorch_task(tmp_path / "t", name="t", suite="s", model_text=MODEL, category="other")
    with pytest.raises(SpecError) as err:
        write_pytorch_task(tmp_path / "t", name="t", suite="s", model_text=MODEL, category="other",
                           precisions=("fp8",))
    assert err.value.field == "precisions" and err.value.path == str(tmp_path / "t" / "spec.toml")
    assert load_pytorch_spec(tmp_path / "t" / "spec.toml").precisions == ("fp32",)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]


@pytest.mark.parametrize("text", ["", "plain", 'q"uote', "back\\slash", "nl\nline", "\x00\x1f\x7f", "ü €", "\\u0041"])
def test_toml_strings_round_trip(text):
    assert tomllib.loads(f"x = {toml_string(text)}")["x"] == text


@pytest.mark.parametrize(
    ("name", "level", "category"),
    [
        ("1_Square_matrix_multiplication_", 1, "dense_linear_algebra"),
        ("3_Batched_matrix_multiplication", 1, "dense_linear_algebra"),
        ("18_Matmul_with_transposed_both", 1, "dense_linear_algebra"),
        ("19_ReLU", 1, "activation"),
        ("26_GELU_", 1, "activation"),
        ("20_LeakyReLU", 1, "activation"),
        ("23_Softmax", 1, "normalization"),
        ("24_LogSoftmax", 1, "normalization"),
        ("33_BatchNorm", 1, "normalization"),
        ("37_FrobeniusNorm_", 1, "normalization"),
        ("41_Max_Pooling_1D", 1, "pooling"),
        ("47_Sum_reduction_over_a_dimension", 1, "reduction"),
        ("51_Argmax_over_a_dimension", 1, "reduction"),
        ("53_Min_reduction_over_a_dimension", 1, "reduction"),
        ("63_conv_standard_2D__square_input__square_kernel", 1, "convolution"),
        ("89_cumsum", 1, "scan_sort"),
        ("95_CrossEntropyLoss", 1, "loss"),
        ("97_CosineSimilarityLoss", 1, "loss"),
        ("99_TripletMarginLoss", 1, "loss"),
        ("97_ScaledDotProductAttention", 1, "attention"),
        ("12_Gemm_Multiply_LeakyReLU", 2, "fusion"),
        ("44_MiniGPTBlock", 3, "architecture"),
        ("31_Something_new", 1, "other"),
    ],
)
def test_kernelbench_category_guesses_from_the_problem_name_and_level(name, level, category):
    assert kernelbench_category(name, level) == category
