#!/usr/bin/env bash
# Device run of 2026-11-22 (second session): the fixed spmm_csr BF16 reference, the GPU tests without the
# 100 baseline validations (done by bench/gpu_library.sh), and the full stack (bench/fullstack.py).
# Needs the wheels of requirements.txt for the device's Python in .whl/ (carry it).
set -uo pipefail
out=${OUT:-/tmp/kw-out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
export KW_BUILD_CACHE=$PWD/.build/cache KW_TEST_BUILD_CACHE=$PWD/.build/cache
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; command -v cuobjdump; } | tee "$out/env.txt"
timeout 150 python3 bench/library.py --task spmm_csr --precision bf16 --time --jobs 16 2>"$out/spmm.err" \
  | grep -v "^compile" | tee "$out/spmm.txt"
timeout 300 python3 -m pytest tests/worker/test_gpu.py -m gpu -q -rfE -p no:cacheprovider -p no:django \
  -o addopts="" -k "not baseline_matches" > "$out/gpu-tests.log" 2>&1
tail -12 "$out/gpu-tests.log"
timeout 200 python3 bench/fullstack.py > "$out/fullstack.txt" 2>&1
tail -22 "$out/fullstack.txt"
