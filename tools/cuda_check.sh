#!/usr/bin/env bash
# One-shot CUDA check of torchpair on a GPU machine without internet access, run from the
# repository root:
#
#     bash tools/cuda_check.sh
#
# 1. prints the machine (nvidia-smi -L, torch version and CUDA availability, tools, which
#    optional Python packages exist);
# 2. builds libtorchpair.so against the machine's own torch (whatever release it is: the
#    build warns when it is not the pinned 2.13.0, and _build_config.py records the release
#    it was built against, so `import torchpair` accepts it), laid out in ./torchpair:
#      BUILD=cmake  (default) CMake + Ninja directly, like `make build` minus pip. torch's CUDA
#                   CMake config needs the CUDA toolkit (nvcc); if configuring fails, it falls
#                   back to BUILD=direct;
#      BUILD=direct tools/build_direct.py: the C++ compiler alone, no CMake, no CUDA toolkit;
#      BUILD=pip    pip install --no-build-isolation --no-deps -e . (scikit-build-core; the
#                   build requirement torch==2.13.0 is not enforced without build isolation);
# 3. runs tests/test_cuda.py (and test_transport.py's CUDA test where POT is installed: that
#    module imports `ot` at the top), tests/test_host_device.py (the metric definitions
#    compiled by nvcc as device code, and their scalar path on the host), then a short
#    CUDA-vs-CPU sanity check and timing.
#
# Everything is printed and, where $OUT is set, also written to $OUT/cuda_log.txt (plus the
# compiler's output $OUT/cuda_build_log.txt and the pytest JUnit report $OUT/cuda_junit.xml);
# without $OUT, to build/.
# Knobs: JOBS (default nproc), PYTHON (default python3), BUILD, PYTEST_K (a -k expression,
# e.g. PYTEST_K="not compile"). Exit status: non-zero if the build or any test failed.
set -u -o pipefail
cd "$(dirname "$0")/.."

if [ -n "${OUT:-}" ]; then LOGDIR=$OUT; else LOGDIR=build; fi
mkdir -p "$LOGDIR"
LOG=$LOGDIR/cuda_log.txt
exec > >(tee -a "$LOG") 2>&1
TEE_PID=$!
finish() {  # the last lines reach the log before the script ends
  section "done: $1"
  exec 1>&- 2>&-
  wait "$TEE_PID" 2>/dev/null
  exit "$2"
}
export PYTHONUNBUFFERED=1
export CUBLAS_WORKSPACE_CONFIG=${CUBLAS_WORKSPACE_CONFIG:-:4096:8}  # deterministic-mode tests
PY=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc)}
BUILD=${BUILD:-cmake}
STATUS=0
section() { echo; echo "=== $* ($(date +%T), ${SECONDS}s elapsed) ==="; }

section "machine"
nvidia-smi -L || echo "nvidia-smi -L failed"
$PY -c 'import torch; print(torch.__version__, torch.cuda.is_available())'
$PY -c 'import sys, torch; print("python", sys.version.split()[0], sys.executable); print("torch cuda", torch.version.cuda, "cxx11abi", torch._C._GLIBCXX_USE_CXX11_ABI); print("device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)'
$PY - <<'EOF'
import importlib
for name in ["numpy", "scipy", "sklearn", "pytest", "scikit_build_core", "cmake", "ninja", "ot", "rapidfuzz", "pykeops",
             "hypothesis"]:
    try:
        m = importlib.import_module(name)
        print(f"  {name:18s} {getattr(m, '__version__', 'present')}")
    except Exception as e:  # noqa: BLE001
        print(f"  {name:18s} MISSING ({type(e).__name__})")
EOF
# the pip packages cmake and ninja put their binaries next to the interpreter or in their own dirs
PYBIN=$($PY -c 'import os, sys; print(os.path.dirname(sys.executable))')
EXTRA=$($PY -c 'import cmake; print(cmake.CMAKE_BIN_DIR)' 2>/dev/null || true)
EXTRA2=$($PY -c 'import ninja, os; print(getattr(ninja, "BIN_DIR", ""))' 2>/dev/null || true)
export PATH="$PATH:$PYBIN${EXTRA:+:$EXTRA}${EXTRA2:+:$EXTRA2}"
for t in cmake ninja g++ nvcc; do printf '  %-6s %s\n' "$t" "$(command -v $t || echo MISSING)"; done
cmake --version 2>/dev/null | head -1; g++ --version 2>/dev/null | head -1; nvcc --version 2>/dev/null | tail -2
echo "cores: $(nproc), jobs: $JOBS, build: $BUILD"

section "build ($BUILD)"
rm -rf torchpair/lib torchpair/_build_config.py  # never a stale library
build_direct() { timeout 480 $PY tools/build_direct.py -j "$JOBS"; }
build_pip() { timeout 480 $PY -m pip install --no-build-isolation --no-deps --no-cache-dir -v -e .; }
build_cmake() {
  local torch_cmake cuda_root="" c n
  torch_cmake=$($PY -c 'import torch; print(torch.utils.cmake_prefix_path)')
  cuda_args=()
  # the CUDA toolkit root: a directory with bin/nvcc and include/cuda.h (an nvcc on PATH may be
  # a wrapper script elsewhere, so its own location is tried last)
  n=$(command -v nvcc || true)
  for c in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-* \
           "${n:+$(dirname "$(dirname "$(readlink -f "$n")")")}"; do
    if [ -n "$c" ] && [ -x "$c/bin/nvcc" ] && [ -f "$c/include/cuda.h" ]; then cuda_root=$c; break; fi
  done
  if [ -n "$cuda_root" ]; then
    echo "CUDA toolkit: $cuda_root"
    export CUDA_HOME=$cuda_root PATH="$cuda_root/bin:$PATH"
    cuda_args=(-DCMAKE_CUDA_COMPILER="$cuda_root/bin/nvcc" -DCUDA_TOOLKIT_ROOT_DIR="$cuda_root"
               -DCUDAToolkit_ROOT="$cuda_root")
  else
    echo "no CUDA toolkit found: torch's CUDA CMake config will likely refuse (then BUILD=direct)"
  fi
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}  # skips torch's GPU arch detection
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  # SKBUILD=ON: the wheel's layout (torchpair/lib, torchpair/_build_config.py) on install
  if ! timeout 180 cmake -S . -B build/cuda "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DSKBUILD=ON \
      -DTorch_DIR="$torch_cmake/Torch" -DPython3_EXECUTABLE="$(command -v $PY)" "${cuda_args[@]}"; then
    echo "cmake configure FAILED: falling back to tools/build_direct.py"
    build_direct
    return $?
  fi
  timeout 420 cmake --build build/cuda -j "$JOBS" && cmake --install build/cuda --prefix . >/dev/null
}
# the compiler's output (hundreds of -Wmaybe-uninitialized warnings from ATen's vector headers)
# goes to its own file; the main log gets the outline, and the errors if it fails
BLOG=$LOGDIR/cuda_build_log.txt
case "$BUILD" in
  direct) build_direct ;;
  pip) build_pip ;;
  *) build_cmake ;;
esac > "$BLOG" 2>&1
rc=$?
grep -E "CUDA toolkit|no CUDA toolkit|Found Torch|pinned to|configure FAILED|build_direct:|Build files|FAILED|error:|Error" "$BLOG" | head -60
echo "build rc=$rc after ${SECONDS}s; full build output: $BLOG"
if [ $rc -ne 0 ]; then
  echo "--- last lines of the build output ---"; tail -60 "$BLOG"
  finish "build failed" 1
fi
$PY -c 'import torchpair as tp; from torchpair import _build_config as b; print("loaded", tp.library_path, "| built against torch", b.TORCH_VERSION, b.BUILD_TYPE, b.CXX_COMPILER)' \
  || { echo "IMPORT FAILED"; finish "import failed" 1; }

section "tests"
TESTS=(tests/test_cuda.py)
if $PY -c 'import ot' 2>/dev/null; then TESTS+=(tests/test_transport.py); else
  echo "POT (ot) missing: tests/test_transport.py left out (it imports ot at the top; test_cuda.py covers emd2 on CUDA)"; fi
KEXPR="cuda${PYTEST_K:+ and ($PYTEST_K)}"
timeout 300 $PY -m pytest -q -p no:cacheprovider -ra --durations=15 --junitxml="$LOGDIR/cuda_junit.xml" \
  -k "$KEXPR" "${TESTS[@]}" || STATUS=1

section "metric definitions as device code (nvcc -c tests/cuda/device_metrics_check.cu)"
# every definition's value and gradient in a __global__ kernel, float and double; skipped with
# the reason when no nvcc is found (CUDA_HOME, PATH, or the nvidia-cuda-nvcc wheel)
timeout 600 $PY -m pytest -q -p no:cacheprovider -rs tests/test_host_device.py || STATUS=1

section "CUDA vs CPU sanity (native CPU engines vs the device-generic ones on CUDA)"
timeout 60 $PY - <<'EOF' || STATUS=1
import time
import torch
import torchpair as tp

torch.manual_seed(0)
x, y, v = torch.randn(1500, 48, dtype=torch.float64), torch.randn(2500, 48, dtype=torch.float64), torch.randn(2500, 4, dtype=torch.float64)
xc, yc, vc = x.cuda(), y.cuda(), v.cuda()
worst = 0.0
for metric in ["euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine", "correlation", "canberra", "rbf",
               "laplacian", "polynomial", "matern", "braycurtis"]:
    a, b = tp.pairwise(x, y, metric), tp.pairwise(xc, yc, metric).cpu()
    err = ((a - b).abs() / (1 + a.abs())).max().item()
    k1, k2 = tp.lazy(x, y, metric) @ v, (tp.lazy(xc, yc, metric) @ vc).cpu()
    err2 = ((k1 - k2).abs() / (1 + k1.abs())).max().item()
    worst = max(worst, err, err2)
    print(f"  {metric:12s} dense max rel diff {err:.2e}   lazy @ V {err2:.2e}")
print("worst CUDA-vs-CPU float64 difference:", f"{worst:.2e}")
assert worst < 1e-8, worst
EOF

section "timing (informative; a failure here does not fail the check)"
timeout 60 $PY - <<'EOF' || echo "timing snippet failed or timed out (rc=$?)"
import time
import torch
import torchpair as tp


def timed(fn, reps=3):
    fn(); torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


for n, d in [(20_000, 3), (20_000, 64), (100_000, 3)]:
    X, Y, V = (torch.randn(n, d, device="cuda"), torch.randn(n, d, device="cuda"), torch.randn(n, 1, device="cuda"))
    torch.cuda.reset_peak_memory_stats()
    t = timed(lambda: tp.lazy(X, Y, "rbf", gamma=0.5) @ V)
    peak = torch.cuda.max_memory_allocated() / 2**30
    line = f"  lazy rbf K @ V, {n} x {n}, D={d}, float32: {t * 1e3:.1f} ms, peak {peak:.2f} GiB"
    if n <= 20_000:
        td = timed(lambda: torch.exp(-0.5 * torch.cdist(X, Y) ** 2) @ V)
        line += f"; dense torch {td * 1e3:.1f} ms"
    print(line)
t = timed(lambda: tp.knn(torch.randn(10_000, 32, device="cuda"), torch.randn(50_000, 32, device="cuda"), 10))
print(f"  knn k=10, 10k x 50k, D=32: {t * 1e3:.1f} ms")
EOF

finish "$([ $STATUS -eq 0 ] && echo ALL PASSED || echo FAILURES, see above)" $STATUS
