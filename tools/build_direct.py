"""Build libtorchpair.so with the C++ compiler alone (no CMake, no scikit-build-core), against
whatever torch `python3` imports, and lay it out in the source tree as the wheel would
(torchpair/lib/libtorchpair.so, torchpair/_build_config.py, torchpair/include/torchpair,
torchpair/lib/cmake/torchpair), so `import torchpair` from the repo root loads it.

The fallback of tools/cuda_check.sh: a CUDA build of torch makes CMake's find_package(Torch)
need a full CUDA toolkit (torch's public/cuda.cmake enables the CUDA language), although
torchpair compiles no CUDA code (its CUDA kernels are ATen compositions registered for the
CUDA dispatch key). The flags mirror CMakeLists.txt (Release, one copy of each ISA source
per CPU capability); the source lists are read from CMakeLists.txt.

    python3 tools/build_direct.py [-j 16]                # build and lay out in ./torchpair
    python3 tools/build_direct.py --torch-dir DIR --syntax-only   # compile-check against other headers
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# CMake's precompiled headers are force-included into every unit (target_precompile_headers);
# some units rely on them (e.g. at::get_num_threads without <ATen/Parallel.h>), so do the same.
PCH = ["ATen/ATen.h", "ATen/Parallel.h", "torch/library.h", "vector", "string"]
ISA_PCH = ["ATen/ATen.h", "ATen/cpu/vec/vec.h", "ATen/cpu/vec/functional.h"]
ISA_FLAGS = {
    "DEFAULT": [],
    "AVX2": ["-mavx2", "-mfma", "-mf16c", "-mbmi2", "-mpopcnt"],
    "AVX512": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma", "-mf16c", "-mbmi2",
               "-mpopcnt"],
}


def cmake_list(name: str) -> list[str]:
    text = (ROOT / "CMakeLists.txt").read_text()
    m = re.search(r"set\(" + name + r"\n(.*?)\n\)", text, re.S)
    if not m:
        sys.exit(f"build_direct: {name} not found in CMakeLists.txt")
    return [line.split("#")[0].strip() for line in m.group(1).splitlines() if line.split("#")[0].strip()]


def torch_info(torch_dir: str | None):
    if torch_dir:  # headers and libraries of another torch (not importable here)
        tdir = Path(torch_dir)
        version = re.search(r"__version__ = '([^']+)'", (tdir / "version.py").read_text()).group(1)
        return tdir, version, 1
    import torch
    return Path(torch.__file__).parent, torch.__version__, int(torch._C._GLIBCXX_USE_CXX11_ABI)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--torch-dir", help="a torch package directory to build against instead of `import torch`")
    ap.add_argument("--build-dir", default=str(ROOT / "build" / "direct"))
    ap.add_argument("--out", default=str(ROOT / "torchpair"), help="the package directory to lay the build out in")
    ap.add_argument("--syntax-only", action="store_true", help="compile-check only (-fsyntax-only), no link")
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    args = ap.parse_args()

    tdir, version, abi = torch_info(args.torch_dir)
    print(f"build_direct: torch {version} at {tdir} (C++11 ABI {abi}), {args.jobs} jobs", flush=True)
    build = Path(args.build_dir)
    build.mkdir(parents=True, exist_ok=True)
    common = ["-O3", "-DNDEBUG", "-std=gnu++17", "-fPIC", "-fopenmp", "-Wall", "-Wno-unused-function",
              f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-DUSE_C10D_GLOO", "-DUSE_DISTRIBUTED", "-DUSE_RPC",
              "-DUSE_TENSORPIPE", "-Dtorchpair_EXPORTS", f"-I{ROOT / 'include'}", f"-I{ROOT / 'csrc'}",
              "-isystem", str(tdir / "include"), "-isystem", str(tdir / "include" / "torch" / "csrc" / "api" / "include")]

    jobs = []  # (source, object, extra flags)
    for src in cmake_list("TORCHPAIR_SOURCES"):
        jobs.append((ROOT / src, build / (src.replace("/", "_") + ".o"), [f for h in PCH for f in ("-include", h)]))
    for isa, flags in ISA_FLAGS.items():
        for src in cmake_list("TORCHPAIR_ISA_SOURCES"):
            extra = flags + [f"-DCPU_CAPABILITY={isa}", f"-DCPU_CAPABILITY_{isa}", f"-DTORCHPAIR_ISA_{isa}"]
            if not src.endswith("popcount_cpu.cpp"):  # SKIP_PRECOMPILE_HEADERS in CMakeLists.txt
                extra += [f for h in ISA_PCH for f in ("-include", h)]
            elif isa == "AVX512":
                extra.append("-mavx512vpopcntdq")
            jobs.append((ROOT / src, build / f"{Path(src).stem}.{isa}.o", extra))

    def compile_one(job):
        src, obj, extra = job
        cmd = [args.cxx, *common, *extra, "-c", str(src)]
        cmd += ["-fsyntax-only"] if args.syntax_only else ["-o", str(obj)]
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        return src, obj, extra, r, time.time() - t0

    t0 = time.time()
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for src, obj, extra, r, dt in pool.map(compile_one, jobs):
            tag = next((f for f in extra if f.startswith("-DCPU_CAPABILITY=")), "")
            print(f"  {'ok  ' if r.returncode == 0 else 'FAIL'} {dt:5.1f}s {src.relative_to(ROOT)} {tag}", flush=True)
            if r.returncode != 0:
                failed += 1
                print(r.stderr[-6000:], flush=True)
    print(f"build_direct: compiled {len(jobs)} units in {time.time() - t0:.0f}s, {failed} failed", flush=True)
    if failed:
        return 1
    if args.syntax_only:
        return 0

    lib = build / "libtorchpair.so"
    link = [args.cxx, "-shared", "-fopenmp", "-o", str(lib), *[str(o) for _, o, _ in jobs],
            f"-L{tdir / 'lib'}", f"-Wl,-rpath,{tdir / 'lib'}", "-Wl,--no-as-needed", "-ltorch_cpu", "-ltorch",
            "-lc10", "-Wl,--as-needed"]
    r = subprocess.run(link, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr[-6000:])
        return 1

    out = Path(args.out)
    (out / "lib" / "cmake" / "torchpair").mkdir(parents=True, exist_ok=True)
    shutil.copy2(lib, out / "lib" / "libtorchpair.so")
    shutil.copytree(ROOT / "include" / "torchpair", out / "include" / "torchpair", dirs_exist_ok=True)
    (out / "lib" / "cmake" / "torchpair" / "README").write_text(
        "tools/build_direct.py builds no CMake package; use `pip install -e .` for find_package(torchpair).\n")
    (out / "_build_config.py").write_text(
        "# Written by tools/build_direct.py: what libtorchpair.so was built against.\n"
        f'TORCH_VERSION = "{version.split("+")[0]}"\nBUILD_TYPE = "Release"\nCXX_COMPILER = "{args.cxx}"\n'
        "SANITIZE = False\n")
    print(f"build_direct: {out / 'lib' / 'libtorchpair.so'} in {time.time() - t0:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
