#!/usr/bin/env bash
# Device run for issue 8 (KernelBench and task.yaml tasks on a GPU), in two parts that fit the 10-minute limit:
#   bash bench/gpu_session4.sh tests   the GPU tests of both backends, validate-tasks and hand-written
#                                      candidates on the shipped example tasks (torch.compile as the reference)
#   bash bench/gpu_session4.sh demo    the agent pipeline with the scripted LLM on one task of each format
#                                      (demo/scripts/*_demo.json): trajectories for `make run`
# Carry .whl (the wheels of requirements.txt for the device's Python 3.12; torch and ninja are on the image).
set -uo pipefail
out=${OUT:-/tmp/kw-out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
export KW_BUILD_CACHE=$PWD/.build/cache KW_TIMING_CACHE=/tmp/kw-timing MAX_JOBS=16
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -1
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; ninja --version; nproc
} | tee "$out/env.txt"

if [ "${1:-tests}" = tests ]; then
  stamp "GPU tests: tests/worker/test_kernelbench_eval.py tests/worker/test_taskyaml_eval.py"
  timeout 330 python3 -m pytest -m gpu tests/worker/test_kernelbench_eval.py tests/worker/test_taskyaml_eval.py \
    -q -rA -p no:cacheprovider -p no:django -o addopts="" > "$out/gpu-tests.log" 2>&1
  tail -25 "$out/gpu-tests.log"
  for task in kernelbench-examples/matmul_square kernelbench-examples/scale_bias_leaky_relu \
              cudahercules-examples/vector_add_make; do
    stamp "validate-tasks $task"
    timeout 120 python3 -m worker validate-tasks --task "$task" 2>>"$out/examples.err" | tee -a "$out/examples.txt"
  done
  run_eval() {  # task precision candidate [extra...]
    stamp "eval $1 $2 $(basename "$3")" | tee -a "$out/examples.txt"
    timeout 240 python3 -m worker eval --task "$1" --precision "$2" --candidate "$3" "${@:4}" \
      --json "$out/eval-$(basename "$1")-$2.json" 2>>"$out/examples.err" | tee -a "$out/examples.txt"
  }
  run_eval kernelbench-examples/scale_bias_leaky_relu fp32 demo/formats/scale_bias_leaky_relu_fused.py --torch-compile
  run_eval kernelbench-examples/scale_bias_leaky_relu bf16 demo/formats/scale_bias_leaky_relu_fused.py --torch-compile
  run_eval kernelbench-examples/matmul_square fp32 demo/formats/matmul_square_tiled.py
  run_eval cudahercules-examples/vector_add_make fp32 demo/formats/vector_add_make_fast.cu
  tail -5 "$out/examples.err"
else
  for pair in "kernelbench-examples/scale_bias_leaky_relu scale_bias_leaky_relu_fp32" \
              "cudahercules-examples/vector_add_make vector_add_make"; do
    set -- $pair
    stamp "optimize $1 with demo/scripts/$2_demo.json"
    timeout 270 python3 -m worker optimize --task "$1" --precision fp32 --llm "demo/scripts/$2_demo.json" \
      --rounds 2 --debug-rounds 1 --profile none --out "$out/$2_trajectory.json" > "$out/$2.log" 2>&1
    echo "exit $?"; tail -12 "$out/$2.log"
  done
fi
stamp done
