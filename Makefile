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

.PHONY: all build deps test demo bench fuzz sanitize clean distclean

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

# A long property-based run (the bounded one is part of `make test`).
FUZZ_EXAMPLES ?= 3000
fuzz: build
	TORCHPAIR_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q tests/test_fuzz.py

# The native library built with AddressSanitizer + UndefinedBehaviorSanitizer (build/sanitize),
# loaded in place of the regular one (TORCHPAIR_LIBRARY), under the test suite minus the
# compile/export tests (Inductor's generated code is not ours) and the subprocess checks.
SAN_BUILD := build/sanitize
SANITIZE_TESTS ?= tests --ignore=tests/test_compile_export.py --ignore=tests/test_cli.py -m "not slow"
sanitize: build
	$(VENV)/bin/cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_MAKE_PROGRAM=$(abspath $(VENV)/bin/ninja) \
	  -DTORCHPAIR_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE=$(abspath $(PY))
	$(VENV)/bin/cmake --build $(SAN_BUILD)
	LD_PRELOAD="$$(g++ -print-file-name=libasan.so) $$(g++ -print-file-name=libubsan.so)" \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  TORCHPAIR_LIBRARY=$(abspath $(SAN_BUILD))/libtorchpair.so $(PY) -m pytest -q -x $(SANITIZE_TESTS)

clean:
	rm -rf build

distclean: clean
	rm -rf $(VENV)

# Every lazy consumer x every KeOps-translatable metric case, float32 and float64, values and
# gradients, under tp.backend("keops") against the native engine (issue 6; `make test` runs a
# subset). pykeops compiles each new formula once (cached in build/keops): hours when cold on 2 cores.
.PHONY: test-keops-full
test-keops-full: build
	TORCHPAIR_KEOPS_FULL=1 $(PY) -m pytest -q $(PYTEST_ARGS) tests/test_keops_backend.py
