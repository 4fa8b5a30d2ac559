#pragma once
// C = A B^T for pairwise shapes: many rows on both sides. Included by sources.h inside the
// inline namespace CPU_CAPABILITY, so each capability gets its own copy.
//
// Why our own product instead of BLAS: MKL chooses its kernels by CPU vendor and runs a
// generic, slower path on non-Intel CPUs, where this tile is faster. On Intel CPUs MKL's
// tuned kernels are faster for long rows (its deeper blocking of the feature axis), so
// there those products go to BLAS unless the caller fuses work into the tile (suits()). A
// is read in place (no packing): a register tile's
// rows of one feature block stay in L1. With up to kBlock features one pass over a packed
// panel is the whole product; longer rows are walked in feature blocks whose tiles add to
// what the earlier blocks stored.
//
// Layout: the column operand B [n x k] is packed once into panels of P columns, each panel
// [k][P] contiguous, vector-aligned and zero-padded past n: the register tile streams it. A
// register tile holds kRows x kVecs vectors of accumulators: 6 x 4 of the 32 AVX-512
// registers (24 accumulators, 4 panel vectors, one broadcast), 6 x 2 of AVX2's 16.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/vec.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "engines/output_memory.h"

namespace tp::cpu {
inline namespace CPU_CAPABILITY {

// Writes the kTransposeBlock x kTransposeBlock block of src (row stride lds) transposed to
// dst (row stride ldd), in registers: float through ATen's transpose_mxn (AVX2 and AVX512),
// double by unpacking pairs and permuting lanes (8 x 8 on AVX512, 4 x 4 on AVX2). 0: none in
// this build (DEFAULT), the packing stays scalar.
template <typename T>
struct BlockTranspose {
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
  static constexpr int64_t kTransposeBlock = std::is_same_v<T, float> ? 16 : at::vec::Vectorized<T>::size();
#else
  static constexpr int64_t kTransposeBlock = 0;
#endif
  static void run(const T* src, int64_t lds, T* dst, int64_t ldd) {
    if constexpr (std::is_same_v<T, float>) {
      at::vec::transpose_mxn<float, 16, 16>(src, lds, dst, ldd);
    } else {
#if defined(CPU_CAPABILITY_AVX512)
      __m512d r[8], t[8], s[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_pd(src + i * lds);
      // t[i]: the even features of rows i and i + 1 interleaved, t[i + 1]: the odd ones
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);
      }
      const __m512i lo2 = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), hi2 = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
      // s[h + j], j < 4: features j and j + 4 of rows h to h + 3
      for (int h = 0; h < 8; h += 4)
        for (int i = 0; i < 2; ++i) {
          s[h + i] = _mm512_permutex2var_pd(t[h + i], lo2, t[h + i + 2]);
          s[h + i + 2] = _mm512_permutex2var_pd(t[h + i], hi2, t[h + i + 2]);
        }
      const __m512i lo4 = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11), hi4 = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
      for (int j = 0; j < 4; ++j) {
        _mm512_storeu_pd(dst + j * ldd, _mm512_permutex2var_pd(s[j], lo4, s[j + 4]));
        _mm512_storeu_pd(dst + (j + 4) * ldd, _mm512_permutex2var_pd(s[j], hi4, s[j + 4]));
      }
#elif defined(CPU_CAPABILITY_AVX2)
      const __m256d r0 = _mm256_loadu_pd(src), r1 = _mm256_loadu_pd(src + lds);
      const __m256d r2 = _mm256_loadu_pd(src + 2 * lds), r3 = _mm256_loadu_pd(src + 3 * lds);
      const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
      const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
      _mm256_storeu_pd(dst, _mm256_permute2f128_pd(t0, t2, 0x20));
      _mm256_storeu_pd(dst + ldd, _mm256_permute2f128_pd(t1, t3, 0x20));
      _mm256_storeu_pd(dst + 2 * ldd, _mm256_permute2f128_pd(t0, t2, 0x31));
      _mm256_storeu_pd(dst + 3 * ldd, _mm256_permute2f128_pd(t1, t3, 0x31));
#endif
    }
  }
};

// Packs n rows of d contiguous features into panels of `width` columns, panel q at
// dst + q * d * width laid out [d][width] (column c's feature k at [k][c - q * width]).
// dst holds ceil(n / width) * d * width values; padding columns are left untouched.
template <typename T>
void pack_column_panels(const T* src, int64_t n, int64_t d, int64_t width, T* dst) {
  const int64_t panels = (n + width - 1) / width;
  auto pack = [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      T* panel = dst + q * d * width;
      const T* rows = src + q * width * d;
      const int64_t w = std::min(n - q * width, width);
      // 16 features (a cache line of a source row) at a time: each source line is read once
      // and whole, and the 16 panel rows being written stay in L1. (A feature at a time
      // reads the width rows at a stride of d values, which for a power-of-two d maps them
      // to a few cache sets that cannot hold them.)
      constexpr int64_t kb = 16;
      int64_t k0 = 0;
      for (; k0 + kb <= d; k0 += kb) {
        int64_t c = 0;
        // whole blocks transposed in registers: a vector store per block row, where the
        // scalar loop below stores each value on its own
        constexpr int64_t tb = BlockTranspose<T>::kTransposeBlock;
        if constexpr (tb > 0 && kb % tb == 0)
          for (; c + tb <= w; c += tb)
            for (int64_t kk = 0; kk < kb; kk += tb)
              BlockTranspose<T>::run(rows + c * d + k0 + kk, d, panel + (k0 + kk) * width + c, width);
        for (; c < w; ++c)
          for (int64_t kk = 0; kk < kb; ++kk) panel[(k0 + kk) * width + c] = rows[c * d + k0 + kk];
      }
      for (int64_t c = 0; c < w; ++c)
        for (int64_t kk = k0; kk < d; ++kk) panel[kk * width + c] = rows[c * d + kk];
    }
  };
  // A thread's share is at least ~2^15 values: a small operand (one batch element of many)
  // is not worth a parallel region, a long-featured one is (its copy is a share of the call).
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(1, d * width));
  if (panels <= grain) return pack(0, panels);
  at::parallel_for(0, panels, grain, pack);
}

// What a register tile does with its sums once the last feature block is in: StoreSums
// writes them to out. A finisher that filters (kFilters) first looks at them in registers:
// rows(acc, r, c) returns a bit per tile row whose sums it wants; without any, nothing is
// stored; else the tile is stored and take(rows, r, c, cols, out, ldo) gets the stored tile
// (r, c: its offset in the product, out: its first value).
struct StoreSums {
  static constexpr bool kFilters = false;
};

template <typename T>
class PanelGemm {
  using V = at::vec::Vectorized<T>;
  static constexpr int64_t L = V::size();
#if defined(CPU_CAPABILITY_AVX512)
  static constexpr int kVecs = 4;
#else
  static constexpr int kVecs = 2;
#endif
  static constexpr int kRows = 6;
  static constexpr int64_t P = kVecs * L;  // columns per panel

 public:
  // DEFAULT builds have no fused multiply-add vectors worth a kernel of their own: they keep
  // the BLAS path.
  static constexpr bool kAvailable =
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
      true;
#else
      false;
#endif
  // The feature axis is walked in blocks of this many features (1 KiB of a row): a block of
  // a panel (kBlock x P) stays in L2 and a register tile's rows (kRows x kBlock) in L1
  // whatever D is; the tiles of later blocks add to what the earlier ones stored.
  static constexpr int64_t kBlock = 1024 / int64_t(sizeof(T));
  // In a batch, below ~2M multiply-adds per source, packing (an allocation and a copy of the
  // operand per batch element) costs what the faster tile saves: batches of tiny matrices are
  // many times faster through MKL's small-matrix path. A single product packs once, and the
  // panel kernel was as fast or faster at every size measured down to 64 x 64 x 3, where a
  // BLAS call's set-up outweighs the product itself (docs/performance.md).
  // TORCHPAIR_PANEL_GEMM_MIN_WORK overrides the limit where it applies (the tests use 0 to
  // send every small shape through).
  static int64_t min_work() {
    static const int64_t value = [] {
      const char* env = std::getenv("TORCHPAIR_PANEL_GEMM_MIN_WORK");
      return env ? std::max<int64_t>(0, std::atoll(env)) : int64_t(1) << 21;
    }();
    return value;
  }
  // A packed copy of the whole column operand is at most this many bytes (256 MiB): a larger
  // one would be a second copy of an operand that large (and fault in fresh pages on every
  // call, past what engine::empty_output keeps). Past it, each tile packs its own column
  // block (fits()). TORCHPAIR_PANEL_GEMM_MAX_PACKED_BYTES overrides it (the tests use 0 to
  // send every shape through the per-tile packing).
  static int64_t max_packed_bytes() {
    static const int64_t value = [] {
      const char* env = std::getenv("TORCHPAIR_PANEL_GEMM_MAX_PACKED_BYTES");
      return env ? std::max<int64_t>(0, std::atoll(env)) : int64_t(256) << 20;
    }();
    return value;
  }

  // Where products of min_work() multiply-adds and more and at least kBlasFeatures features
  // go to BLAS (when the caller fuses nothing into the tile). kLargeResults: where BLAS is MKL
  // on an Intel CPU, except for results of at most kSmallSide rows and columns with rows of at
  // least kLongRows features. With fewer features, BLAS's per-call packing of short rows costs
  // what its kernel saves. A small result of long rows takes MKL's small-matrix path, which
  // reads the row-major column operand as dot products along the features, slower than this
  // kernel, which packs that operand once (float32; level in float64); with fewer features,
  // or more rows or columns, MKL is as fast or faster (docs/performance.md, "The plain
  // product"). TORCHPAIR_PANEL_GEMM=always keeps every product here on any CPU (the tests
  // use it to cover this kernel), =blas sends them all to BLAS on any CPU.
  enum class Blas { kNever, kLargeResults, kAlways };
  static Blas blas_route() {
    static const Blas value = [] {
      if (const char* env = std::getenv("TORCHPAIR_PANEL_GEMM")) {
        if (std::strcmp(env, "always") == 0) return Blas::kNever;
        if (std::strcmp(env, "blas") == 0) return Blas::kAlways;
      }
      bool intel = false;
#if defined(__x86_64__) || defined(__i386__)
      unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
      // the vendor string is ebx, edx, ecx: "Genu" "ineI" "ntel"
      if (__get_cpuid(0, &eax, &ebx, &ecx, &edx)) intel = ebx == 0x756e6547u && edx == 0x49656e69u && ecx == 0x6c65746eu;
#endif
      return intel && at::hasMKL() ? Blas::kLargeResults : Blas::kNever;
    }();
    return value;
  }

  static constexpr int64_t kBlasFeatures = 128;
  static constexpr int64_t kSmallSide = 128, kLongRows = 512;

  // A product of this shape is worth the panel kernel. Below min_work() only a single product
  // (any_size) is; past it, any product unless BLAS takes products of its shape here (above)
  // and the caller fuses nothing into the register tile (fuses: a selection's filter).
  static bool suits(int64_t rows, int64_t cols, int64_t k, bool any_size, bool fuses) {
    if (!kAvailable || k < 1) return false;
    if (rows * cols * k < min_work()) return any_size;
    if (fuses || k < kBlasFeatures) return true;
    switch (blas_route()) {
      case Blas::kNever: return true;
      case Blas::kLargeResults: return rows <= kSmallSide && cols <= kSmallSide && k >= kLongRows;
      case Blas::kAlways: return false;
    }
    return true;
  }
  // The column operand is packed once, whole (else per tile).
  static bool fits(int64_t cols, int64_t k) { return (cols + P) * k * int64_t(sizeof(T)) <= max_packed_bytes(); }

  PanelGemm() = default;
  // b: n rows of k contiguous features (row stride k).
  PanelGemm(const T* b, int64_t n, int64_t k) : n_(n), k_(k) {
    // The CPU allocator aligns to 64 bytes, so every panel row is vector-aligned.
    const auto dtype = at::TensorOptions().dtype(c10::CppTypeToScalarType<T>::value);
    packed_ = engine::empty_output({std::max<int64_t>(packed_size(n, k), 1)}, dtype);
    pack(b, n, k, packed_.data_ptr<T>());
  }

  bool empty() const { return !packed_.defined(); }

  // Values a packed copy of n columns of k features holds.
  static int64_t packed_size(int64_t n, int64_t k) { return (n + P - 1) / P * k * P; }

  // Packs n columns of k contiguous features (b, row stride k) into dst (packed_size(n, k)
  // values), zero-padding the last panel.
  static void pack(const T* b, int64_t n, int64_t k, T* dst) {
    const int64_t panels = (n + P - 1) / P;
    if (n % P != 0) std::fill(dst + (panels - 1) * k * P, dst + panels * k * P, T(0));  // padding columns
    pack_column_panels(b, n, k, P, dst);
  }

  // out[r * ldo + c] = a_(r0 + r) . b_(c0 + c) for r < nr, c < nc; a has row stride k and c0
  // is a multiple of P (tile sources hand out column blocks at multiples of their width).
  // Outside a parallel region the row blocks are spread over the intra-op threads.
  void run(const T* a, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* out, int64_t ldo) const {
    multiply(panels(c0, nc), k_, a, r0, nr, nc, out, ldo);
  }

  // The packed panels from column c0 on (c0 a multiple of P, as in run()).
  const T* panels(int64_t c0, int64_t nc) const {
    TORCH_INTERNAL_ASSERT(c0 % P == 0 && c0 + nc <= n_);
    return packed_.data_ptr<T>() + c0 / P * k_ * P;
  }

  // The same product against nc columns packed by pack() (panels: the first of them), each
  // register tile's sums finished by fin (StoreSums: written to out).
  template <class Finish = StoreSums>
  static void multiply(const T* panels, int64_t k, const T* a, int64_t r0, int64_t nr, int64_t nc, T* out,
                       int64_t ldo, const Finish& fin = {}) {
    const int64_t kc = std::min(k, kBlock);
    // Panels of a column block stay in L2 while every row block of a thread walks them.
    const int64_t block = std::max<int64_t>(1, (192 * 1024) / (kc * P * int64_t(sizeof(T)))) * P;
    const int64_t row_blocks = (nr + kRows - 1) / kRows;
    // A thread's share is at least ~2^20 multiply-adds (tens of microseconds): waking the
    // pool costs more than that saves for a small product.
    const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 20) / (kRows * std::max<int64_t>(nc, 1) * k));
    at::parallel_for(0, row_blocks, grain, [&](int64_t i0, int64_t i1) {
      for (int64_t cb = 0; cb < nc; cb += block) {
        const int64_t cb_end = std::min(nc, cb + block);
        for (int64_t k0 = 0; k0 < k; k0 += kc) {
          const int64_t kn = std::min(kc, k - k0);
          const bool last = k0 + kn == k;
          for (int64_t i = i0; i < i1; ++i) {
            const int64_t r = i * kRows;
            const int64_t rows = std::min<int64_t>(kRows, nr - r);
            const T* ar = a + (r0 + r) * k + k0;
            for (int64_t c = cb; c < cb_end; c += P) {
              const T* panel = panels + c / P * k * P + k0 * P;
              const Tile t{ar, panel, out + r * ldo + c, ldo, std::min<int64_t>(P, cb_end - c), k, kn, k0 > 0, r, c};
              tile(rows, t, fin, last);
            }
          }
        }
      }
    });
  }

 private:
  // One register tile's operands: a (rows x kn, row stride k) against panel (kn x P), cols
  // of its P columns real; its sums go to out (row stride ldo), added to what out holds when
  // add (a later feature block). r, c: the tile's offset in the product.
  struct Tile {
    const T* a;
    const T* panel;
    T* out;
    int64_t ldo, cols, k, kn;
    bool add;
    int64_t r, c;
  };

  template <class Finish>
  static void tile(int64_t rows, const Tile& t, const Finish& fin, bool last) {
    switch (rows) {
      case 6: return tile<6>(t, fin, last);
      case 5: return tile<5>(t, fin, last);
      case 4: return tile<4>(t, fin, last);
      case 3: return tile<3>(t, fin, last);
      case 2: return tile<2>(t, fin, last);
      default: return tile<1>(t, fin, last);
    }
  }

  // out (R x cols) = (add ? out : 0) + a (R x kn) . panel (kn x P); past the last feature
  // block (last), fin decides whether the sums are stored (StoreSums: always).
  template <int R, class Finish>
  static void tile(const Tile& t, const Finish& fin, bool last) {
    const T* a = t.a;
    const T* panel = t.panel;
    T* out = t.out;
    const int64_t ldo = t.ldo, cols = t.cols, k = t.k, kn = t.kn;
    const bool add = t.add;
    V acc[R][kVecs];
    alignas(64) T edge[R][P];  // the last panel of a row: only cols < P columns exist
    if (!add) {
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < kVecs; ++j) acc[r][j] = V(T(0));
    } else if (cols == P) {
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < kVecs; ++j) acc[r][j] = V::loadu(out + r * ldo + j * L);
    } else {
      for (int r = 0; r < R; ++r) {
        std::copy(out + r * ldo, out + r * ldo + cols, edge[r]);
        std::fill(edge[r] + cols, edge[r] + P, T(0));
      }
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < kVecs; ++j) acc[r][j] = V::loadu(&edge[r][j * L]);
    }
    for (int64_t p = 0; p < kn; ++p) {
      V b[kVecs];
#pragma GCC unroll 4
      for (int j = 0; j < kVecs; ++j) b[j] = V::loadu(panel + p * P + j * L);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const V ar(a[r * k + p]);
#pragma GCC unroll 4
        for (int j = 0; j < kVecs; ++j) acc[r][j] = at::vec::fmadd(ar, b[j], acc[r][j]);
      }
    }
    [[maybe_unused]] uint32_t wanted = (uint32_t(1) << R) - 1;
    if constexpr (Finish::kFilters) {
      // the last panel of a row (cols < P) has no side features past cols to filter with
      if (last && cols == P) {
        wanted = fin.template rows<R, kVecs>(acc, t.r, t.c);
        if (wanted == 0) return;
      }
    }
    // Constant indices only (every loop unrolled): a runtime index into acc, or branches
    // between the stores, make the compiler keep the accumulators in memory.
    if (cols == P) {
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < kVecs; ++j) acc[r][j].store(out + r * ldo + j * L);
    } else {
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < kVecs; ++j) acc[r][j].store(&edge[r][j * L]);
      for (int r = 0; r < R; ++r) std::copy(edge[r], edge[r] + cols, out + r * ldo);
    }
    if constexpr (Finish::kFilters) {
      if (last) fin.take(wanted, t.r, t.c, cols, out, ldo);
    }
  }

  int64_t n_ = 0, k_ = 0;
  at::Tensor packed_;
};

}  // namespace CPU_CAPABILITY
}  // namespace tp::cpu
