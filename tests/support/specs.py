"""Write task folders for tests: a valid vector-add spec, then break it on purpose."""

from __future__ import annotations

from pathlib import Path

VALID_SPEC = '''\
name = "{name}"
title = "Test vector add"
suite = "testsuite"
category = "dense_linear_algebra"
description = "Add two vectors: $C_i = A_i + B_i$."
complexity = "N"
outputs = ["C"]
provenance = "written by the test suite"

[interface]
fp32 = "void {name}(const float* A, const float* B, float* C, int N)"
bf16 = "void {name}_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int N)"

[[sizes]]
N = 1024
[[sizes]]
N = 4096

[inputs]
A = "uniform(-1, 1)"
B = "uniform(-1, 1)"

[tolerance.bf16]
atol = 1e-2
rtol = 1e-2
why = "one bf16 rounding"
'''

BASELINE = '''\
#include <cuda_runtime.h>
__global__ void add_kernel(const float* A, const float* B, float* C, int N) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) C[i] = A[i] + B[i];
}}
extern "C" void {entry}(const float* A, const float* B, float* C, int N) {{
    add_kernel<<<(N + 255) / 256, 256>>>(A, B, C, N);
    cudaDeviceSynchronize();
}}
'''


def write_task(root: Path, name: str = "vadd", suite: str = "testsuite", spec: str | None = None) -> Path:
    folder = root / suite / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spec.toml").write_text(spec if spec is not None else VALID_SPEC.format(name=name))
    (folder / f"{name}.cu").write_text(BASELINE.format(entry=name))
    (folder / f"{name}_bf16.cu").write_text(BASELINE.format(entry=f"{name}_bf16"))
    (folder / "harness.cu").write_text("// harness written by the test suite\n")
    return folder
