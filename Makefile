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

.PHONY: all build deps test demo bench fuzz device-check sanitize clean distclean

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

# The metric definitions compiled by nvcc as device code, and their scalar path on the host
# (tests/test_host_device.py), with nvcc from PyPI: ~100 MB to download, ~250 MB installed,
# so not in requirements-dev.txt (`make test` skips the nvcc part where no nvcc is found).
NVCC_PINS := nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96
device-check: build
	$(PIP) install -q $(NVCC_PINS)
	$(PY) -m pytest -q -rs tests/test_host_device.py

# A long property-based run (the bounded one is part of `make test`).
FUZZ_EXAMPLES ?= 3000
fuzz: build
	TORCHPAIR_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q tests/test_fuzz.py

# The native library built with AddressSanitizer + UndefinedBehaviorSanitizer (build/sanitize,
# RelWithDebInfo, every ISA variant instrumented), loaded in place of the regular one
# (TORCHPAIR_LIBRARY) with the ASan/UBSan runtimes preloaded into Python. Any report aborts
# the process, so `make sanitize` exits non-zero on a finding (UBSan: -fno-sanitize-recover).
# It runs the test suite minus (docs/contracts.md, "Sanitizers"):
#  - test_compile_export, test_cli, test_keops_backend: they compile and run generated C++
#    (Inductor, AOTInductor, KeOps) in subprocesses; that code is not ours;
#  - test_cpp*, test_deployment: C++ programs and wheels linked against the installed,
#    uninstrumented library (they never load build/sanitize);
#  - test_distributed: multi-process (gloo) runs of the same kernels the rest covers;
#  - tests marked slow (the 2^31-pair scale sums and the RSS-bound subprocesses: minutes
#    natively, and ASan's shadow memory and quarantine defeat an RSS bound).
# SANITIZE_TESTS overrides the selection; SANITIZE_ISA=avx2 or default runs the narrower ISA
# variants instead of the best one the CPU has (ATEN_CPU_CAPABILITY).
SAN_BUILD := build/sanitize
SANITIZE_TESTS ?= tests --ignore=tests/test_compile_export.py --ignore=tests/test_cli.py \
  --ignore=tests/test_keops_backend.py --ignore=tests/test_cpp.py --ignore=tests/test_cpp_threads.py \
  --ignore=tests/test_deployment.py --ignore=tests/test_distributed.py -m "not slow"
SANITIZE_ISA ?=
SAN_SUPP := $(abspath tests/sanitize)
sanitize: build
	$(VENV)/bin/cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_MAKE_PROGRAM=$(abspath $(VENV)/bin/ninja) \
	  -DTORCHPAIR_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE=$(abspath $(PY))
	$(VENV)/bin/cmake --build $(SAN_BUILD)
	LD_PRELOAD="$$(g++ -print-file-name=libasan.so) $$(g++ -print-file-name=libubsan.so)" \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:suppressions=$(SAN_SUPP)/asan.supp \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1:suppressions=$(SAN_SUPP)/ubsan.supp \
	  $(if $(SANITIZE_ISA),ATEN_CPU_CAPABILITY=$(SANITIZE_ISA)) \
	  TORCHPAIR_LIBRARY=$(abspath $(SAN_BUILD))/libtorchpair.so $(PY) -m pytest -q -x -p no:cacheprovider $(SANITIZE_TESTS)

clean:
	rm -rf build

distclean: clean
	rm -rf $(VENV)

# Every lazy consumer x every KeOps-translatable metric case, float32 and float64, values and
# gradients, under tp.backend("keops") against the native engine (`make test` runs a subset).
# pykeops compiles each new formula once (cached in build/keops); a cold cache means compiling
# several hundred formulas, one g++ run each (docs/backends.md, "Tests").
.PHONY: test-keops-full
test-keops-full: build
	TORCHPAIR_KEOPS_FULL=1 $(PY) -m pytest -q $(PYTEST_ARGS) tests/test_keops_backend.py
