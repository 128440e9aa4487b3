#!/usr/bin/env bash
# Device-machine runs, one part per call, results under $OUT (see docs/gpu-validation.md).
#   env    toolchain and GPU facts          tests  `pytest -m gpu` (baselines, candidates, engine cases)
#   bench  bench/eval_baselines.py + Otsu thresholds over the baseline profiles
#   cache  two passes over two tasks: the second reuses the build cache
#   demo   scripted-LLM pipeline runs on three operators   fast  the hand-written faster candidates
#   sharing  4 concurrent runs with a 5 s LLM delay: GPU busy fraction
# Objects compiled on the dev machine travel in .build/cache (carry it) and are reused when nvcc matches.
set -uo pipefail
out=${OUT:-/tmp/kw-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 KW_TEST_BUILD_CACHE=$PWD/.build/cache KW_BUILD_CACHE=$PWD/.build/cache
for part in "$@"; do
  case $part in
    env)
      { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv;
        nvcc --version | tail -2; ncu --version | tail -1; compute-sanitizer --version | tail -1;
        python3 --version; python3 -c 'import numpy; print("numpy", numpy.__version__)'; } 2>&1 | tee "$out/env.txt" ;;
    tests)
      python3 -m pytest tests/worker/test_gpu.py -m gpu -q -rA -p no:cacheprovider -p no:django \
        -o addopts="" --junitxml="$out/gpu-tests.xml" > "$out/gpu-tests.log" 2>&1
      grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed" "$out/gpu-tests.log" | tail -80 ;;
    bench)
      # BENCH_ARGS narrows the run (e.g. "--task softmax --task top_k") to fit one call.
      timeout 540 python3 bench/eval_baselines.py --profile filtered --runs 1 --json "$out/baselines.json" \
        ${BENCH_ARGS:-} > "$out/bench.txt" 2> "$out/bench.err"; tail -32 "$out/bench.txt"; grep done "$out/bench.err"
      python3 -m worker thresholds --from-json "$out/baselines.json" 2>&1 | tee "$out/thresholds.txt" | tail -30 ;;
    cache)
      python3 bench/eval_baselines.py --task vector_add --task softmax --profile none --runs 2 \
        > "$out/bench-cache.txt" 2>&1; tail -14 "$out/bench-cache.txt" ;;
    demo)
      # Headless pipeline runs with the scripted LLM (demo/scripts), then imported as demo data.
      for op in softmax matrix_mul dot_product; do
        python3 -m worker optimize --task $op --precision fp32 --llm demo/scripts/${op}_fp32_demo.json \
          --rounds 2 --debug-rounds 1 --profile filtered --out "$out/${op}_fp32_trajectory.json" 2>>"$out/demo.log" \
          | tee -a "$out/demo.txt"
      done ;;
    fast)
      python3 bench/gpu_candidates.py tests/gpu_candidates/*_fast.cu --json "$out/fast.json" 2>&1 | tee "$out/fast.txt" ;;
    sharing)
      python3 bench/gpu_sharing.py --runs 4 --delay 5 2>&1 | tee "$out/sharing.txt" ;;
    *) echo "unknown part $part" >&2; exit 2 ;;
  esac
done
