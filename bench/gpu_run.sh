#!/usr/bin/env bash
# Measurements and GPU tests on a GPU host, one named stage after another, raw output under one folder.
#
#   bash bench/gpu_run.sh [options] STAGE...
#   bash bench/gpu_run.sh --list                 the stages and what each does
#   bash bench/gpu_run.sh --dry-run [STAGE...]   the commands each stage runs (all stages without a name)
#
# Options:
#   --out DIR        raw output folder (default: $OUT, else ${TMPDIR:-/tmp}/kernelweb-gpu-run; keep it out
#                    of the repository, whose docs keep only the summarized tables)
#   --limit SECONDS  the whole call's time: each long command runs under `timeout` with what is left of it,
#                    so several stages together end by then and a device call with a time limit returns
#                    what they wrote; the experiment stage takes what is left as its budget
#   --simulated-gpu  the experiment stage on a machine without a GPU (bench/experiment_fullstack.py's dry run)
#   --no-wheels      do not install the wheels of .whl/
#   --bundle DIR     at the end, DIR (a device call's $OUT, or a folder in it) gets only raw.tgz (the whole --out
#                    folder) and summary.txt (each test's outcome, the bench scripts' summary lines): a device
#                    call returns at most 8 files, and several calls of this script in one device call each
#                    writing under $OUT lost their tables (2026-11-29)
#   --dry-run, --list, -h/--help
#
# Every call also logs the GPU's clock, every 250 ms, into clocks.csv under --out, summed up at the end in
# clock-log.txt (bench/clock_log.py: the slowdown episodes, power cap or thermal, if any).
#
# Environment:
#   PYTHON         the interpreter (default python3; e.g. .venv/bin/python on a development machine)
#   WHEELS         a folder of wheels for that Python, installed into a scratch folder first when it holds
#                  any (default .whl: a GPU host without network gets the wheels of requirements.txt there)
#   PYTEST_ARGS    extra pytest arguments of the test stages, e.g. -k "not baseline_matches" or -k oob_write_far
#   PYTEST_TIMEOUT seconds one GPU test may take, its wait for the GPU's lock included (default 900: with -n 12 on
#                  one GPU, tests waited over the project's 300 s for the lock and failed unrun, 2026-11-28)
#   LIBRARY_ARGS   extra bench/library.py arguments of the library stages, e.g. "--task spmm_csr"
#   EVAL_ARGS      extra bench/eval_baselines.py arguments of eval-baselines, e.g. "--task softmax --task top_k"
#   SHARING_ARGS   bench/gpu_sharing.py arguments (default "--runs 4 --delay 5"; add "--profile filtered --rounds 1")
#   CANDIDATES     files for the candidates stage (default: tests/gpu_candidates/*_fast.cu)
#   REPEAT_ARGS    extra bench/repeatability.py arguments, e.g. "--precision fp32 --task softmax"
#   REPEAT_RESUME  a repeatability.json of an earlier call: its tasks are kept (tables included), the rest run
#   FULLSTACK_ARGS extra bench/fullstack.py arguments, e.g. "--timing-protocol queued"
#   MSKB_CHECKOUT  a checkout of CUDAMaster's demo repository (Hanyx2021/MSKernelBenchDemo) for the agreement stage
#   GPUS           CUDA device numbers for the agreement stage, one serial worker each (default: 0)
#   AGREEMENT_RESUME  an agreement.json of an earlier call: its finished items are kept, the rest run
#   AGREEMENT_ARGS    extra bench/agreement.py arguments, e.g. "--ops vector_add,dot_product --precisions bf16"
#   SHARDS         processes side by side in library-validate (default 8)
#   JOBS           parallel builds (default: the number of cores)
#
# The build cache is .build/cache in the checkout (KW_BUILD_CACHE and KW_TEST_BUILD_CACHE), so objects
# compiled on another machine with the same nvcc and carried in .build/cache are reused, and a warm machine's
# next call reuses its own. Where the CUDA toolkit lacks cuBLAS/cuSPARSE, they are taken from NVIDIA's Python
# wheels installed for PYTHON (the layout of `make .cuda-libs/.ready`).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
# shellcheck source=bench/wheels.sh
. bench/wheels.sh

STAGES=(env tests tests-formats library-compile library-validate library-time-fp32 library-time-bf16
        library-census-fp32 library-census-bf16 library-all eval-baselines build-cache candidates
        host-speed event-clock repeatability agreement pipeline-demo pipeline-demo-formats sharing fullstack formats experiment)

describe() {
  case $1 in
    env) echo "toolchain and GPU facts: nvidia-smi, nvcc, ncu, compute-sanitizer, cuobjdump, Python, numpy, torch, ninja, cores" ;;
    tests) echo "the GPU tests of the C/CUDA engine: every baseline against its CPU reference, every candidate of tests/gpu_candidates/ against its expected verdict, the fault cases" ;;
    tests-formats) echo "the GPU tests of the KernelBench (PyTorch) and task.yaml (make) backends" ;;
    library-compile) echo "bench/library.py: every task and library reference compiled on all cores" ;;
    library-validate) echo "every baseline against its CPU reference, SHARDS processes side by side (each with its own GPU lock)" ;;
    library-time-fp32|library-time-bf16) echo "every ${1#library-time-} baseline and library reference timed, one process holding the GPU" ;;
    library-census-fp32|library-census-bf16) echo "every ${1#library-census-} baseline profiled with Nsight Compute at its largest size; Otsu thresholds" ;;
    library-all) echo "validate and time the whole library in one command: its wall time and peak memory" ;;
    eval-baselines) echo "bench/eval_baselines.py --profile filtered over the baselines, then Otsu thresholds over their profiles" ;;
    build-cache) echo "two passes over vector_add and softmax: the second must reuse the build cache" ;;
    candidates) echo "bench/gpu_candidates.py: P and speedups of the hand-written faster candidates" ;;
    host-speed) echo "bench/host_speed.py --per-cpu --blocks 40: how far the host's own speed moves between processes and inside one (run it before repeatability)" ;;
    event-clock) echo "bench/event_clock.cu: the step of the GPU's event clock, and a two-kernel call behind the L2 flush timed one call per sample in variants (docs/benchmarks.md)" ;;
    repeatability) echo "bench/repeatability.py: every baseline timed as a candidate: a reference, then the protocol under test twice (REPEAT_ARGS --after), P repeat and CV per size (an otherwise idle GPU), then bench/cv_anatomy.py on its samples" ;;
    agreement) echo "bench/agreement.py: MSKernelBench's published kernels through their harness and ours (MSKB_CHECKOUT, GPUS)" ;;
    pipeline-demo) echo "the agent pipeline with the scripted LLM (demo/scripts) on softmax, matrix_mul, dot_product FP32: trajectories" ;;
    pipeline-demo-formats) echo "the agent pipeline with the scripted LLM on a KernelBench and a task.yaml task: trajectories" ;;
    sharing) echo "bench/gpu_sharing.py: concurrent runs with a delayed LLM, the GPU's busy fraction" ;;
    fullstack) echo "bench/fullstack.py: web server, Celery GPU worker and a run launched through the API, followed over a websocket" ;;
    formats) echo "validate-tasks on the shipped KernelBench and task.yaml examples, and their hand-written candidates of demo/formats/" ;;
    experiment) echo "bench/experiment_fullstack.py: the 12-task demo experiment through the whole stack, then its profiled variant" ;;
    *) return 1 ;;
  esac
}

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

list_stages() {
  local s
  for s in "${STAGES[@]}"; do printf '  %-22s %s\n' "$s" "$(describe "$s")"; done
}

out=${OUT:-${TMPDIR:-/tmp}/kernelweb-gpu-run}
limit=""
dry_run=0
simulated=0
wheels=1
bundle=""
selected=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --limit) limit=${2:?--limit needs seconds}; shift 2 ;;
    --limit=*) limit=${1#--limit=}; shift ;;
    --dry-run) dry_run=1; shift ;;
    --simulated-gpu) simulated=1; shift ;;
    --no-wheels) wheels=0; shift ;;
    --bundle) bundle=${2:?--bundle needs a folder}; shift 2 ;;
    --bundle=*) bundle=${1#--bundle=}; shift ;;
    --list) list_stages; exit 0 ;;
    -h|--help) usage; echo; echo "Stages:"; list_stages; exit 0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) describe "$1" >/dev/null || { echo "unknown stage $1 (see --list)" >&2; exit 2; }; selected+=("$1"); shift ;;
  esac
done
if [ ${#selected[@]} -eq 0 ]; then
  if [ "$dry_run" = 1 ]; then selected=("${STAGES[@]}"); else usage >&2; exit 2; fi
fi
if [ -n "$bundle" ]; then
  case "$(realpath -m "$bundle")/" in
    "$(realpath -m "$out")"/*) echo "--bundle $bundle lies in --out $out: give --out a scratch folder outside it" >&2
                               exit 2 ;;
  esac
fi
case $limit in ''|*[!0-9]*) [ -z "$limit" ] || { echo "--limit takes whole seconds" >&2; exit 2; } ;; esac

python=${PYTHON:-python3}
jobs=${JOBS:-$(nproc)}
wheel_dir=${WHEELS:-.whl}
started=$(date +%s)
scratch=${TMPDIR:-/tmp}/kernelweb-gpu-run.$$
O=$(printf '%q' "$out")
PY=$(printf '%q' "$python")
S=$(printf '%q' "$scratch")
# Each command's limit is what is left of --limit when it starts (at least 1 s): evaluated by run()'s eval.
left() { local l=$(( limit - ($(date +%s) - started) )); echo $(( l > 1 ? l : 1 )); }
# shellcheck disable=SC2016  # expanded later, by run()'s eval, when the command starts
T=${limit:+'timeout -k 10 $(left) '}

# One command line, shown as run (--dry-run prints it instead); a failed one fails its stage.
run() {
  if [ "$dry_run" = 1 ]; then printf '    %s\n' "$1"; return 0; fi
  eval "$1" || stage_failed=1
}

stamp() { echo "== $(date -u +%H:%M:%S) $*"; }

# The files of the GPU tests: every test module with a `gpu` mark, wherever the tests folder keeps it.
gpu_test_files() {  # formats | engine
  local files
  files=$(grep -rlE --include='test_*.py' 'pytest\.mark\.gpu|mark\.gpu\b' tests | sort)
  if [ "$1" = formats ]; then grep -E 'kernelbench|taskyaml' <<<"$files"; else grep -vE 'kernelbench|taskyaml' <<<"$files"; fi
}

pytest_cmd() {  # log-name files...
  local log=$1; shift
  if [ -z "$*" ]; then echo "echo 'no GPU test files found under tests/'; false"; return; fi
  # Plain pytest: the device's Python may lack the project's pytest plugins, so the repository's addopts go.
  # -v: each test's name is in the log as it ends, so a call stopped by its limit still says which passed.
  echo "$T$PY -m pytest -m gpu $* -v -rA -p no:cacheprovider -p no:django -o addopts= -o timeout=${PYTEST_TIMEOUT:-900}" \
       "${PYTEST_ARGS:-}" \
       "--junitxml=$O/$log.xml > $O/$log.log 2>&1; _rc=\$?; tail -25 $O/$log.log; (exit \$_rc)"
}

setup() {
  if [ "$dry_run" = 1 ]; then
    echo "setup: mkdir -p $O; wheels of $wheel_dir/ installed into $S/site when present (PYTHONPATH);"
    echo "       KW_BUILD_CACHE=.build/cache; KW_CUDA_EXTRA from NVIDIA's Python wheels when the toolkit lacks cuBLAS"
    return 0
  fi
  mkdir -p "$out" "$scratch" || exit 1
  export PYTHONUNBUFFERED=1 KW_BUILD_CACHE=$PWD/.build/cache KW_TEST_BUILD_CACHE=$PWD/.build/cache
  export KW_TIMING_CACHE=${KW_TIMING_CACHE:-$scratch/timing} MAX_JOBS=${MAX_JOBS:-$jobs}
  if [ "$wheels" = 1 ]; then install_wheels "$python" "$wheel_dir" "$scratch/site" || exit 1; fi
  start_clock_log
  local nvcc inc site d f
  nvcc=$(command -v nvcc) || return 0
  inc=$(dirname "$(readlink -f "$nvcc")")/../include
  if [ -z "${KW_CUDA_EXTRA:-}" ] && { [ ! -f "$inc/cublas_v2.h" ] || [ ! -f "$inc/cusparse.h" ]; }; then
    site=$("$python" -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null) || return 0
    mkdir -p "$scratch/cuda-extra/include" "$scratch/cuda-extra/lib"
    for d in "$site"/nvidia/*/; do
      [ -d "$d/include" ] && cp -r "$d/include/." "$scratch/cuda-extra/include/"
      [ -d "$d/lib" ] && cp -r "$d/lib/." "$scratch/cuda-extra/lib/"
    done
    for f in "$scratch"/cuda-extra/lib/lib*.so.*; do [ -e "$f" ] && ln -sf "$(basename "$f")" "${f%%.so.*}.so"; done
    export KW_CUDA_EXTRA=$scratch/cuda-extra
  fi
}

# The GPU's clock over the whole call, every 250 ms, into clocks.csv (bench/clock_log.py sums it up at the end):
# whether a table's numbers were taken at full clock. The reasons' field was renamed in driver R535.
clock_pid=""
start_clock_log() {
  command -v nvidia-smi > /dev/null || return 0
  local field
  for field in clocks_event_reasons.active clocks_throttle_reasons.active; do
    nvidia-smi --query-gpu="$field" --format=csv,noheader > /dev/null 2>&1 || continue
    nvidia-smi --query-gpu="timestamp,index,clocks.sm,clocks.max.sm,$field,power.draw,temperature.gpu" \
      --format=csv,nounits -lms 250 > "$out/clocks.csv" 2> /dev/null &
    clock_pid=$!
    return 0
  done
}

stop_clock_log() {
  [ -n "$clock_pid" ] || return 0
  kill "$clock_pid" 2> /dev/null; wait "$clock_pid" 2> /dev/null
  "$python" bench/clock_log.py "$out/clocks.csv" > "$out/clock-log.txt" 2>&1
  head -1 "$out/clock-log.txt"
}

stage() {
  local name=$1 p
  case $name in
    env)
      run "{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv;
      nvcc --version | tail -2; ncu --version | tail -1; compute-sanitizer --version | tail -1;
      echo \"cuobjdump: \$(command -v cuobjdump || echo missing)\"; $PY --version;
      $PY -c 'import numpy; print(\"numpy\", numpy.__version__)';
      $PY -c 'import torch; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda)';
      echo \"ninja \$(ninja --version)\"; echo \"cores: \$(nproc)\";
      echo \"KW_CUDA_EXTRA=\${KW_CUDA_EXTRA:-unset}\";
      echo \"carried build objects: \$(ls .build/cache/objects 2>/dev/null | wc -l)\"; } 2>&1 | tee $O/env.txt" ;;
    tests)
      run "$(pytest_cmd gpu-tests "$(gpu_test_files engine | tr '\n' ' ')")" ;;
    tests-formats)
      run "$(pytest_cmd gpu-tests-formats "$(gpu_test_files formats | tr '\n' ' ')")" ;;
    library-compile)
      run "$T$PY bench/library.py --jobs $jobs ${LIBRARY_ARGS:-} 2> $O/library-compile.err | tee $O/library-compile.txt" ;;
    library-validate)
      local n=${SHARDS:-8} k
      run "mkdir -p $O/library-validate"
      run "_pids=(); _t0=\$(date +%s)"
      for k in $(seq 0 $((n - 1))); do
        run "KW_LOCK_DIR=$S/lock-$k $T$PY bench/library.py --validate --shard $k/$n --jobs 2 ${LIBRARY_ARGS:-} \
--json $O/library-validate/shard-$k.json > $S/validate-$k.txt 2>&1 & _pids+=(\$!)"
      done
      run "_rc=0; for _p in \"\${_pids[@]}\"; do wait \$_p || _rc=1; done; \
echo \"validate: $n shards in \$(( \$(date +%s) - _t0 )) s\"; (exit \$_rc)"
      run "cat $S/validate-*.txt | grep -E '^(FAIL|validate:|compile:|  FAILED)' | tee $O/library-validate.txt" ;;
    library-time-fp32|library-time-bf16)
      p=${name#library-time-}
      run "$T$PY bench/library.py --time --precision $p --jobs $jobs ${LIBRARY_ARGS:-} --json $O/library-time-$p.json \
2> $O/library-time-$p.err | tee $O/library-time-$p.txt | { grep -v '^|' || true; }" ;;
    library-census-fp32|library-census-bf16)
      p=${name#library-census-}
      run "$T$PY bench/library.py --census --precision $p --jobs $jobs ${LIBRARY_ARGS:-} --json $O/library-census-$p.json \
2> $O/library-census-$p.err | tee $O/library-census-$p.txt | { grep -v '^|' || true; }; _rc=\$?; \
grep '^no profile' $O/library-census-$p.err; (exit \$_rc)" ;;
    library-all)
      run "/usr/bin/time -v $T$PY bench/library.py --validate --time --jobs $jobs ${LIBRARY_ARGS:-} \
--json $O/library-all.json 2> $O/library-all.err | tee $O/library-all.txt | { grep -v '^|' || true; }; _rc=\$?; \
grep -E 'Elapsed|Maximum resident' $O/library-all.err; (exit \$_rc)" ;;
    eval-baselines)
      run "$T$PY bench/eval_baselines.py --profile filtered --runs 1 --json $O/eval-baselines.json ${EVAL_ARGS:-} \
> $O/eval-baselines.txt 2> $O/eval-baselines.err; _rc=\$?; tail -32 $O/eval-baselines.txt; \
grep done $O/eval-baselines.err; (exit \$_rc)"
      run "$PY -m worker thresholds --from-json $O/eval-baselines.json 2>&1 | tee $O/thresholds.txt | tail -30" ;;
    build-cache)
      run "$T$PY bench/eval_baselines.py --task vector_add --task softmax --profile none --runs 2 \
> $O/build-cache.txt 2>&1; _rc=\$?; tail -14 $O/build-cache.txt; (exit \$_rc)" ;;
    candidates)
      run "$T$PY bench/gpu_candidates.py ${CANDIDATES:-tests/gpu_candidates/*_fast.cu} --json $O/candidates.json 2>&1 \
| tee $O/candidates.txt" ;;
    host-speed)
      run "$PY bench/host_speed.py --per-cpu --processes 10 --blocks 40 2>&1 | tee $O/host-speed.txt" ;;
    event-clock)
      run "nvcc -O3 -arch=native -I tasks/_harness -o $S/event_clock bench/event_clock.cu && $S/event_clock 2>&1 \
| tee $O/event-clock.txt" ;;
    repeatability)
      local resume=""
      if [ -n "${REPEAT_RESUME:-}" ]; then  # copied into scratch: the new JSON in $O holds the old tasks and the new
        run "cp \"\$REPEAT_RESUME\" $S/repeatability-resume.json"
        resume=" --resume $S/repeatability-resume.json"
      fi
      run "$T$PY bench/repeatability.py --jobs $jobs --json $O/repeatability.json$resume ${REPEAT_ARGS:-} \
> $O/repeatability.txt 2>&1; _rc=\$?; grep -E 'P repeat|within|CV of' $O/repeatability.txt | tail -60; \
$PY bench/cv_anatomy.py --sizes $O/repeatability.json > $O/cv-anatomy.txt 2>&1; tail -1 $O/cv-anatomy.txt; (exit \$_rc)" ;;
    agreement)
      # The working folder stays in scratch (hundreds of files); its tables and a tarball of the logs come back.
      run "[ -d \"\${MSKB_CHECKOUT:-}\" ] || { echo 'agreement: set MSKB_CHECKOUT to a checkout of MSKernelBenchDemo'; false; }"
      run "mkdir -p $S/agreement && if [ -f \"\${AGREEMENT_RESUME:-}\" ]; then cp \"\$AGREEMENT_RESUME\" $S/agreement/agreement.json; fi"
      run "$PY bench/agreement.py --checkout \"\$MSKB_CHECKOUT\" --out $S/agreement --build-dir $S/agreement-build \
--compile-only --jobs $jobs --resume ${AGREEMENT_ARGS:-} > $O/agreement-compile.txt 2>&1"
      run "$T$PY bench/agreement.py --checkout \"\$MSKB_CHECKOUT\" --out $S/agreement --build-dir $S/agreement-build \
--gpus ${GPUS:-0} --resume ${limit:+--deadline \$(( \$(left) / 2 ))} ${AGREEMENT_ARGS:-} > $O/agreement.txt 2>&1; _rc=\$?; \
cp $S/agreement/agreement.json $S/agreement/agreement.csv $O/; tar czf $O/agreement-logs.tgz -C $S/agreement \$(cd $S/agreement && ls -d kernelweb theirs 2>/dev/null); \
grep -v '^\\[' $O/agreement.txt; (exit \$_rc)" ;;
    pipeline-demo)
      local op
      for op in softmax matrix_mul dot_product; do
        run "$T$PY -m worker optimize --task $op --precision fp32 --llm demo/scripts/${op}_fp32_demo.json \
--rounds 2 --debug-rounds 1 --profile filtered --out $O/${op}_fp32_trajectory.json 2>> $O/pipeline-demo.log \
| tee -a $O/pipeline-demo.txt"
      done ;;
    pipeline-demo-formats)
      local task script
      for task in kernelbench-examples/scale_bias_leaky_relu:scale_bias_leaky_relu_fp32 \
                  cudahercules-examples/vector_add_make:vector_add_make; do
        script=${task#*:}; task=${task%%:*}
        run "$T$PY -m worker optimize --task $task --precision fp32 --llm demo/scripts/${script}_demo.json \
--rounds 2 --debug-rounds 1 --profile none --out $O/${script}_trajectory.json > $O/${script}.log 2>&1; \
_rc=\$?; echo \"exit \$_rc\"; tail -12 $O/${script}.log; (exit \$_rc)"
      done ;;
    sharing)
      run "$T$PY bench/gpu_sharing.py ${SHARING_ARGS:---runs 4 --delay 5} 2>&1 | tee $O/sharing.txt" ;;
    fullstack)
      run "$T$PY bench/fullstack.py ${FULLSTACK_ARGS:-} > $O/fullstack.txt 2>&1; _rc=\$?; tail -22 $O/fullstack.txt; (exit \$_rc)" ;;
    formats)
      local task
      for task in kernelbench-examples/matmul_square kernelbench-examples/scale_bias_leaky_relu \
                  cudahercules-examples/vector_add_make; do
        run "$T$PY -m worker validate-tasks --task $task 2>> $O/formats.err | tee -a $O/formats.txt"
      done
      # task precision candidate [options]: the hand-written candidates of the shipped examples
      local row
      for row in "kernelbench-examples/scale_bias_leaky_relu fp32 demo/formats/scale_bias_leaky_relu_fused.py --torch-compile" \
                 "kernelbench-examples/scale_bias_leaky_relu bf16 demo/formats/scale_bias_leaky_relu_fused.py --torch-compile" \
                 "kernelbench-examples/matmul_square fp32 demo/formats/matmul_square_tiled.py" \
                 "cudahercules-examples/vector_add_make fp32 demo/formats/vector_add_make_fast.cu"; do
        read -r task p file opts <<<"$row"
        run "echo '== eval $task $p $file' | tee -a $O/formats.txt; $T$PY -m worker eval --task $task --precision $p \
--candidate $file ${opts:-} --json $O/formats-eval-${task#*/}-$p.json 2>> $O/formats.err | tee -a $O/formats.txt"
      done
      run "tail -5 $O/formats.err" ;;
    experiment)
      local rest deadline sim=""
      [ "$simulated" = 1 ] && sim=" --simulated-gpu"
      if [ -n "$limit" ]; then
        # What is left of the budget, 20 s kept for packing; the experiment ends 60 s before, for its cancel,
        # analyses and export.
        rest=$(( $(left) - 20 )); deadline=$(( rest - 60 ))
        run "timeout -k 10 $rest $PY bench/experiment_fullstack.py --out $S/experiment --deadline $deadline$sim \
> $O/experiment.txt 2>&1; echo \"bench/experiment_fullstack.py exit \$?\" >> $O/experiment.txt"
      else
        run "$PY bench/experiment_fullstack.py --out $S/experiment$sim > $O/experiment.txt 2>&1; \
echo \"bench/experiment_fullstack.py exit \$?\" >> $O/experiment.txt"
      fi
      run "cp $S/experiment/summary.json $O/experiment-summary.json 2>/dev/null; \
tar -czf $O/experiment.tgz -C $S/experiment . 2>> $O/experiment.txt || true"
      # Device calls return files up to a size: large archives come back in parts (cat experiment.tgz.part-*).
      run "if [ \$(stat -c %s $O/experiment.tgz) -gt $((15 * 1024 * 1024)) ]; then \
split -b 15M -a 1 $O/experiment.tgz $O/experiment.tgz.part- && rm $O/experiment.tgz; fi"
      run "tail -n 60 $O/experiment.txt; grep -q 'experiment_fullstack.py exit 0' $O/experiment.txt" ;;
  esac
}

setup
failed=()
for name in "${selected[@]}"; do
  if [ "$dry_run" = 1 ]; then echo "$name: $(describe "$name")"; else stamp "$name: $(describe "$name")"; fi
  stage_failed=0
  stage "$name"
  [ "$stage_failed" = 0 ] || failed+=("$name")
done
[ "$dry_run" = 1 ] && exit 0
stop_clock_log
rm -rf "$scratch/site" "$scratch/cuda-extra"
stamp "done in $(( $(date +%s) - started )) s; raw output in $out"
[ ${#failed[@]} -gt 0 ] && echo "stages that failed: ${failed[*]}"
if [ -n "$bundle" ]; then
  mkdir -p "$bundle" && tar czf "$bundle/raw.tgz" -C "$out" . 2>/dev/null
  { summary_lines "$out"; [ ${#failed[@]} -eq 0 ] || echo "stages that failed: ${failed[*]}"; } > "$bundle/summary.txt"
fi
[ ${#failed[@]} -eq 0 ] || exit 1
