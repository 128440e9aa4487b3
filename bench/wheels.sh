# shellcheck shell=bash
# Sourced by bench/gpu_run.sh and bench/gpu_shards.sh: a GPU host without network gets the project's wheels, and
# a device call (which returns at most 8 files) gets the summary lines of a folder of raw output.
#
# install_wheels PYTHON DIR TARGET: when DIR holds wheels, install them (no index, no dependencies) into TARGET
# and put TARGET on PYTHONPATH and PATH; nothing when it holds none. Returns 1, saying so, if pip fails.
install_wheels() {
  compgen -G "$2/*.whl" >/dev/null || return 0
  "$1" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$3" "$2"/*.whl \
    || { echo "could not install the wheels of $2/" >&2; return 1; }
  export PYTHONPATH=$3${PYTHONPATH:+:$PYTHONPATH} PATH=$3/bin:$PATH
}

# summary_lines DIR: from the .log and .txt files under DIR, each test's outcome, pytest's last line, the bench
# scripts' summary lines: what a bundle's summary.txt holds beside the tarball.
summary_lines() {
  find "$1" -type f \( -name '*.log' -o -name '*.txt' \) -print0 2>/dev/null | sort -z \
    | xargs -0 -r grep -h -E '^(PASSED|FAILED|ERROR) |^=+ .*(passed|failed|error)|P repeat|within 2 %|CV of|^host tables:|^clock log:|^[A-Za-z0-9_.]+\.cu +[a-z_]+ +(fp32|bf16) ' \
      2>/dev/null
}
