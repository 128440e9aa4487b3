"""Static checks on a KernelBench candidate (ModelNew): what passes, and every trick refused with its rule."""

import dataclasses
from pathlib import Path

import pytest

from tests.support.relu_candidates import RELU_VARIANTS, relu_candidate
from worker.formats.pytorch.spec import load_pytorch_spec
from worker.formats.pytorch.static_checks import check_candidate

FIXTURES = Path(__file__).parents[2] / "fixtures" / "kernelbench"
SPEC = load_pytorch_spec(FIXTURES / "tasks" / "kb-test" / "scale_add" / "spec.toml")
LENIENT = dataclasses.replace(SPEC, forbid_torch_compute=False)

# A KernelBench-style inline-CUDA candidate. Its comments and docstrings mention forbidden things on purpose:
# rules read code, never prose.
GOOD = '''\
import os
import torch
import torch.nn as nn
import torch.nn.functional as F  # only for the docs: F.relu is what Model uses
from torch.utils.cpp_extension import load_inline

os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"

cuda_source = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
// No cudaStreamCreate, no std::thread, no at::matmul here: comments are not code.

__global__ void scale_add_kernel(const float* x, const float* w, const float* y, float* out, int rows, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) out[i] = x[i] * w[i % cols] + y[i];
}

torch::Tensor scale_add(torch::Tensor x, torch::Tensor w, torch::Tensor y) {
    TORCH_CHECK(x.is_cuda(), "x.sum() must be on the GPU");  // string literals are not code either
    auto out = torch::empty_like(x);
    int n = x.numel();
    auto stream = at::cuda::getCurrentCUDAStream();
    scale_add_kernel<<<(n + 255) / 256, 256, 0, stream>>>(
        x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), x.size(0), x.size(1));
    return out;
}

torch::Tensor relu(torch::Tensor x) { return x; }
"""

ext = load_inline(
    name="scale_add_ext",
    cpp_sources="torch::Tensor scale_add(torch::Tensor x, torch::Tensor w, torch::Tensor y);"
                "torch::Tensor relu(torch::Tensor x);",
    cuda_sources=cuda_source,
    functions=["scale_add", "relu"],
    extra_cuda_cflags=["-O3", "--use_fast_math"],
)


class ModelNew(nn.Module):
    """Replaces torch.matmul and F.relu with one kernel (the docstring may say anything)."""

    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(cols))
        self.proj = nn.Linear(cols, cols)  # holds weights; reading them is fine
        self.ext = ext

    def _prepare(self, t):
        return t.contiguous().view(t.size(0), -1).to(torch.float32)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x, y = self._prepare(x), self._prepare(y)
        out = torch.empty_like(x)
        assert out.is_contiguous() and x.shape == y.shape and x.dtype == torch.float32
        ops = self.ext
        x = ops.relu(x)  # the extension's own relu: not a torch op
        w = self.proj.weight.t().contiguous()[0]
        return self.ext.scale_add(x, w.flatten(), y.unsqueeze(0).squeeze(0))
'''


def rules(source, spec=SPEC):
    return [v.rule for v in check_candidate(source, spec).violations]


def messages(source, spec=SPEC):
    return check_candidate(source, spec).messages()


def test_accepts_a_kernelbench_style_candidate_whatever_its_comments_and_strings_say():
    report = check_candidate(GOOD, SPEC)
    assert report.ok, report.messages()


# Fixtures that exist to be refused here (the evaluation tests bypass these rules to test what lies behind them).
REFUSED_FIXTURES = {"cpu_patches_the_check.py": "sys.modules"}


@pytest.mark.parametrize("name", sorted(p.name for p in (FIXTURES / "candidates").glob("*.py")
                                        if p.name not in REFUSED_FIXTURES))
def test_accepts_the_fixture_candidates(name):
    report = check_candidate((FIXTURES / "candidates" / name).read_text(encoding="utf-8"), SPEC)
    assert report.ok, report.messages()


@pytest.mark.parametrize("variant", sorted(RELU_VARIANTS))
def test_accepts_the_misbehaving_relu_candidates_the_gpu_tests_catch_later(variant):
    report = check_candidate(relu_candidate(variant), SPEC)
    assert report.ok, report.messages()


@pytest.mark.parametrize(("name", "why"), sorted(REFUSED_FIXTURES.items()))
def test_refuses_the_fixture_that_patches_the_harness(name, why):
    report = check_candidate((FIXTURES / "candidates" / name).read_text(encoding="utf-8"), SPEC)
    assert not report.ok and why in report.messages()[0]


def with_forward(body: str, spec=SPEC) -> list[str]:
    """The GOOD candidate with its forward body replaced."""
    head, _, _ = GOOD.partition("        x, y = self._prepare(x), self._prepare(y)\n")
    return messages(head + body, spec)


def test_a_syntax_error_is_reported_with_its_line():
    assert messages("import torch\n\ndef f(:\n") == ("RULE syntax: line 3 not valid Python: invalid syntax",)


def test_a_file_without_model_new_is_refused():
    msgs = messages(GOOD.replace("class ModelNew(nn.Module)", "class Model(nn.Module)"))
    assert msgs == ("RULE model-new: no `class ModelNew(nn.Module)` at module level: the candidate must define "
                    "ModelNew with the same constructor and forward as Model",)


def test_model_new_must_be_a_module_with_a_forward():
    line = GOOD.splitlines().index("class ModelNew(nn.Module):") + 1
    assert messages(GOOD.replace("class ModelNew(nn.Module)", "class ModelNew(object)")) == (
        f"RULE model-new: line {line} class ModelNew must subclass nn.Module",)
    assert messages(GOOD.replace("    def forward(self, x", "    def fwd(self, x")) == (
        f"RULE model-new: line {line} class ModelNew defines no forward() method",)


def test_a_candidate_without_compiled_code_is_refused():
    source = GOOD.replace("ext = load_inline(", "ext = dict(")
    assert rules(source, LENIENT) == ["custom-code"]
    assert "must compile its own kernels" in messages(source, LENIENT)[0]


def test_the_other_cpp_extension_loader_counts_as_compiled_code():
    source = GOOD.replace("from torch.utils.cpp_extension import load_inline", "from torch.utils import cpp_extension")
    assert rules(source.replace("ext = load_inline(", "ext = cpp_extension.load(")) == []


REFUSED = [
    # (what, text to add at module level, rule, part of the message)
    ("try/except", "try:\n    import nothing\nexcept ImportError:\n    pass\n", "no-fallback",
     "try/except is not allowed"),
    ("suppress", "from contextlib import suppress\nwith suppress(Exception):\n    pass\n", "no-fallback", "suppress()"),
    ("torch.cuda.Stream", "s = torch.cuda.Stream()\n", "streams-threads", "uses torch.cuda.Stream"),
    ("torch.cuda.stream", "ctx = torch.cuda.stream(None)\n", "streams-threads", "uses torch.cuda.stream"),
    ("from-import of a stream", "from torch.cuda import Stream\ns = Stream()\n", "streams-threads",
     "uses torch.cuda.Stream"),
    ("CUDA graphs", "g = torch.cuda.CUDAGraph()\n", "streams-threads", "uses torch.cuda.CUDAGraph"),
    ("threading", "import threading\n", "streams-threads", "imports threading"),
    ("multiprocessing", "import multiprocessing.pool\n", "streams-threads", "imports multiprocessing.pool"),
    ("concurrent.futures", "from concurrent.futures import ThreadPoolExecutor\n", "streams-threads",
     "imports concurrent.futures"),
    ("asyncio", "import asyncio\n", "streams-threads", "imports asyncio"),
    ("patching torch", "torch.cuda.synchronize = lambda: None\n", "tampering", "assigns to torch.cuda.synchronize"),
    ("patching through an alias", "F.relu = None\n", "tampering", "assigns to torch.nn.functional.relu"),
    ("deleting from torch", "del torch.matmul\n", "tampering", "assigns to torch.matmul"),
    ("TF32", "torch.backends.cudnn.allow_tf32 = True\n", "tampering", "assigns to torch.backends.cudnn.allow_tf32"),
    ("setattr on torch", "setattr(torch, 'matmul', None)\n", "tampering", "calls setattr() on something other"),
    ("getattr on torch", "mm = getattr(torch, 'mat' + 'mul')\n", "tampering", "calls getattr() on torch"),
    ("CUDA events", "e = torch.cuda.Event(enable_timing=True)\n", "tampering", "uses torch.cuda.Event"),
    ("time", "import time\n", "tampering", "imports time"),
    ("from time", "from time import perf_counter\n", "tampering", "imports time"),
    ("sys.modules", "import sys\nh = sys.modules['__main__']\n", "tampering", "uses sys.modules"),
    ("sys.exit", "import sys\nsys.exit(0)\n", "tampering", "uses sys.exit"),
    ("builtins", "import builtins\n", "tampering", "imports builtins"),
    ("__builtins__", "b = __builtins__\n", "tampering", "uses __builtins__"),
    ("importlib", "import importlib\n", "tampering", "imports importlib"),
    ("__import__", "m = __import__('os')\n", "tampering", "calls __import__()"),
    ("ctypes", "import ctypes\n", "tampering", "imports ctypes"),
    ("subprocess", "import subprocess\n", "tampering", "imports subprocess"),
    ("gc", "import gc\n", "tampering", "imports gc"),
    ("inspect", "import inspect\n", "tampering", "imports inspect"),
    ("os.system", "os.system('nvidia-smi')\n", "tampering", "uses os.system"),
    ("os.execv", "os.execv('/bin/true', [])\n", "tampering", "uses os.execv"),
    ("environment", "os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n", "tampering",
     "sets the environment variable CUDA_VISIBLE_DEVICES"),
    ("eval", "x = eval('1')\n", "tampering", "calls eval()"),
    ("exec", "exec('x = 1')\n", "tampering", "calls exec()"),
    ("open", "data = open('/etc/passwd').read()\n", "tampering", "calls open()"),
    ("torch.load", "w = torch.load('weights.pt')\n", "tampering", "uses torch.load"),
    ("frames", "def f():\n    return f.__globals__\n", "tampering", "uses .__globals__"),
    ("empty_cache", "torch.cuda.empty_cache()\n", "tampering", "uses torch.cuda.empty_cache"),
]


@pytest.mark.parametrize(("what", "added", "rule", "message"), REFUSED, ids=[r[0] for r in REFUSED])
def test_python_tricks_are_refused_with_their_rule_and_line(what, added, rule, message):
    lines = GOOD.count("\n")
    found = messages(GOOD + added)
    hits = [m for m in found if m.startswith(f"RULE {rule}: line ") and message in m]
    assert hits, found
    assert int(hits[0].split("line ")[1].split()[0]) > lines  # the line of the added code


CPP_REFUSED = [
    ("cudaStreamCreate", "cudaStream_t s; cudaStreamCreate(&s);", "streams-threads", "cudaStreamCreate"),
    ("cudaStreamCreateWithFlags", "cudaStreamCreateWithFlags(&s, 1);", "streams-threads", "cudaStreamCreateWithFlags"),
    ("getStreamFromPool", "auto s = at::cuda::getStreamFromPool();", "streams-threads", "getStreamFromPool"),
    ("cudaLaunchHostFunc", "cudaLaunchHostFunc(0, nullptr, nullptr);", "streams-threads", "cudaLaunchHostFunc"),
    ("std::thread", "std::thread t([]{});", "streams-threads", "std::thread"),
    ("pthread", "pthread_t t; pthread_create(&t, 0, 0, 0);", "streams-threads", "pthread_t"),
    ("cudaEventRecord", "cudaEventRecord(e);", "tampering", "times itself"),
    ("std::chrono", "auto t0 = std::chrono::steady_clock::now();", "tampering", "std::chrono"),
    ("system", 'system("ls");', "tampering", "touches processes, files or the environment"),
    ("PyRun", 'PyRun_SimpleString("import os");', "tampering", "PyRun_SimpleString"),
    ("pybind11 exec", 'py::exec("x = 1");', "tampering", "reaches into Python"),
    ("device reset", "cudaDeviceReset();", "tampering", "controls the device"),
    ("token pasting", "#define CAT(a, b) a##b", "tampering", "##"),
]


@pytest.mark.parametrize(("what", "code", "rule", "message"), CPP_REFUSED, ids=[r[0] for r in CPP_REFUSED])
def test_tricks_inside_the_cpp_sources_are_refused_with_their_source_line(what, code, rule, message):
    source = GOOD.replace("    return out;\n}\n", f"    {code}\n    return out;\n}}\n", 1)
    line = source.splitlines().index(f"    {code}") + 1
    found = messages(source)
    assert any(m.startswith(f"RULE {rule}: line {line} ") and message in m and "C++/CUDA source" in m
               for m in found), found


FORWARD_COMPUTE = [
    ("torch.matmul", "        return torch.matmul(x, y)\n", "calls torch.matmul()"),
    ("F.relu", "        return F.relu(x) + y\n", "calls torch.nn.functional.relu()"),
    ("nn.functional", "        return nn.functional.gelu(x)\n", "calls torch.nn.functional.gelu()"),
    ("tensor method", "        return x.sum(dim=1)\n", "calls the tensor method .sum()"),
    ("dunder method", "        return x.__matmul__(y)\n", "calls the tensor method .__matmul__()"),
    ("@ operator", "        return x @ y\n", "uses the @ operator"),
    ("nn layer", "        return self.proj(x)\n", "calls the nn layer self.proj (nn.Linear, created in __init__)"),
    ("layer method", "        return self.proj.forward(x)\n", "calls .forward() of the nn layer self.proj"),
    ("aliased op", "        mm = torch.mm\n        return mm(x, y)\n", "calls torch.mm()"),
    ("torch.compile", "        return torch.compile(self.ext.scale_add)(x, self.weight, y)\n", "calls torch.compile()"),
    ("aten through torch.ops", "        return torch.ops.aten.mm(x, y)\n", "calls torch.ops.aten.mm()"),
]


@pytest.mark.parametrize(("what", "body", "message"), FORWARD_COMPUTE, ids=[f[0] for f in FORWARD_COMPUTE])
def test_torch_compute_in_forward_is_refused_when_the_task_forbids_it(what, body, message):
    found = with_forward(body)
    assert any(m.startswith("RULE torch-compute: line ") and f"ModelNew.forward {message}" in m for m in found), found
    assert "rules.forbid_torch_compute" in found[0]
    assert with_forward(body, LENIENT) == ()  # a task that allows PyTorch compute takes the same code


def test_other_modules_functions_and_allocation_are_not_torch_compute():
    body = ("        import math\n        scale = math.sqrt(x.size(-1))\n"
            "        out = torch.zeros_like(x).view(-1)\n"
            "        return self.ext.scale_add(x, self.weight / scale, y) if out.numel() else out\n")
    assert with_forward(body) == ()


def test_torch_compute_is_followed_into_helpers_methods_and_submodules():
    source = GOOD.replace("        return t.contiguous()", "        return torch.tanh(t).contiguous()")
    assert any("ModelNew._prepare (called from forward) calls torch.tanh()" in m for m in messages(source))
    helper = GOOD.replace("class ModelNew", "def helper(t):\n    return t.relu()\n\n\nclass ModelNew").replace(
        "        x = ops.relu(x)", "        x = helper(x)")
    assert any("helper() (called from forward) calls the tensor method .relu()" in m for m in messages(helper))
    block = GOOD.replace("class ModelNew", "class Block(nn.Module):\n    def forward(self, t):\n"
                         "        return torch.sigmoid(t)\n\n\nclass ModelNew").replace(
        "        self.ext = ext", "        self.ext = ext\n        self.block = Block()").replace(
        "        x = ops.relu(x)", "        x = self.block(x)")
    assert any("Block.forward (self.block) calls torch.sigmoid()" in m for m in messages(block))
    layers = GOOD.replace("        self.ext = ext", "        self.ext = ext\n        self.layers = nn.ModuleList([])")
    layers = layers.replace("        x = ops.relu(x)", "        for layer in self.layers:\n            x = layer(x)")
    assert any("calls the nn layer layer (from a layer container)" in m for m in messages(layers))
    stored = GOOD.replace("        self.ext = ext", "        self.ext = ext\n        self.act = torch.relu").replace(
        "        x = ops.relu(x)", "        x = self.act(x)")
    assert any("calls self.act, which is torch.relu" in m for m in messages(stored))


def test_torch_compute_inside_the_cpp_sources_is_refused_when_the_task_forbids_it():
    for code in ("return at::matmul(x, w);", "return torch::relu(x);", "return x.mm(w);",
                 "return torch::nn::functional::gelu(x);"):
        source = GOOD.replace("torch::Tensor relu(torch::Tensor x) { return x; }",
                              f"torch::Tensor relu(torch::Tensor x) {{ {code} }}")
        found = messages(source)
        assert any(m.startswith("RULE torch-compute: line ") and "C++/CUDA source" in m for m in found), (code, found)
        assert messages(source, LENIENT) == ()


def test_every_violation_is_reported_sorted_by_line():
    source = GOOD.replace("import os\n", "import os\nimport time\nimport threading\n") + "x = eval('1')\n"
    found = check_candidate(source, SPEC)
    assert [v.rule for v in found.violations] == ["tampering", "streams-threads", "tampering"]
    assert [v.line for v in found.violations] == sorted(v.line for v in found.violations)
    assert not found.ok
