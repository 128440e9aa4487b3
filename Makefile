# KernelWeb: `make run` brings the app up from nothing; `make test` runs every test that needs no GPU.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000
QUEUES ?= kernelweb,gpu
# PostgreSQL and Redis used by `make test` (the CI machine runs both on loopback).
POSTGRES_TEST_URL ?= postgres://postgres@127.0.0.1:5432/kernelweb
REDIS_TEST_URL    ?= redis://127.0.0.1:6379/15
# Where `make .cuda-libs/.ready` put cuBLAS/cuSPARSE when the toolkit lacks them (read by worker/formats/cuda/build.py).
export KW_CUDA_EXTRA := $(CURDIR)/.cuda-libs

.PHONY: run worker install install-dev migrate test test-fast test-gpu lint format clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# The front-end bundle (docs/frontend.md): npm packages built by esbuild into static/dist/ (not committed).
static/dist/.built: package.json package-lock.json $(wildcard frontend/*)
	npm ci --no-audit --no-fund --loglevel=error && npm run build && touch static/dist/.built

migrate: install
	$(BIN)/python manage.py migrate --noinput

# The dev worker also runs Celery beat (-B): the delivery reconciler (apps/runs/reconcile.py) every minute.
# .cuda-libs/.ready: cuobjdump and nvdisasm where the toolkit lacks them, for the viewer's PTX/SASS tab; the demo
# runs' listings are compiled on first start (import_trajectory --assembly: compile only, under a minute).
# The demo's library references (measured on an H100, docs/experiments.md) unless the environment names others.
run: export LIBRARY_REFERENCES_FILE ?= $(CURDIR)/demo/h100-library.json
run: migrate static/dist/.built .cuda-libs/.ready
	$(BIN)/python manage.py sync_tasks
	$(BIN)/python manage.py ensure_admin
	$(BIN)/python manage.py import_trajectory demo/trajectories/*.json --public --skip-existing --assembly
	@for d in demo/experiments/*/; do $(BIN)/python manage.py import_experiment "$$d" --public --skip-existing || exit 1; done
	@echo ""
	@echo "  KernelWeb is starting at http://$(HOST):$(PORT)/  (Ctrl-C stops the web server and the worker)"
	@echo ""
	@trap 'trap - INT TERM EXIT; kill 0' INT TERM EXIT; \
	$(BIN)/celery -A kernelweb worker -B -Q $(QUEUES) --concurrency 1 --loglevel INFO & \
	$(BIN)/daphne -b $(HOST) -p $(PORT) kernelweb.asgi:application

# One Celery worker per GPU of this host, pinned and on its model's queue (gpu.h100,gpu); without a GPU,
# one worker on `gpu`. Ctrl-C stops them; nothing is restarted (deploy/systemd/ does that in production).
worker: install .cuda-libs/.ready
	$(BIN)/python manage.py gpu_workers

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache

test: install-dev static/dist/.built .cuda-libs/.ready
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	@# The engine's tests (tests/worker) are CPU-bound nvcc and g++ builds sharing one build cache: one pytest
	@# worker per core (pytest-xdist). The rest start servers and browsers and flush Redis: two workers, each
	@# test file whole on one of them, each worker with a Redis database of its own (tests/conftest.py); on
	@# PostgreSQL each worker also gets a test database of its own (pytest-django names it after the worker).
	$(BIN)/python -m pytest -m "not gpu" -n auto --maxprocesses 4 tests/worker
	$(BIN)/python -m pytest -m "not gpu" -n 2 --dist loadfile --ignore=tests/worker
	@if $(BIN)/python -m testing.reachable "$(POSTGRES_TEST_URL)"; then \
	  echo "== again on PostgreSQL ($(POSTGRES_TEST_URL)) =="; \
	  DATABASE_URL="$(POSTGRES_TEST_URL)" $(BIN)/python -m pytest -m "not gpu and not browser and not slow" \
	    -n 2 --dist loadfile tests/web; \
	elif [ -n "$$CI" ]; then echo "PostgreSQL at $(POSTGRES_TEST_URL) is required in CI"; exit 1; \
	else echo "== PostgreSQL not reachable at $(POSTGRES_TEST_URL): skipped the PostgreSQL pass =="; fi

test-fast: install-dev static/dist/.built .cuda-libs/.ready
	$(BIN)/python -m pytest -m "not gpu and not slow and not browser" -x -q

test-gpu: install-dev
	$(BIN)/python -m pytest -m gpu

format: install-dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf var/broker var/staticfiles .pytest_cache node_modules static/dist

# What a compiler-only CUDA install (as on CI) lacks, from NVIDIA's PyPI wheels into .cuda-libs/:
# cuBLAS and cuSPARSE headers and libraries (the tasks' library references), and cuobjdump +
# nvdisasm (the PTX/SASS listings of worker/engine/assembly.py). Full toolkits need none of it.
CUDA_HOME_DIR := $(dir $(shell readlink -f $$(command -v nvcc) 2>/dev/null))..
.cuda-libs/.ready: | $(BIN)/python
	@rm -rf .cuda-libs && mkdir -p .cuda-libs/wheels .cuda-libs/include .cuda-libs/lib .cuda-libs/bin; 	want=""; 	if [ ! -f "$(CUDA_HOME_DIR)/include/cublas_v2.h" ] || [ ! -f "$(CUDA_HOME_DIR)/include/cusparse.h" ]; then 	  want="$$want nvidia-cublas==13.10.0.20 nvidia-cusparse==12.9.4.2"; fi; 	if ! command -v cuobjdump >/dev/null && [ ! -x "$(CUDA_HOME_DIR)/bin/cuobjdump" ]; then 	  want="$$want nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37"; fi; 	if [ -z "$$want" ]; then echo "the CUDA toolkit has cuBLAS, cuSPARSE and cuobjdump"; else 	  echo "from NVIDIA's wheels:$$want" && 	  $(BIN)/pip download -q --no-deps -d .cuda-libs/wheels $$want && 	  for w in .cuda-libs/wheels/*.whl; do $(BIN)/python -m zipfile -e $$w .cuda-libs/unpacked; done && 	  for kind in include lib bin; do for d in .cuda-libs/unpacked/nvidia/*/$$kind; do 	    [ -d "$$d" ] && cp -r "$$d/." ".cuda-libs/$$kind/"; done; done && 	  chmod +x .cuda-libs/bin/* 2>/dev/null; 	  for f in .cuda-libs/lib/lib*.so.*; do [ -e "$$f" ] && ln -sf $$(basename $$f) $${f%%.so.*}.so; done; 	  rm -rf .cuda-libs/wheels .cuda-libs/unpacked; 	fi
	touch $@
