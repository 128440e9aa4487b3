"""The KernelBench harness's fresh inputs for timed calls are drawn on the module's device, not on the host."""

import argparse
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from worker.formats.pytorch import torch_harness  # noqa: E402
from worker.formats.pytorch.torch_timed import FreshInputs  # noqa: E402

MODEL = '''\
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x, scale):
        return x * scale

def get_init_inputs():
    return []

def get_inputs():  # the second input says where torch's factories put tensors while it ran
    return [torch.randn(64, 32), torch.empty(0).device.type]
'''


def task_on(device: str, precision: str, tmp_path: Path, model: str = MODEL) -> torch_harness.Task:
    (tmp_path / "model.py").write_text(model)
    torch_harness._STATE["out"] = tmp_path / "result.json"  # checkpoints write here
    args = argparse.Namespace(device=device, precision=precision, task_dir=str(tmp_path), model="model.py",
                              seed_base=7)
    return torch_harness.Task(args)


def test_timed_calls_inputs_are_drawn_on_the_device_so_the_gpu_never_waits_for_the_host(tmp_path):
    # The meta device stands for the GPU (it allocates and computes nothing): get_inputs() ran with it as torch's
    # default device, so its tensors were made there, not on the host and copied over.
    task = task_on("meta", "bf16", tmp_path)
    drawn = task.drawn_on_device(5)
    assert drawn[1] == "meta"
    assert drawn[0].device.type == "meta" and drawn[0].dtype == torch.bfloat16 and drawn[0].shape == (64, 32)
    assert task.inputs(5)[1] == "cpu"  # the check's pristine inputs are still drawn on the host


def test_fresh_inputs_are_new_for_every_timed_call_and_reproducible_for_its_check(tmp_path):
    task = task_on("cpu", "fp32", tmp_path)
    buffers = task.on_device(task.inputs(1))
    fresh = FreshInputs(task, buffers)
    fresh(0)
    first = buffers[0].clone()
    assert torch.equal(buffers[0], fresh.pristine[0])  # the call's buffers hold what the check will use
    fresh(1)
    assert not torch.equal(buffers[0], first)  # a new draw for the next call
    assert torch.equal(task.drawn_on_device(fresh.base + 1)[0], buffers[0])  # the same seed, the same inputs


def test_inputs_that_need_the_host_are_drawn_there_and_still_reach_the_device(tmp_path):
    host_only = MODEL.replace(
        "    return [torch.randn(64, 32), torch.empty(0).device.type]",
        "    x = torch.randn(64, 32)\n    return [torch.from_numpy(x.numpy() * 2), torch.empty(0).device.type]")
    drawn = task_on("meta", "fp32", tmp_path, host_only).drawn_on_device(3)
    assert drawn[1] == "cpu"  # numpy() refused the device's tensor, so get_inputs() ran again on the host
    assert drawn[0].device.type == "meta" and drawn[0].shape == (64, 32)


def test_a_host_slowed_for_a_stretch_of_the_run_falls_on_synced_and_loose_samples_alike():
    """The stream-gap check compares synced with loose samples; timed as two phases, a slow stretch that hit one
    phase only read as work on another stream. Alternated call by call, both medians see it."""
    import statistics
    import time

    from worker.formats.pytorch.torch_timed import synced_and_loose

    calls = []

    def call():
        calls.append(None)
        time.sleep(0.004 if len(calls) <= 10 else 0.0005)  # the first half of the run is slow

    synced, loose = synced_and_loose(call, torch.device("cpu"), 10, None)
    assert len(synced) == len(loose) == 10 and len(calls) == 20
    assert 0.6 < statistics.median(synced) / statistics.median(loose) < 1.6
