# torchpair — the two commands: `make test` and `make demo`.
# Each creates .venv on first use, installs the pinned torch and every dependency, builds the
# native library (scikit-build-core + Ninja, incremental), and runs. `make build` does just the
# set-up.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
TORCH_PIN := torch==2.13.0
DEPS_STAMP := $(VENV)/.deps-stamp
PYTEST_ARGS ?=

.PHONY: all build deps test demo bench clean distclean

all: build

$(PY):
	$(PYTHON) -m venv $(VENV)

$(DEPS_STAMP): requirements-dev.txt | $(PY)
	$(PIP) install -q $(TORCH_PIN)
	$(PIP) install -q -r requirements-dev.txt
	@touch $@

deps: $(DEPS_STAMP)

# Incremental: the CMake build directory (build/<wheel tag>) persists between runs.
build: $(DEPS_STAMP)
	$(PIP) install -q --no-build-isolation --no-deps -e .

test: build
	$(PY) -m pytest -q $(PYTEST_ARGS) tests

demo: build
	$(PY) -m torchpair demo

bench: build
	$(PY) -m torchpair bench --out build/bench-report

clean:
	rm -rf build

distclean: clean
	rm -rf $(VENV)
