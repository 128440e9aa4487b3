#!/usr/bin/env bash
# The whole task library on a GPU host (issue 6), one part per argument, results under $OUT:
#   env       toolchain and GPU facts; where the toolkit lacks cuBLAS/cuSPARSE, take them from the
#             Python wheels already installed (same layout as `make .cuda-libs/.ready`)
#   compile   every task and library reference, on all cores (bench/library.py without GPU steps)
#   validate  every baseline against its CPU reference, SHARDS processes side by side
#   time-fp32 / time-bf16     baselines and references timed, one process (the GPU to itself)
#   census-fp32 / census-bf16 every baseline profiled at its largest size with Nsight Compute
#   all       validate + time of the whole library in one command (the wall time of issue 6)
# The build cache lives in .build/cache, so a warm machine's next call reuses the objects.
set -uo pipefail
out=${OUT:-/tmp/kw-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 KW_BUILD_CACHE=$PWD/.build/cache KW_TEST_BUILD_CACHE=$PWD/.build/cache
jobs=$(nproc)

inc=$(dirname "$(readlink -f "$(command -v nvcc)")")/../include
if [ ! -f "$inc/cublas_v2.h" ] || [ ! -f "$inc/cusparse.h" ]; then
  site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))')
  rm -rf /tmp/kw-cuda-extra && mkdir -p /tmp/kw-cuda-extra/include /tmp/kw-cuda-extra/lib
  for d in "$site"/nvidia/*/; do
    [ -d "$d/include" ] && cp -r "$d/include/." /tmp/kw-cuda-extra/include/
    [ -d "$d/lib" ] && cp -r "$d/lib/." /tmp/kw-cuda-extra/lib/
  done
  for f in /tmp/kw-cuda-extra/lib/lib*.so.*; do ln -sf "$(basename "$f")" "${f%%.so.*}.so"; done
  export KW_CUDA_EXTRA=/tmp/kw-cuda-extra
fi

for part in "$@"; do
  case $part in
    env)
      { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv;
        nvcc --version | tail -2; ncu --version | tail -1; python3 --version; nproc;
        echo "KW_CUDA_EXTRA=${KW_CUDA_EXTRA:-none (the toolkit has cuBLAS and cuSPARSE)}"; } 2>&1 | tee "$out/env.txt" ;;
    compile)
      python3 bench/library.py --jobs "$jobs" 2>"$out/compile.err" | tee "$out/compile.txt" ;;
    validate)
      n=${SHARDS:-8}
      started=$(date +%s)
      for k in $(seq 0 $((n - 1))); do
        KW_LOCK_DIR=/tmp/kw-lock-$k python3 bench/library.py --validate --shard "$k/$n" --jobs 2 \
          --json "$out/validate-$k.json" > "/tmp/validate-$k.txt" 2>&1 &
      done
      wait
      echo "validate: $n shards in $(( $(date +%s) - started )) s"
      cat /tmp/validate-*.txt | grep -E "^(FAIL|validate:|compile:|  FAILED)" | tee "$out/validate.txt" ;;
    time-fp32|time-bf16)
      p=${part#time-}
      python3 bench/library.py --time --precision "$p" --jobs "$jobs" --json "$out/time-$p.json" \
        2>"$out/time-$p.err" | tee "$out/time-$p.txt" | grep -v "^|" ;;
    census-fp32|census-bf16)
      p=${part#census-}
      python3 bench/library.py --census --precision "$p" --jobs "$jobs" --json "$out/census-$p.json" \
        2>"$out/census-$p.err" | tee "$out/census-$p.txt" | grep -v "^|"; grep "^no profile" "$out/census-$p.err" ;;
    all)
      /usr/bin/time -v python3 bench/library.py --validate --time --jobs "$jobs" --json "$out/all.json" \
        2>"$out/all.err" | tee "$out/all.txt" | grep -v "^|"; grep -E "Elapsed|Maximum resident" "$out/all.err" ;;
    *) echo "unknown part $part" >&2; exit 2 ;;
  esac
done
