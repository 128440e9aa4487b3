"""GPU validation of the gpu-run confinement (docs/threat-model.md, "GPU validation pending"): on a GPU host,
a CUDA program and PyTorch must initialise the driver, allocate, launch and copy under the policy every
candidate run gets, and a hostile thread in that program must still be refused. Skipped without a GPU
(`make test-gpu` runs them); outcomes go to docs/gpu-validation.md."""

from __future__ import annotations

import subprocess
import sys

import pytest

from worker.engine import confine, sandbox

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(confine.landlock_abi() < 1 or not confine.support().seccomp,
                       reason="needs Landlock and libseccomp"),
]

PROGRAM = r"""
#include <cstdio>
#include <fcntl.h>
#include <errno.h>
#include <thread>
__global__ void twice(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }
int main() {
    int n = 1 << 20; float* d = nullptr; static float h[1 << 20];
    for (int i = 0; i < n; ++i) h[i] = i;
    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) { printf("cudaMalloc failed\n"); return 2; }
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    twice<<<(n + 255) / 256, 256>>>(d, n);
    cudaError_t err = cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost);
    printf("cuda %s h[12345]=%g\n", cudaGetErrorString(err), h[12345]);
    std::thread([] {
        int fd = open("/etc/passwd", O_RDONLY);
        printf("passwd %s\n", fd < 0 ? "denied" : "read");
    }).join();
    return err == cudaSuccess ? 0 : 1;
}
"""


def test_gpu_a_cuda_program_runs_under_the_gpu_run_policy_and_its_thread_is_still_refused(chain, tmp_path):
    src = tmp_path / "p.cu"
    src.write_text(PROGRAM)
    exe = tmp_path / "p"
    subprocess.run([chain.nvcc, f"-arch={chain.arch}", str(src), "-o", str(exe)], check=True, capture_output=True)
    res = sandbox.run([str(exe)], tmp_path / "run", 120, policy=confine.run_policy(exe, tmp_path / "run"))
    assert res.confinement is not None and res.confinement.enforced
    assert res.ok, res.output
    assert "cuda no error h[12345]=24690" in res.stdout and "passwd denied" in res.stdout


def test_gpu_pytorch_runs_on_the_gpu_under_the_kernelbench_run_policy(tmp_path):
    pytest.importorskip("torch")
    code = "import torch; x = torch.ones(1 << 20, device='cuda'); print('sum', float((x * 2).sum()))"
    execute = (*confine.SYSTEM_PATHS, sys.prefix, sys.base_prefix)
    policy = confine.run_policy(sys.executable, tmp_path, read=(sys.prefix, sys.base_prefix), execute=execute,
                                processes=True)
    res = sandbox.run([sys.executable, "-I", "-c", code], tmp_path, 300, policy=policy)
    assert res.confinement is not None and res.confinement.enforced
    assert res.ok, res.output
    assert f"sum {float(2 << 20)}" in res.stdout
