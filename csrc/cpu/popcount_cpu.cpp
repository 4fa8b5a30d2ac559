// The popcount engine's register tile (cpu/popcount.h), compiled once per CPU capability: one
// generic register-blocked kernel over a popcount primitive P; only P differs per ISA.
//
// A primitive P says how to load kLanes columns' word w (a "column vector"), broadcast a
// row's word, and accumulate popcount(x & y) lane-wise:
//   Acc                 a vector of kLanes int64 counts (one per column)
//   kRows, kVecs        the register block: kRows rows x kVecs column vectors
//   kChunk              0: accumulate() adds straight into Acc; > 0: accumulate() adds into
//                       narrow counters (Inner) that flush() folds into Acc every kChunk words
//   store(acc, T*, n)   the first n lanes' counts as T
#include <algorithm>
#include <cstring>

#if defined(CPU_CAPABILITY_AVX2) || defined(CPU_CAPABILITY_AVX512)
#include <immintrin.h>
#endif

// No ATen headers here: the AVX512 copy is built with -mavx512vpopcntdq, and an inline
// function it emitted could be picked by the linker for the other copies too.
#include "cpu/popcount.h"

#define TP_POP_CAT_(a, b) a##b
#define TP_POP_CAT(a, b) TP_POP_CAT_(a, b)

namespace tp::cpu {
inline namespace CPU_CAPABILITY {
namespace {

#if defined(CPU_CAPABILITY_AVX512)
// AVX512-VPOPCNTDQ: 8 columns per vector, popcount of 8 words per instruction. This copy is
// built with -mavx512vpopcntdq and only called where the CPU has it (cpu/dispatch.cpp).
struct Pop {
  using Acc = __m512i;
  using Inner = __m512i;
  static constexpr int kLanes = 8, kRows = 8, kVecs = 2;
  static constexpr int64_t kChunk = 0;
  static Acc zero() { return _mm512_setzero_si512(); }
  static __m512i load(const uint64_t* p) { return _mm512_loadu_si512(p); }
  static __m512i broadcast(const uint64_t* p) { return _mm512_set1_epi64(static_cast<long long>(*p)); }
  static Acc accumulate(Acc a, __m512i x, __m512i y) {
    return _mm512_add_epi64(a, _mm512_popcnt_epi64(_mm512_and_si512(x, y)));
  }
  static Acc flush(Acc a, Inner) { return a; }
  static void store(Acc a, float* out, int64_t n) {
    _mm256_mask_storeu_ps(out, __mmask8((1u << n) - 1), _mm512_cvtepi64_ps(a));
  }
  static void store(Acc a, double* out, int64_t n) {
    _mm512_mask_storeu_pd(out, __mmask8((1u << n) - 1), _mm512_cvtepi64_pd(a));
  }
};
#elif defined(CPU_CAPABILITY_AVX2)
// AVX2: 4 columns per vector; popcount by nibble look-up (vpshufb) into byte counters, which
// hold up to 31 words (31 x 8 < 256) before vpsadbw folds them into 64-bit lanes.
struct Pop {
  using Acc = __m256i;
  using Inner = __m256i;
  static constexpr int kLanes = 4, kRows = 4, kVecs = 1;
  static constexpr int64_t kChunk = 31;
  static Acc zero() { return _mm256_setzero_si256(); }
  static __m256i load(const uint64_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static __m256i broadcast(const uint64_t* p) { return _mm256_set1_epi64x(static_cast<long long>(*p)); }
  static Inner accumulate(Inner a, __m256i x, __m256i y) {
    const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,  //
                                         0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i low = _mm256_set1_epi8(0x0f);
    const __m256i v = _mm256_and_si256(x, y);
    const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, low));
    const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
    return _mm256_add_epi8(a, _mm256_add_epi8(lo, hi));
  }
  static Acc flush(Acc a, Inner in) { return _mm256_add_epi64(a, _mm256_sad_epu8(in, _mm256_setzero_si256())); }
  template <typename T>
  static void store(Acc a, T* out, int64_t n) {
    alignas(32) int64_t tmp[kLanes];
    _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), a);
    for (int64_t j = 0; j < n; ++j) out[j] = T(tmp[j]);
  }
};
#else
// Portable: one word per popcount.
struct Pop {
  using Acc = int64_t;
  using Inner = int64_t;
  static constexpr int kLanes = 1, kRows = 4, kVecs = 2;
  static constexpr int64_t kChunk = 0;
  static Acc zero() { return 0; }
  static uint64_t load(const uint64_t* p) { return *p; }
  static uint64_t broadcast(const uint64_t* p) { return *p; }
  static Acc accumulate(Acc a, uint64_t x, uint64_t y) { return a + int64_t(__builtin_popcountll(x & y)); }
  static Acc flush(Acc a, Inner) { return a; }
  template <typename T>
  static void store(Acc a, T* out, int64_t n) {
    if (n > 0) out[0] = T(a);
  }
};
#endif

constexpr int kGroup = Pop::kLanes * Pop::kVecs;  // columns per register block
static_assert(kPopPanel % kGroup == 0, "a register block must not straddle panels");

// TT of R rows x (at most) kGroup columns: word w of the block's columns is at col[w * 16].
template <int R, typename T>
inline void block(const uint64_t* rows, int64_t W, const uint64_t* col, int64_t nc, T* out, int64_t ldo) {
  using Acc = typename Pop::Acc;
  Acc acc[R][Pop::kVecs];
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < Pop::kVecs; ++v) acc[i][v] = Pop::zero();
  if constexpr (Pop::kChunk == 0) {
    for (int64_t w = 0; w < W; ++w) {
      const uint64_t* cw = col + w * kPopPanel;
      decltype(Pop::load(cw)) y[Pop::kVecs];
      for (int v = 0; v < Pop::kVecs; ++v) y[v] = Pop::load(cw + v * Pop::kLanes);
      for (int i = 0; i < R; ++i) {
        const auto x = Pop::broadcast(rows + i * W + w);
        for (int v = 0; v < Pop::kVecs; ++v) acc[i][v] = Pop::accumulate(acc[i][v], x, y[v]);
      }
    }
  } else {
    for (int64_t w0 = 0; w0 < W; w0 += Pop::kChunk) {
      const int64_t w1 = std::min<int64_t>(W, w0 + Pop::kChunk);
      typename Pop::Inner in[R][Pop::kVecs];
      for (int i = 0; i < R; ++i)
        for (int v = 0; v < Pop::kVecs; ++v) in[i][v] = Pop::zero();
      for (int64_t w = w0; w < w1; ++w) {
        const uint64_t* cw = col + w * kPopPanel;
        decltype(Pop::load(cw)) y[Pop::kVecs];
        for (int v = 0; v < Pop::kVecs; ++v) y[v] = Pop::load(cw + v * Pop::kLanes);
        for (int i = 0; i < R; ++i) {
          const auto x = Pop::broadcast(rows + i * W + w);
          for (int v = 0; v < Pop::kVecs; ++v) in[i][v] = Pop::accumulate(in[i][v], x, y[v]);
        }
      }
      for (int i = 0; i < R; ++i)
        for (int v = 0; v < Pop::kVecs; ++v) acc[i][v] = Pop::flush(acc[i][v], in[i][v]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < Pop::kVecs; ++v) {
      const int64_t n = std::min<int64_t>(Pop::kLanes, nc - v * Pop::kLanes);
      if (n > 0) Pop::store(acc[i][v], out + i * ldo + v * Pop::kLanes, n);
    }
}

// Panel by panel (it stays in L1 while the rows sweep it), register block by register block.
template <typename T>
void tt(const uint64_t* rows, int64_t nr, int64_t W, const uint64_t* panels, int64_t nc, T* out, int64_t ldo) {
  for (int64_t c0 = 0; c0 < nc; c0 += kPopPanel) {
    const uint64_t* panel = panels + (c0 / kPopPanel) * W * kPopPanel;
    for (int64_t g = 0; g < kPopPanel && c0 + g < nc; g += kGroup) {
      const int64_t n = std::min<int64_t>(kGroup, nc - c0 - g);
      int64_t r = 0;
      for (; r + Pop::kRows <= nr; r += Pop::kRows)
        block<Pop::kRows>(rows + r * W, W, panel + g, n, out + r * ldo + c0 + g, ldo);
      for (; r < nr; ++r) block<1>(rows + r * W, W, panel + g, n, out + r * ldo + c0 + g, ldo);
    }
  }
}

}  // namespace
}  // namespace CPU_CAPABILITY

namespace TP_POP_CAT(isa_, CPU_CAPABILITY) {
void popcount_tt(const uint64_t* rows, int64_t nr, int64_t W, const uint64_t* panels, int64_t nc, float* out,
                 int64_t ldo) {
  tt<float>(rows, nr, W, panels, nc, out, ldo);
}
void popcount_tt(const uint64_t* rows, int64_t nr, int64_t W, const uint64_t* panels, int64_t nc, double* out,
                 int64_t ldo) {
  tt<double>(rows, nr, W, panels, nc, out, ldo);
}
}  // namespace isa_<capability>
}  // namespace tp::cpu
