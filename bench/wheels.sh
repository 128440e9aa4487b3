# shellcheck shell=bash
# Sourced by bench/gpu_run.sh and bench/gpu_shards.sh: a GPU host without network gets the project's wheels.
#
# install_wheels PYTHON DIR TARGET: when DIR holds wheels, install them (no index, no dependencies) into TARGET
# and put TARGET on PYTHONPATH and PATH; nothing when it holds none. Returns 1, saying so, if pip fails.
install_wheels() {
  compgen -G "$2/*.whl" >/dev/null || return 0
  "$1" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$3" "$2"/*.whl \
    || { echo "could not install the wheels of $2/" >&2; return 1; }
  export PYTHONPATH=$3${PYTHONPATH:+:$PYTHONPATH} PATH=$3/bin:$PATH
}
