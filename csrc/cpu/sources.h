#pragma once
// CPU tile producers, compiled once per CPU capability (everything here lives in the
// inline namespace CPU_CAPABILITY, so the AVX512 and DEFAULT copies never mix).
//   ElementwiseSource   : vectorized over columns, register-blocked over rows; the column
//                         operand is packed once into [panel][d][P] so a tile reads one
//                         contiguous block.
//   InnerProductSource  : a GEMM per tile (PanelGemm for few features, else BLAS) plus a
//                         vectorized epilogue.
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/vec.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/panel_gemm.h"
#include "engines/gemm.h"
#include "engines/tile_source.h"
#include "metrics/adapters.h"
#include "metrics/elementwise.h"
#include "metrics/inner_product.h"
#include "metrics/kernels.h"
#include "metrics/distances.h"

namespace tp::cpu {
inline namespace CPU_CAPABILITY {

using engine::Operands;
using engine::Selection;
using engine::SourceSpec;
using engine::TileSource;
using metrics::Scalars;

template <typename T>
using Vec = at::vec::Vectorized<T>;

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Per-thread scratch buffers, grown on demand. Slots keep simultaneous users apart:
// consumers use 0-1 and 4-5, tile producers 2-3, a tile's packed column block 6.
template <typename T>
T* scratch(int slot, int64_t size) {
  thread_local std::vector<T> buffers[7];
  auto& b = buffers[slot];
  if (int64_t(b.size()) < size) b.resize(size);
  return b.data();
}

// n vectors of per-thread scratch, aligned for Vectorized<T>.
template <typename T>
Vec<T>* aligned_vectors_impl(int slot, int64_t n) {
  constexpr int64_t L = Vec<T>::size();
  T* raw = scratch<T>(slot, (n + 1) * L);
  return reinterpret_cast<Vec<T>*>(round_up(reinterpret_cast<uintptr_t>(raw), alignof(Vec<T>)));
}

template <typename T>
inline Vec<T> lane_mask(int64_t count) {
  return Vec<T>::arange(T(0), T(1)) < Vec<T>(static_cast<T>(count));
}

template <typename T>
inline T hsum(const Vec<T>& v) {
  alignas(64) T tmp[Vec<T>::size()];
  v.store(tmp);
  T s = 0;
  for (int64_t i = 0; i < Vec<T>::size(); ++i) s += tmp[i];
  return s;
}

// ------------------------------------------------------------------------------------
// The column operand is packed in chunks of W = CB * L columns, each chunk [d][W]
// contiguous: the register tile streams one chunk per register block (the packed-B layout of
// a GEMM), so consecutive features are adjacent in memory and never fight over L1 sets.
template <typename T, typename M>
class ElementwiseSource final : public TileSource<T> {
  using V = Vec<T>;
  static constexpr int64_t L = V::size();
  static constexpr int CB = M::kAcc == 1 ? 2 : 1;  // column vectors per register block
  static constexpr int64_t W = CB * L;             // columns per packed chunk
  static constexpr int RB = 4;                     // rows per register block
  static constexpr int kCtxSize = M::kCtx > 0 ? M::kCtx : 1;

 public:
  ElementwiseSource(const SourceSpec& spec, const Operands& ops)
      : scalars_(spec.scalars), transposed_(spec.transposed) {
    s_ = Scalars{scalars_.data(), int64_t(scalars_.size())};
    this->rows_ = transposed_ ? ops.m : ops.n;
    this->cols_ = transposed_ ? ops.n : ops.m;
    this->dim_ = ops.d;
    rowp_ = Operands::as<T>(transposed_ ? ops.y : ops.x);
    const T* colp = Operands::as<T>(transposed_ ? ops.x : ops.y);
    const int64_t d = ops.d;
    // Tile width: a tile's packed columns (d x width) stay within ~256 KiB of L2.
    int64_t width = (256 * 1024) / std::max<int64_t>(1, d * int64_t(sizeof(T)));
    this->col_block_ = std::clamp<int64_t>(width / W * W, W, 512);
    this->row_block_ = 64;
    const int64_t cols = this->cols_;
    const int64_t chunks = (cols + W - 1) / W;
    packed_.assign(size_t(chunks * std::max<int64_t>(d, 1) * W), T(0));
    pack_column_panels(colp, cols, d, W, packed_.data());
  }

  bool writes_exact_columns() const override { return true; }

  void produce(int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* out, int64_t ldo) const override {
    if (transposed_)
      produce_impl<true>(r0, nr, c0, nc, out, ldo);
    else
      produce_impl<false>(r0, nr, c0, nc, out, ldo);
  }

  void vjp(int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* gup, int64_t ldg, T* drow, T*, T* dcol, T*,
           T* values, int64_t ldv) const override {
    if (transposed_)
      vjp_impl<true>(r0, nr, c0, nc, gup, ldg, drow, dcol, values, ldv);
    else
      vjp_impl<false>(r0, nr, c0, nc, gup, ldg, drow, dcol, values, ldv);
  }

 private:
  const T* chunk(int64_t c) const { return packed_.data() + (c / W) * this->dim_ * W; }

  template <bool Flipped>
  void produce_impl(int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* out, int64_t ldo) const {
    int64_t r = 0;
    for (; r + RB <= nr; r += RB) block<RB, Flipped>(r0 + r, c0, nc, out + r * ldo, ldo);
    if (nr - r >= 2) {
      block<2, Flipped>(r0 + r, c0, nc, out + r * ldo, ldo);
      r += 2;
    }
    for (; r < nr; ++r) block<1, Flipped>(r0 + r, c0, nc, out + r * ldo, ldo);
  }

  // One sweep per (row, column vector): recompute the accumulators, then for each feature
  // the derivative with respect to the row value (summed over columns, horizontally at the
  // end) and to the column value (kept per column in a column-major buffer).
  template <bool Flipped>
  void vjp_impl(int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* gup, int64_t ldg, T* drow, T* dcol,
                T* values, int64_t ldv) const {
    const int64_t d = this->dim_;
    const int64_t ncp = round_up(std::max<int64_t>(nc, 1), L);
    V* gbuf = aligned_vectors_impl<T>(3, d + 1);
    T* cbuf = dcol ? scratch<T>(2, d * ncp) : nullptr;  // [d][ncp]
    if (cbuf) std::fill(cbuf, cbuf + d * ncp, T(0));
    for (int64_t r = 0; r < nr; ++r) {
      const T* xr = rowp_ + (r0 + r) * d;
      if (drow)
        for (int64_t k = 0; k < d; ++k) gbuf[k] = V(T(0));
      for (int64_t c = 0; c < nc; c += L) {
        const int64_t count = std::min<int64_t>(L, nc - c);
        const bool full = count == L;
        const T* yc = chunk(c0 + c) + (c % W);  // this vector's lane 0 at feature 0
        const V valid = lane_mask<T>(count);
        const V w = V::loadu(gup + r * ldg + c, count);
        V acc[M::kAcc];
        V ties(T(0));
        for (int a = 0; a < M::kAcc; ++a) acc[a] = V(T(0));
        for (int64_t k = 0; k < d; ++k) {
          V t[M::kAcc];
          term<Flipped>(V(xr[k]), V::loadu(yc + k * W), t);
          accumulate(acc, t, ties);
        }
        const V val = M::finalize(acc, s_);
        if (values) val.store(values + r * ldv + c, count);
        V ctx[kCtxSize];
        M::grad_context(acc, val, ctx, s_);
        const V inv_ties = V(T(1)) / ties;
        for (int64_t k = 0; k < d; ++k) {
          const V yv = V::loadu(yc + k * W);
          const V xb(xr[k]);
          V wk = w;
          if constexpr (M::kMax) {
            V t[M::kAcc];
            term<Flipped>(xb, yv, t);
            wk = w * metrics::tie_share(t[0], acc[0], inv_ties);
          }
          // rows are x (y when transposed); the derivative with respect to each side
          if (drow) {
            V g = wk * (Flipped ? M::dy(yv, xb, ctx, s_) : M::dx(xb, yv, ctx, s_));
            gbuf[k] = gbuf[k] + (full ? g : V::blendv(V(T(0)), g, valid));
          }
          if (cbuf) {
            V h = wk * (Flipped ? M::dx(yv, xb, ctx, s_) : M::dy(xb, yv, ctx, s_));
            T* slot = cbuf + k * ncp + c;
            (V::loadu(slot) + (full ? h : V::blendv(V(T(0)), h, valid))).store(slot);
          }
        }
      }
      if (drow)
        for (int64_t k = 0; k < d; ++k) drow[r * d + k] += hsum(gbuf[k]);
    }
    if (dcol)
      for (int64_t c = 0; c < nc; ++c)
        for (int64_t k = 0; k < d; ++k) dcol[c * d + k] += cbuf[k * ncp + c];
  }

  // term(x, y) with x the column vector when transposed (rows are y then).
  template <bool Flipped>
  inline void term(const V& row, const V& col, V* t) const {
    if constexpr (Flipped)
      M::term(col, row, t, s_);
    else
      M::term(row, col, t, s_);
  }

  // The forward needs only the value; the tie count (how many features reach the max) is
  // for the gradient's tie weight, and computing it costs more than the max itself.
  static inline void accumulate_value(V* acc, const V* t) {
    if constexpr (M::kMax) {
      acc[0] = at::vec::maximum(acc[0], t[0]);
    } else {
      for (int a = 0; a < M::kAcc; ++a) acc[a] = acc[a] + t[a];
    }
  }

  static inline void accumulate(V* acc, const V* t, V& ties) {
    if constexpr (M::kMax) {
      const V one(T(1));
      ties = V::blendv(V::blendv(ties, ties + one, t[0] == acc[0]), one, t[0] > acc[0]);
      acc[0] = at::vec::maximum(acc[0], t[0]);
    } else {
      for (int a = 0; a < M::kAcc; ++a) acc[a] = acc[a] + t[a];
    }
  }

  template <int R, bool Flipped>
  inline void block(int64_t row, int64_t c0, int64_t nc, T* out, int64_t ldo) const {
    const int64_t d = this->dim_;
    const T* xr[R];
    for (int i = 0; i < R; ++i) xr[i] = rowp_ + (row + i) * d;
    for (int64_t c = 0; c < nc; c += W) {
      // a last chunk of at most L columns takes one column vector, not CB (small problems)
      if (CB > 1 && nc - c <= L)
        chunk_block<R, Flipped, 1>(xr, chunk(c0 + c), nc - c, out + c, ldo);
      else
        chunk_block<R, Flipped, CB>(xr, chunk(c0 + c), nc - c, out + c, ldo);
    }
  }

  // R rows against the first NV column vectors of one packed chunk, storing the first
  // `valid` columns only (a dense result is written in place, see writes_exact_columns).
  template <int R, bool Flipped, int NV>
  inline void chunk_block(const T* const* xr, const T* yc, int64_t valid, T* out, int64_t ldo) const {
    const int64_t d = this->dim_;
    V acc[R][NV][M::kAcc];
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < NV; ++j)
        for (int a = 0; a < M::kAcc; ++a) acc[i][j][a] = V(T(0));
    for (int64_t k = 0; k < d; ++k) {
      V yv[NV];
      for (int j = 0; j < NV; ++j) yv[j] = V::loadu(yc + k * W + j * L);
      for (int i = 0; i < R; ++i) {
        const V xb(xr[i][k]);
        for (int j = 0; j < NV; ++j) {
          V t[M::kAcc];
          term<Flipped>(xb, yv[j], t);
          accumulate_value(acc[i][j], t);
        }
      }
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < NV; ++j) {
        const int64_t left = valid - j * L;
        if (left >= L)
          M::finalize(acc[i][j], s_).store(out + i * ldo + j * L);
        else if (left > 0)
          M::finalize(acc[i][j], s_).store(out + i * ldo + j * L, left);
      }
  }

  const T* rowp_ = nullptr;
  std::vector<T> packed_;
  std::vector<double> scalars_;
  Scalars s_;
  bool transposed_ = false;
};

// ------------------------------------------------------------------------------------
// a + b - 2g, one fused multiply-add: the GEMM form of the squared distance, which rounding
// can push below zero.
template <typename T>
inline Vec<T> raw_squared_distance(const Vec<T>& g, const Vec<T>& a, const Vec<T>& b) {
  return at::vec::fnmadd(g, Vec<T>(T(2)), a + b);
}
// d2 = max(raw, 0); clamp_min (vmaxps with the value second) passes NaN on in one
// instruction where at::vec::maximum needs three.
template <typename T>
inline Vec<T> squared_distance(const Vec<T>& g, const Vec<T>& a, const Vec<T>& b) {
  return at::vec::clamp_min(raw_squared_distance(g, a, b), Vec<T>(T(0)));
}

// PanelGemm's finisher for a selection of the smallest d2 = max(a + b - 2g, 0): a register
// tile's row is wanted when some column's a + b - 2g (computed as the epilogue computes it,
// so at most d2) lies below the row's bar, or the bar is NaN (the row takes every
// candidate); the wanted rows go to the source's take_rows. The same for every kernel, so
// one copy per dtype. Tiles holding the diagonal of a symmetric call are always wanted (the
// exact self-comparison is not what the product gives there).
template <typename T>
struct SmallestD2 {
  static constexpr bool kFilters = true;
  using Take = void (*)(const SmallestD2& fin, uint32_t rows, int64_t r, int64_t c, int64_t cols, T* out,
                        int64_t ldo);
  const T* a;     // side feature of the block's rows (a[r], r relative to the block)
  const T* b;     // of its columns
  const T* bars;  // Selection::bars
  int64_t r0, c0;  // the block's first row and column
  bool symmetric;
  Take take_rows;
  const void* source;
  Selection<T>* sel;

  template <int R, int NV>
  uint32_t rows(const Vec<T> (&acc)[R][NV], int64_t r, int64_t c) const {
    using V = Vec<T>;
    constexpr int64_t L = V::size();
    constexpr uint32_t all = (uint32_t(1) << R) - 1;
    // global row r0 + r + i meets the diagonal at block column r + i + (r0 - c0)
    const int64_t diagonal = r + r0 - c0;
    if (symmetric && std::max(diagonal, c) < std::min(diagonal + R, c + NV * L)) return all;
    V bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) bv[j] = V::loadu(b + c + j * L);
    uint32_t wanted = 0;
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) {
      const V ai(a[r + i]);
      V low = raw_squared_distance(acc[i][0], ai, bv[0]);
#pragma GCC unroll 4
      for (int j = 1; j < NV; ++j) low = at::vec::clamp_max(raw_squared_distance(acc[i][j], ai, bv[j]), low);
      // a lane not at or above the bar (below it, or the bar is NaN); the sums are finite
      // (the source selects only with finite side features), so low is never NaN
      wanted |= uint32_t((low >= V(bars[r + i])).zero_mask() != 0) << i;
    }
    return wanted;
  }
  void take(uint32_t rows, int64_t r, int64_t c, int64_t cols, T* out, int64_t ldo) const {
    take_rows(*this, rows, r, c, cols, out, ldo);
  }
};

template <typename T, typename M>
class InnerProductSource final : public TileSource<T> {
  using V = Vec<T>;
  static constexpr int64_t L = V::size();
  // Large tiles: BLAS calls on small blocks waste most of their time in packing and setup.
  static constexpr int64_t kRowBlock = 256, kColBlock = 512;

 public:
  InnerProductSource(const SourceSpec& spec, const Operands& ops)
      : scalars_(spec.scalars), transposed_(spec.transposed), symmetric_(spec.symmetric) {
    s_ = Scalars{scalars_.data(), int64_t(scalars_.size())};
    this->rows_ = transposed_ ? ops.m : ops.n;
    this->cols_ = transposed_ ? ops.n : ops.m;
    this->dim_ = ops.d;
    rowp_ = Operands::as<T>(transposed_ ? ops.y : ops.x);
    colp_ = Operands::as<T>(transposed_ ? ops.x : ops.y);
    rside_ = Operands::as<T>(transposed_ ? ops.b : ops.a);
    cside_ = Operands::as<T>(transposed_ ? ops.a : ops.b);
    this->col_block_ = kColBlock;
    this->row_block_ = kRowBlock;
    // A single product takes the panel kernel at any size (PanelGemm::suits), except under
    // the distance-based GEMM forms |x|^2 + |y|^2 - 2 x.y: their small shapes take the
    // difference-based kernels up to 16 features, so there is nothing to gain, and BLAS's
    // rounding is what gives scipy's 0 at equal rows of mahalanobis' (always GEMM) form.
    const bool any_size = ops.batch == 1 && !M::kDistanceBased;
    const bool fuses = spec.selects && math::rises_with_d2<M>();
    if (PanelGemm<T>::suits(this->rows_, this->cols_, ops.d, any_size, fuses)) {
      if (PanelGemm<T>::fits(this->cols_, ops.d))
        panels_ = PanelGemm<T>(colp_, this->cols_, ops.d);
      else {
        // Each row block packs every column block once: fewer, taller row blocks (one per
        // thread when the rows allow) pack the operand fewer times.
        pack_tiles_ = true;
        const int64_t threads = std::max<int64_t>(1, at::get_num_threads());
        this->row_block_ = std::max(kRowBlock, round_up((this->rows_ + threads - 1) / threads, kPackTileRows));
      }
      if constexpr (math::rises_with_d2<M>()) selects_ = finite(rside_, this->rows_) && finite(cside_, this->cols_);
    } else if (ops.batch == 1 && this->rows_ <= kRowBlock && this->cols_ <= kColBlock && this->rows_ >= 16) {
      // A single product of one BLAS tile would run on one thread (a batch spreads its
      // elements instead): two row blocks let two threads share it (the split follows the
      // shape alone, so the bits do not depend on the thread count, as a multi-threaded BLAS
      // call's might).
      this->row_block_ = round_up((this->rows_ + 1) / 2, int64_t(8));
    }
  }

  bool writes_exact_columns() const override { return true; }

  void produce(int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* out, int64_t ldo) const override {
    product(r0, nr, c0, nc, out, ldo);
    if constexpr (math::plain_product<M>()) return;
    const Scalars s = s_;  // a local copy stays in registers (see Scalars)
    if (transposed_)
      epilogue<true>(r0, nr, c0, nc, out, ldo, s);
    else
      epilogue<false>(r0, nr, c0, nc, out, ldo, s);
  }

  // The plain product as one call where PanelGemm makes it from the operand packed whole:
  // its row blocks spread over the threads and every sum keeps one order. Not through BLAS,
  // whose threads may split the inner dimension, so that the sums' order, and their last
  // bits, would depend on the thread count (docs/contracts.md, "Determinism"); BLAS tiles
  // are each one single-threaded call.
  bool product_all(T* out, int64_t ldo) const override {
    if constexpr (!math::plain_product<M>()) {
      return false;
    } else {
      if (panels_.empty()) return false;
      product(0, this->rows_, 0, this->cols_, out, ldo);
      return true;
    }
  }

  // The register tile filters by d2 before the epilogue: only the rows of a tile that may
  // hold a value below their bar get values (typically a few tiles per row, once the bars
  // settle), and the product never leaves the registers for the rest.
  bool select(int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* scratch_tile, int64_t ld,
              Selection<T>& sel) const override {
    if constexpr (!PanelGemm<T>::kAvailable || !math::rises_with_d2<M>()) {
      return false;
    } else {
      if (!selects_) return false;
      const T* panels = column_panels(nr, c0, nc);
      if (!panels) return false;
      const SmallestD2<T> fin{rside_ + r0, cside_ + c0, sel.bars, r0, c0, symmetric_, &take_rows, this, &sel};
      PanelGemm<T>::multiply(panels, this->dim_, rowp_, r0, nr, nc, scratch_tile, ld, fin);
      return true;
    }
  }

  // Recompute G by GEMM, turn it in place into H = gup * df/dg, then
  // drow += H cols (GEMM), dcol += H^T rows (GEMM); side features from row/column sums.
  void vjp(int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* gup, int64_t ldg, T* drow, T* rside, T* dcol,
           T* cside, T* values, int64_t ldv) const override {
    const int64_t d = this->dim_;
    const int64_t ldt = round_up(std::max<int64_t>(nc, 1), L);
    T* G = scratch<T>(2, nr * ldt);
    T* csum = cside ? scratch<T>(3, ldt) : nullptr;
    if (csum) std::fill(csum, csum + ldt, T(0));
    product(r0, nr, c0, nc, G, ldt);
    for (int64_t r = 0; r < nr; ++r) {
      T* gr = G + r * ldt;  // becomes H = gup * df/dg in place
      const V a(rside_ ? rside_[r0 + r] : T(0));
      V rsum(T(0));
      for (int64_t c = 0; c < nc; c += L) {
        const int64_t count = std::min<int64_t>(L, nc - c);
        const V valid = lane_mask<T>(count);
        const V g = V::loadu(gr + c, count);
        const V b = cside_ ? V::loadu(cside_ + c0 + c, count) : V(T(0));
        const V w = V::loadu(gup + r * ldg + c, count);
        V val, fg, frow, fcol;
        derivatives(g, a, b, val, fg, frow, fcol);
        if constexpr (math::fixes_self<M>()) {
          const int64_t diag = r0 + r - c0 - c;
          if (symmetric_ && diag >= 0 && diag < count) {
            // exact self-comparison (distance-based: d2 = 0), gradient 0 by convention
            const V on_diag = Vec<T>::arange(T(0), T(1)) == V(static_cast<T>(diag));
            metrics::exact_self<M>(on_diag, val, fg, frow, fcol, s_);
          }
        }
        if (values) val.store(values + r * ldv + c, count);
        V::blendv(V(T(0)), w * fg, valid).store(gr + c, count);
        rsum = rsum + V::blendv(V(T(0)), w * frow, valid);
        if (csum) (V::loadu(csum + c) + V::blendv(V(T(0)), w * fcol, valid)).store(csum + c);
      }
      if (rside) rside[r] += hsum(rsum);
    }
    if (drow) engine::gemm_nn<T>(nr, d, nc, T(1), G, ldt, colp_ + c0 * d, d, T(1), drow, d);
    if (dcol) engine::gemm_tn<T>(nc, d, nr, T(1), G, ldt, rowp_ + r0 * d, d, T(1), dcol, d);
    if (csum)
      for (int64_t c = 0; c < nc; ++c) cside[c] += csum[c];
  }

 private:
  // out[r][c] = g = row(r0 + r) . col(c0 + c)
  void product(int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* out, int64_t ldo) const {
    if constexpr (PanelGemm<T>::kAvailable) {
      if (const T* panels = column_panels(nr, c0, nc))
        return PanelGemm<T>::multiply(panels, this->dim_, rowp_, r0, nr, nc, out, ldo);
    }
    const int64_t d = this->dim_;
    engine::gemm_nt<T>(nr, nc, d, T(1), rowp_ + r0 * d, d, colp_ + c0 * d, d, T(0), out, ldo);
  }

  // The packed panels of columns [c0, c0 + nc) for a block of nr rows, or null where the
  // block's product goes to BLAS.
  const T* column_panels(int64_t nr, int64_t c0, int64_t nc) const {
    if (!panels_.empty()) return panels_.panels(c0, nc);
    // An operand too large to pack whole: the tile packs its column block, as BLAS would,
    // once its rows are many enough to pay for that copy.
    if (!pack_tiles_ || nr < kPackTileRows) return nullptr;
    const int64_t d = this->dim_;
    T* raw = scratch<T>(6, PanelGemm<T>::packed_size(nc, d) + 64 / int64_t(sizeof(T)));
    T* panels = reinterpret_cast<T*>(round_up(reinterpret_cast<uintptr_t>(raw), 64));
    PanelGemm<T>::pack(colp_ + c0 * d, nc, d, panels);
    return panels;
  }

  static bool finite(const T* v, int64_t n) {
    bool ok = true;
    for (int64_t i = 0; i < n; ++i) ok &= std::isfinite(v[i]);
    return ok;
  }

  // SmallestD2's hand-over: the wanted rows of a stored tile (out: its first value, at block
  // row r and column c) get keys (d2) and values (the epilogue, in place) and go to the
  // selection.
  static void take_rows(const SmallestD2<T>& fin, uint32_t rows, int64_t r, int64_t c, int64_t cols, T* out,
                        int64_t ldo) {
    const auto& src = *static_cast<const InnerProductSource*>(fin.source);
    T* keys = scratch<T>(2, round_up(cols, L));
    const Scalars s = src.s_;
    const int64_t c0 = fin.c0 + c;
    const T* b = src.cside_ + c0;
    for (; rows != 0; rows &= rows - 1) {
      const int i = __builtin_ctz(rows);
      T* o = out + i * ldo;
      const int64_t row = fin.r0 + r + i;
      const V a(src.rside_[row]);
      for (int64_t j = 0; j < cols; j += L) {
        const int64_t count = std::min<int64_t>(L, cols - j);
        squared_distance(V::loadu(o + j, count), a, V::loadu(b + j, count)).store(keys + j, count);
      }
      if (src.transposed_)
        src.template epilogue<true>(row, 1, c0, cols, o, ldo, s);
      else
        src.template epilogue<false>(row, 1, c0, cols, o, ldo, s);
      fin.sel->take(r + i, c0, cols, o, keys);
    }
  }

  // The GEMM tile out[r][c] = g becomes the kernel's value in place.
  template <bool Flipped>
  void epilogue(int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* out, int64_t ldo, const Scalars& s) const {
    const int64_t full = nc / L * L;
    const T* b = cside_ ? cside_ + c0 : nullptr;
    for (int64_t r = 0; r < nr; ++r) {
      T* o = out + r * ldo;
      const V a(rside_ ? rside_[r0 + r] : T(0));
      for (int64_t c = 0; c < full; c += L)
        value<Flipped>(V::loadu(o + c), a, b ? V::loadu(b + c) : V(T(0)), s).store(o + c);
      if (full < nc) {
        const int64_t count = nc - full;
        const V g = V::loadu(o + full, count);
        value<Flipped>(g, a, b ? V::loadu(b + full, count) : V(T(0)), s).store(o + full, count);
      }
      if constexpr (math::fixes_self<M>()) {
        const int64_t diag = r0 + r - c0;
        if (symmetric_ && diag >= 0 && diag < nc) o[diag] = math::self_value<M>(T(0), s);
      }
    }
  }

  template <bool Flipped>
  static inline V value(const V& g, const V& a, const V& b, const Scalars& s) {
    if constexpr (M::kDistanceBased) {
      return M::h(squared_distance(g, a, b), s);
    } else {
      return Flipped ? M::value(g, b, a, s) : M::value(g, a, b, s);
    }
  }

  // value, d value / d g, and d value / d (row side feature), d value / d (column side)
  // (metrics/adapters.h; rows are y, side b of the kernel, when transposed)
  inline void derivatives(const V& g, const V& a, const V& b, V& val, V& fg, V& frow, V& fcol) const {
    constexpr double eps = std::numeric_limits<T>::epsilon();
    if (transposed_ && !M::kDistanceBased)
      metrics::inner_product_derivatives<M>(g, b, a, eps, val, fg, fcol, frow, s_);
    else
      metrics::inner_product_derivatives<M>(g, a, b, eps, val, fg, frow, fcol, s_);
  }

  const T *rowp_ = nullptr, *colp_ = nullptr, *rside_ = nullptr, *cside_ = nullptr;
  static constexpr int64_t kPackTileRows = 64;
  PanelGemm<T> panels_;  // the column operand packed for product(); empty: per tile or BLAS
  bool pack_tiles_ = false;  // product() packs each tile's column block
  bool selects_ = false;     // select() filters by d2 (rises_with_d2, finite side features)
  std::vector<double> scalars_;
  Scalars s_;
  bool transposed_ = false, symmetric_ = false;
};

template <typename T>
engine::SourcePtr<T> make_source(const SourceSpec& spec, const Operands& ops);

}  // namespace CPU_CAPABILITY
}  // namespace tp::cpu
