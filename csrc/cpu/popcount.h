#pragma once
// The popcount engine of the bit-packed Boolean family (cpu/boolean_sources.h): TT counts,
// TT(r, c) = sum_w popcount(x_r[w] & y_c[w]), over rows bit-packed into uint64 words.
//
// Layout. Rows are row-major [rows][W] words. Columns are packed once per call into panels of
// kPopPanel columns, [panel][W][kPopPanel] (zero padded), so that word w of 16 consecutive
// columns is one contiguous 128-byte run: a SIMD popcount path loads 8 (AVX512) or 4 (AVX2)
// columns' word w as one vector, ANDs it with a row's word broadcast, and accumulates the
// popcounts lane-wise — one column per lane, no horizontal reductions.
//
// Paths (one generic register tile in cpu/popcount_cpu.cpp, compiled per CPU
// capability; only the popcount primitive differs):
//   "avx512" : AVX512-VPOPCNTDQ, 8 words per instruction (the AVX512 copy, built with
//              -mavx512vpopcntdq, used only where the CPU has it);
//   "avx2"   : AVX2 nibble-LUT popcount (vpshufb), byte counters flushed with vpsadbw;
//   "scalar" : one word per popcount (the DEFAULT copy, portable C++).
// The best path the CPU (and ATEN_CPU_CAPABILITY) allows is used; the environment variable
// TORCHPAIR_POPCOUNT=scalar|avx2|avx512 asks for a lesser one (read whenever a Boolean
// operator is set up, so tests can compare the paths in one process).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tp::cpu {

constexpr int64_t kPopPanel = 16;  // columns per packed panel

// out[i * ldo + j] = T(TT(row i, column j)) for i < nr, j < nc: rows [nr][W], panels the
// packed panels holding columns 0..nc-1 (column j in panel j / 16, lane j % 16). Writes
// exactly those entries.
template <typename T>
using PopcountKernel = void (*)(const uint64_t* rows, int64_t nr, int64_t W, const uint64_t* panels, int64_t nc,
                                T* out, int64_t ldo);

#define TP_DECLARE_CPU_POPCOUNT(ns)                                                                        \
  namespace ns {                                                                                           \
  void popcount_tt(const uint64_t* rows, int64_t nr, int64_t W, const uint64_t* panels, int64_t nc, float* out, \
                   int64_t ldo);                                                                           \
  void popcount_tt(const uint64_t* rows, int64_t nr, int64_t W, const uint64_t* panels, int64_t nc,         \
                   double* out, int64_t ldo);                                                              \
  }

TP_DECLARE_CPU_POPCOUNT(isa_DEFAULT)
TP_DECLARE_CPU_POPCOUNT(isa_AVX2)
TP_DECLARE_CPU_POPCOUNT(isa_AVX512)

// The kernel of the path chosen now (cpu/dispatch.cpp).
template <typename T>
PopcountKernel<T> popcount_kernel();
// Its name ("avx512", "avx2" or "scalar"), and the names of every path this machine can run.
std::string popcount_path_name();
std::vector<std::string> popcount_paths();

// dst[(c / 16) * W * 16 + w * 16 + c % 16] = src[c * W + w]; dst holds ceil(cols / 16)
// panels, the padding columns zero. Panels [p0, p1) only.
inline void pack_panels(const uint64_t* src, int64_t cols, int64_t W, uint64_t* dst, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    uint64_t* panel = dst + p * W * kPopPanel;
    const int64_t c0 = p * kPopPanel, nc = std::min<int64_t>(kPopPanel, cols - c0);
    for (int64_t w = 0; w < W; ++w) {
      uint64_t* o = panel + w * kPopPanel;
      int64_t j = 0;
      for (; j < nc; ++j) o[j] = src[(c0 + j) * W + w];
      for (; j < kPopPanel; ++j) o[j] = 0;
    }
  }
}

}  // namespace tp::cpu
