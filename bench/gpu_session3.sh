#!/usr/bin/env bash
# Device run for issue 7's last criterion: the 12-task experiment with the scripted LLM, for real, through the
# whole stack on one H100 (bench/experiment_fullstack.py: daphne, a Celery worker with --concurrency 2 on the
# embedded broker, the API), plus its profiled variant in the time left; finishes within 9 minutes.
#
# Carry: .whl (the wheels of requirements.txt for the device's Python 3.12) and, optionally,
# .build/cache/objects (baseline and candidate objects compiled here for sm_90 with the same nvcc 13.0 by
# `KW_TEST_BUILD_CACHE=$PWD/.build/cache pytest tests/worker/test_experiment_script.py`: saves their compiles there).
# Comes back under $OUT (at most 8 files): env.txt, experiment.txt (the log: progress, tables, recap),
# summary.json, and experiment.tgz (analyses JSON, CSV and SVG per precision, the exported experiments for
# `manage.py import_experiment`, the ablation, the server logs), split into experiment.tgz.part-* if large.
# A rehearsal on a machine without a GPU: KW_DRY_RUN=1 PYTHON=.venv/bin/python bash bench/gpu_session3.sh
# (no wheels installed, the bench's --simulated-gpu).
set -uo pipefail
out=${OUT:-/tmp/kw-out}
mkdir -p "$out"
started=$(date +%s)
budget=${KW_SESSION_SECONDS:-535}   # the whole command, pip included
python=${PYTHON:-python3}
dry=()
if [ -n "${KW_DRY_RUN:-}" ]; then
  dry=(--simulated-gpu)
else
  "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
fi
export PYTHONUNBUFFERED=1
export KW_BUILD_CACHE=$PWD/.build/cache
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -2; ncu --version | tail -1; "$python" --version; nproc
  echo "carried objects: $(ls .build/cache/objects 2>/dev/null | wc -l)"; } > "$out/env.txt" 2>&1
cat "$out/env.txt"
work=/tmp/kw-experiment
rm -rf "$work"
left=$(( budget - ($(date +%s) - started) - 20 ))   # 20 s kept for packing the results
# The experiment must end by the deadline; the 60 s after it are for the cancel, the analyses and the export.
timeout -k 10 "$left" "$python" bench/experiment_fullstack.py --out "$work" --deadline $(( left - 60 )) "${dry[@]}" \
  > "$out/experiment.txt" 2>&1
rc=$?
echo "bench/experiment_fullstack.py exit $rc after $(( $(date +%s) - started )) s of the session" >> "$out/experiment.txt"
cp "$work/summary.json" "$out/summary.json" 2>/dev/null
tar -czf "$out/experiment.tgz" -C "$work" . 2>>"$out/experiment.txt"
if [ "$(stat -c %s "$out/experiment.tgz")" -gt $(( 15 * 1024 * 1024 )) ]; then
  split -b 15M -a 1 "$out/experiment.tgz" "$out/experiment.tgz.part-" && rm "$out/experiment.tgz"
fi
ls -l "$out"
tail -n 60 "$out/experiment.txt"
exit $rc
