#!/usr/bin/env bash
# Several bench/gpu_run.sh calls side by side on a multi-GPU host, one per GPU, in one device call.
#
#   bash bench/gpu_shards.sh [--out DIR] [--bundle DIR] [--limit SECONDS] [--dry-run] SHARD...
#
# Each SHARD is the environment of one gpu_run.sh call, as shell assignments; STAGES names its stages. The
# first shard runs on GPU 0 (CUDA_VISIBLE_DEVICES=0), the second on GPU 1, and so on; each GPU's lock is its
# own, so the shards never wait for each other. For example, the GPU tests in four parts:
#
#   bash bench/gpu_shards.sh --limit 520 \
#     "STAGES=tests-formats PYTEST_ARGS='-n 4'" \
#     "STAGES=tests PYTEST_ARGS='-v -k \"profiled or forged_past or kwref_refuses\"'" \
#     "STAGES=tests PYTEST_ARGS='-v -n 3 -k candidate_gets_its_expected_verdict'" \
#     "STAGES=tests KW_LOCKDOWN=1 PYTEST_ARGS='-v -n 2 -k \"less_work or memo\"'"
#
# The wheels of .whl/ are installed once, before the shards start. Shard k writes under DIR/gpu<k>/ and its
# console to DIR/gpu<k>.txt; at the end DIR/shards.tgz holds them all (a device call returns few files).
# --bundle DIR (the device call's $OUT) receives only two files: shards.tgz and summary.txt, each shard's test
# outcomes (PASSED/FAILED lines, pytest's last line) and summary lines of its bench scripts, so the call's file
# limit is never reached (2026-11-28: a call that wrote ten files lost its tarball).
# --limit is each shard's gpu_run.sh --limit: the whole shard's time, all its stages together. Timings from
# shards that share a host are not the single-GPU protocol of bench/repeatability.py (docs/benchmarks.md):
# run that stage alone.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
# shellcheck source=bench/wheels.sh
. bench/wheels.sh

out=${OUT:-${TMPDIR:-/tmp}/kernelweb-gpu-shards}
limit=""
bundle=""
dry_run=0
shards=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --bundle) bundle=${2:?--bundle needs a folder}; shift 2 ;;
    --limit) limit=${2:?--limit needs seconds}; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) shards+=("$1"); shift ;;
  esac
done
[ ${#shards[@]} -gt 0 ] || { echo "name at least one shard (see --help)" >&2; exit 2; }
case $limit in ''|*[!0-9]*) [ -z "$limit" ] || { echo "--limit takes whole seconds" >&2; exit 2; } ;; esac

python=${PYTHON:-python3}
wheel_dir=${WHEELS:-.whl}

stages_of() {  # shard: the STAGES its assignments set
  ( eval "${1}" >/dev/null 2>&1; echo "${STAGES:-}" )
}

command_of() {  # shard-number prefix stages
  printf 'CUDA_VISIBLE_DEVICES=%s %sbash bench/gpu_run.sh --no-wheels%s --out %q %s' \
    "$1" "${2:+$2 }" "${limit:+ --limit $limit}" "$out/gpu$1" "$3"
}

for k in "${!shards[@]}"; do
  [ -n "$(stages_of "${shards[$k]}")" ] || { echo "shard $k (${shards[$k]}) sets no STAGES" >&2; exit 2; }
done
if [ "$dry_run" = 1 ]; then
  for k in "${!shards[@]}"; do echo "gpu$k: $(command_of "$k" "${shards[$k]}" "$(stages_of "${shards[$k]}")")"; done
  exit 0
fi

mkdir -p "$out" || exit 1
install_wheels "$python" "$wheel_dir" "${TMPDIR:-/tmp}/kernelweb-gpu-shards-site.$$" || exit 1
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm --format=csv > "$out/gpus.txt" 2>&1

pids=()
for k in "${!shards[@]}"; do
  # The shard's assignments and its gpu_run.sh call in a subshell of its own: nothing leaks between shards.
  ( eval "export ${shards[$k]}" && eval "$(command_of "$k" "" "$(stages_of "${shards[$k]}")")" ) \
    > "$out/gpu$k.txt" 2>&1 &
  pids+=($!)
done
rc=0
for k in "${!pids[@]}"; do
  wait "${pids[$k]}" || { rc=1; echo "gpu$k: a stage failed (see gpu$k.txt)"; }
done
tar czf "$out/shards.tgz" -C "$out" --exclude shards.tgz . 2>/dev/null
for k in "${!shards[@]}"; do echo "== gpu$k: ${shards[$k]}"; tail -n 4 "$out/gpu$k.txt"; done
if [ -n "$bundle" ]; then
  mkdir -p "$bundle" && cp "$out/shards.tgz" "$bundle/"
  for k in "${!shards[@]}"; do
    echo "== gpu$k: ${shards[$k]}"
    summary_lines "$out/gpu$k"
    grep -h 'stages that failed' "$out/gpu$k.txt" 2>/dev/null
  done > "$bundle/summary.txt"
fi
exit $rc
