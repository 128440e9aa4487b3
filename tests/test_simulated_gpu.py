"""The simulated GPU of bench dry runs (testing/experiment_gpu.py) reaches the code that starts GPU jobs."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_worker_loading_the_simulated_gpu_starts_jobs_on_the_gpu_its_environment_names():
    code = ("import django, json; django.setup(); import testing.experiment_gpu; from apps.runs import jobs; "
            "from apps.fleet import heartbeat; gpu = jobs.toolchain.detect().gpu; "
            "print(json.dumps([gpu.name, gpu.index, gpu.uuid, heartbeat.toolchain.detect().gpu.uuid]))")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "kernelweb.settings", "KW_SIMULATED_GPU_INDEX": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    name, index, uuid, registered = json.loads(done.stdout.strip().splitlines()[-1])
    assert (name, index, uuid, registered) == ("NVIDIA H100 80GB HBM3 (simulated)", 1, "GPU-simulated-h100-1",
                                               "GPU-simulated-h100-1")
