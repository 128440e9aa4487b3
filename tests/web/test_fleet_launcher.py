"""`manage.py gpu_workers` planning: which Celery workers a host gets for what nvidia-smi says."""

import pytest

from apps.fleet.launcher import PlanError, parse_gpus, plan_workers
from kernelweb.queues import gpu_model, queue_model

# `nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader` on a mixed host.
MIXED_HOST = """\
0, NVIDIA H100 80GB HBM3, GPU-5f1c2a7e-0000-4d3a-9b1e-000000000000, 550.54.15
1, NVIDIA H100 80GB HBM3, GPU-5f1c2a7e-1111-4d3a-9b1e-111111111111, 550.54.15
2, NVIDIA A100-SXM4-80GB, GPU-a100a100-2222-4d3a-9b1e-222222222222, 550.54.15
"""


def test_nvidia_smi_rows_become_gpus_and_noise_lines_are_skipped():
    gpus = parse_gpus(MIXED_HOST + "\nNo devices were found\n")
    assert [(g.index, g.name, g.driver) for g in gpus] == [
        (0, "NVIDIA H100 80GB HBM3", "550.54.15"), (1, "NVIDIA H100 80GB HBM3", "550.54.15"),
        (2, "NVIDIA A100-SXM4-80GB", "550.54.15")]
    assert gpus[2].uuid == "GPU-a100a100-2222-4d3a-9b1e-222222222222"


def test_each_gpu_gets_one_pinned_worker_on_its_model_queue_and_the_generic_one():
    plans = plan_workers(parse_gpus(MIXED_HOST), python="/venv/bin/python", lock_dir="/var/lib/kernelweb/locks")
    assert [(p.name, p.queues) for p in plans] == [
        ("gpu0@%h", ("gpu.h100", "gpu")), ("gpu1@%h", ("gpu.h100", "gpu")), ("gpu2@%h", ("gpu.a100", "gpu"))]
    assert plans[1].argv == ("/venv/bin/python", "-m", "celery", "-A", "kernelweb", "worker", "-Q", "gpu.h100,gpu",
                             "--concurrency", "1", "-n", "gpu1@%h", "--loglevel", "INFO")
    env = dict(plans[1].env)
    # Pinned by UUID: CUDA's own device order (fastest first) need not match nvidia-smi's indices.
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-5f1c2a7e-1111-4d3a-9b1e-111111111111"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert {dict(p.env)["KW_LOCK_DIR"] for p in plans} == {"/var/lib/kernelweb/locks"}  # one lock folder per host
    assert plans[0].describe().startswith("CUDA_VISIBLE_DEVICES=GPU-5f1c2a7e-0000")


def test_a_host_without_gpu_gets_one_worker_on_the_generic_queue():
    (plan,) = plan_workers([], python="py", concurrency=2)
    assert (plan.name, plan.queues, plan.gpu) == ("nogpu@%h", ("gpu",), None)
    assert "CUDA_VISIBLE_DEVICES" not in dict(plan.env)
    assert plan.argv[plan.argv.index("--concurrency") + 1] == "2"


def test_only_the_named_gpus_and_a_missing_index_names_what_the_host_has():
    plans = plan_workers(parse_gpus(MIXED_HOST), only=[2])
    assert [p.name for p in plans] == ["gpu2@%h"]
    with pytest.raises(PlanError, match=r"no GPU 5 on this host; nvidia-smi lists: 0 \(NVIDIA H100 80GB HBM3\)"):
        plan_workers(parse_gpus(MIXED_HOST), only=[0, 5])
    with pytest.raises(PlanError, match="lists: none"):
        plan_workers([], only=[0])


@pytest.mark.parametrize(("name", "model"), [
    ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H100 PCIe", "h100"), ("NVIDIA H100 NVL", "h100"),
    ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-80GB", "a100"), ("NVIDIA A100 80GB PCIe", "a100"),
    ("Tesla V100-SXM2-16GB", "v100"), ("NVIDIA GeForce RTX 4090", "rtx4090"), ("NVIDIA L40S", "l40s"),
    ("NVIDIA RTX 6000 Ada Generation", "rtx6000ada"), ("NVIDIA GH200 480GB", "gh200"), ("Tesla T4", "t4"),
    ("", ""),
])
def test_gpu_names_normalize_to_queue_safe_models(name, model):
    assert gpu_model(name) == model


def test_queue_model_reads_the_model_back_and_ignores_other_queues():
    assert (queue_model("gpu.h100"), queue_model("gpu"), queue_model("kernelweb"), queue_model("gpux")) == (
        "h100", "", "", "")
