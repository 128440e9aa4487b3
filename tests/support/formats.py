"""Write tasks of the two other formats for tests: KernelBench problem files (a checkout's layout) and
task.yaml folders (the CUDAHercules paper's own example, from tests/worker/fixtures/taskyaml)."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAPER_EXAMPLE = ROOT / "tests" / "worker" / "fixtures" / "taskyaml" / "class1" / "gemm_softmax"
EXAMPLE_TASKS = ROOT / "tasks"

MATMUL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Square matrix product $C = AB$."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 64


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
'''

RELU_BIAS = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU after adding a bias."""

    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return torch.relu(x + self.bias)


batch_size = 16
features = 32


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
'''

NO_GET_INPUTS = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2
'''


def write_kernelbench_checkout(root: Path) -> Path:
    """A KernelBench checkout's shape: KernelBench/level1 and level2 problem files, one broken problem, one
    file that is no problem at all, and code outside the dataset that the importer must not touch."""
    level1 = root / "KernelBench" / "level1"
    level2 = root / "KernelBench" / "level2"
    level1.mkdir(parents=True)
    level2.mkdir(parents=True)
    (level1 / "1_Square_matrix_multiplication_.py").write_text(MATMUL, encoding="utf-8")
    (level1 / "7_Broken_problem.py").write_text(NO_GET_INPUTS, encoding="utf-8")
    (level1 / "helpers.py").write_text("X = 1\n", encoding="utf-8")
    (level2 / "3_Add_bias_ReLU.py").write_text(RELU_BIAS, encoding="utf-8")
    (root / "src").mkdir()
    (root / "src" / "eval.py").write_text("def main():\n    pass\n", encoding="utf-8")
    return root


def write_yaml_task(root: Path, folder: str = "gemm_softmax", **replace: str) -> Path:
    """A copy of the paper's example under root/<folder>, with text replacements in its task.yaml."""
    dest = root / folder
    shutil.copytree(PAPER_EXAMPLE, dest)
    text = (dest / "task.yaml").read_text(encoding="utf-8")
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    (dest / "task.yaml").write_text(text, encoding="utf-8")
    return dest
