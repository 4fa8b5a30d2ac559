#pragma once
// CPU tile producers, compiled once per CPU capability (everything here lives in the
// inline namespace CPU_CAPABILITY, so the AVX512 and DEFAULT copies never mix).
//   ElementwiseSource   : vectorized over columns, register-blocked over rows; the column
//                         operand is packed once into [panel][d][P] so a tile reads one
//                         contiguous block.
//   InnerProductSource  : a BLAS GEMM per tile plus a vectorized epilogue.
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/vec.h>

#include <algorithm>
#include <limits>

#include "engines/gemm.h"
#include "engines/tile_source.h"
#include "metrics/elementwise.h"
#include "metrics/inner_product.h"

namespace tp::cpu {
inline namespace CPU_CAPABILITY {

using engine::Operands;
using engine::SourceSpec;
using engine::TileSource;
using metrics::Scalars;

template <typename T>
using Vec = at::vec::Vectorized<T>;

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Per-thread scratch buffers, grown on demand. Slots keep simultaneous users apart.
template <typename T>
T* scratch(int slot, int64_t size) {
  thread_local std::vector<T> buffers[4];
  auto& b = buffers[slot];
  if (int64_t(b.size()) < size) b.resize(size);
  return b.data();
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
template <typename T, typename M>
class ElementwiseSource final : public TileSource<T> {
  using V = Vec<T>;
  static constexpr int64_t L = V::size();
  static constexpr int CB = M::kAcc == 1 ? 2 : 1;  // column vectors per register block
  static constexpr int RB = 4;                     // rows per register block
  static constexpr int kCtxSize = M::kCtx > 0 ? M::kCtx : 1;

 public:
  ElementwiseSource(const SourceSpec& spec, const Operands<T>& ops)
      : scalars_(spec.scalars), flipped_(spec.flipped) {
    s_ = Scalars{scalars_.data(), int64_t(scalars_.size())};
    this->rows_ = flipped_ ? ops.m : ops.n;
    this->cols_ = flipped_ ? ops.n : ops.m;
    this->dim_ = ops.d;
    rowp_ = flipped_ ? ops.y : ops.x;
    const T* colp = flipped_ ? ops.x : ops.y;
    const int64_t d = ops.d;
    // Panel width: a packed tile (d x P) stays within ~256 KiB of L2.
    int64_t p = (256 * 1024) / std::max<int64_t>(1, d * int64_t(sizeof(T)));
    p = std::clamp<int64_t>(p / (CB * L) * (CB * L), CB * L, 512);
    this->col_block_ = p;
    this->row_block_ = 64;
    const int64_t cols = this->cols_;
    const int64_t npanels = (cols + p - 1) / p;
    panels_.assign(size_t(npanels * std::max<int64_t>(d, 1) * p), T(0));
    T* dst = panels_.data();
    at::parallel_for(0, npanels, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t pi = p0; pi < p1; ++pi) {
        const int64_t c_begin = pi * p, c_end = std::min(cols, c_begin + p);
        T* panel = dst + pi * d * p;
        for (int64_t c = c_begin; c < c_end; ++c)
          for (int64_t k = 0; k < d; ++k) panel[k * p + (c - c_begin)] = colp[c * d + k];
      }
    });
  }

  void produce(int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* out, int64_t ldo) const override {
    const int64_t p = this->col_block_;
    const T* panel = panels_.data() + (c0 / p) * this->dim_ * p;
    const int64_t ncv = round_up(nc, CB * L);
    int64_t r = 0;
    for (; r + RB <= nr; r += RB) block<RB>(r0 + r, panel, ncv, out + r * ldo, ldo);
    for (; r < nr; ++r) block<1>(r0 + r, panel, ncv, out + r * ldo, ldo);
  }

  void vjp_rows(int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* gup, int64_t ldg, T* drow, T*,
                T* values, int64_t ldv) const override {
    const int64_t p = this->col_block_, d = this->dim_;
    const T* panel = panels_.data() + (c0 / p) * d * p;
    V* gbuf = reinterpret_cast<V*>(scratch<T>(3, (d + 1) * L + L));
    gbuf = reinterpret_cast<V*>(round_up(reinterpret_cast<uintptr_t>(gbuf), alignof(V)));
    for (int64_t r = 0; r < nr; ++r) {
      const T* xr = rowp_ + (r0 + r) * d;
      for (int64_t k = 0; k < d; ++k) gbuf[k] = V(T(0));
      for (int64_t c = 0; c < nc; c += L) {
        const int64_t count = std::min<int64_t>(L, nc - c);
        const V valid = lane_mask<T>(count);
        const V w = V::loadu(gup + r * ldg + c, count);
        V acc[M::kAcc];
        V ties(T(0));
        for (int a = 0; a < M::kAcc; ++a) acc[a] = V(T(0));
        for (int64_t k = 0; k < d; ++k) {
          V t[M::kAcc];
          eval_term(xr[k], V::loadu(panel + k * p + c), t);
          accumulate(acc, t, ties);
        }
        const V val = M::finalize(acc, s_);
        if (values) val.store(values + r * ldv + c, count);
        V ctx[kCtxSize];
        M::grad_context(acc, val, ctx, s_);
        const V inv_ties = V(T(1)) / ties;
        for (int64_t k = 0; k < d; ++k) {
          const V yv = V::loadu(panel + k * p + c);
          const V xb(xr[k]);
          V g = flipped_ ? M::dy(yv, xb, ctx, s_) : M::dx(xb, yv, ctx, s_);
          if constexpr (M::kMax) {
            V t[M::kAcc];
            eval_term(xr[k], yv, t);
            g = g * V::blendv(V(T(0)), inv_ties, t[0] == acc[0]);
          }
          gbuf[k] = gbuf[k] + V::blendv(V(T(0)), w * g, valid);
        }
      }
      for (int64_t k = 0; k < d; ++k) drow[r * d + k] += hsum(gbuf[k]);
    }
  }

 private:
  // term(x, y) with x from the column vector when flipped (rows are y then).
  inline void eval_term(T row_value, const V& col, V* t) const {
    const V xb(row_value);
    if (flipped_)
      M::term(col, xb, t, s_);
    else
      M::term(xb, col, t, s_);
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

  template <int R>
  inline void block(int64_t row, const T* panel, int64_t ncv, T* out, int64_t ldo) const {
    const int64_t p = this->col_block_, d = this->dim_;
    const T* xr[R];
    for (int i = 0; i < R; ++i) xr[i] = rowp_ + (row + i) * d;
    for (int64_t c = 0; c < ncv; c += CB * L) {
      V acc[R][CB][M::kAcc];
      V ties[R][CB];
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < CB; ++j) {
          ties[i][j] = V(T(0));
          for (int a = 0; a < M::kAcc; ++a) acc[i][j][a] = V(T(0));
        }
      for (int64_t k = 0; k < d; ++k) {
        V yv[CB];
        for (int j = 0; j < CB; ++j) yv[j] = V::loadu(panel + k * p + c + j * L);
        for (int i = 0; i < R; ++i) {
          for (int j = 0; j < CB; ++j) {
            V t[M::kAcc];
            eval_term(xr[i][k], yv[j], t);
            accumulate(acc[i][j], t, ties[i][j]);
          }
        }
      }
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < CB; ++j) M::finalize(acc[i][j], s_).store(out + i * ldo + c + j * L);
    }
  }

  const T* rowp_ = nullptr;
  std::vector<T> panels_;
  std::vector<double> scalars_;
  Scalars s_;
  bool flipped_ = false;
};

// ------------------------------------------------------------------------------------
template <typename T, typename M>
class InnerProductSource final : public TileSource<T> {
  using V = Vec<T>;
  static constexpr int64_t L = V::size();

 public:
  InnerProductSource(const SourceSpec& spec, const Operands<T>& ops)
      : scalars_(spec.scalars), flipped_(spec.flipped), symmetric_(spec.symmetric) {
    s_ = Scalars{scalars_.data(), int64_t(scalars_.size())};
    this->rows_ = flipped_ ? ops.m : ops.n;
    this->cols_ = flipped_ ? ops.n : ops.m;
    this->dim_ = ops.d;
    rowp_ = flipped_ ? ops.y : ops.x;
    colp_ = flipped_ ? ops.x : ops.y;
    rside_ = flipped_ ? ops.b : ops.a;
    cside_ = flipped_ ? ops.a : ops.b;
    this->col_block_ = 256;
    this->row_block_ = 64;
  }

  void produce(int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* out, int64_t ldo) const override {
    const int64_t d = this->dim_;
    engine::gemm_nt<T>(nr, nc, d, T(1), rowp_ + r0 * d, d, colp_ + c0 * d, d, T(0), out, ldo);
    for (int64_t r = 0; r < nr; ++r) {
      T* o = out + r * ldo;
      const V a(rside_ ? rside_[r0 + r] : T(0));
      for (int64_t c = 0; c < nc; c += L) {
        const int64_t count = std::min<int64_t>(L, nc - c);
        const V g = V::loadu(o + c, count);
        const V b = cside_ ? V::loadu(cside_ + c0 + c, count) : V(T(0));
        value(g, a, b).store(o + c, count);
      }
      if constexpr (M::kDistanceBased) {
        const int64_t diag = r0 + r - c0;
        if (symmetric_ && diag >= 0 && diag < nc) o[diag] = M::h(T(0), s_);
      }
    }
  }

  void vjp_rows(int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* gup, int64_t ldg, T* drow, T* dside,
                T* values, int64_t ldv) const override {
    const int64_t d = this->dim_;
    const int64_t ldt = round_up(std::max<int64_t>(nc, 1), L);
    T* G = scratch<T>(2, nr * ldt);
    engine::gemm_nt<T>(nr, nc, d, T(1), rowp_ + r0 * d, d, colp_ + c0 * d, d, T(0), G, ldt);
    for (int64_t r = 0; r < nr; ++r) {
      T* gr = G + r * ldt;  // becomes H = gup * df/dg in place
      const T a_s = rside_ ? rside_[r0 + r] : T(0);
      const V a(a_s);
      V side_acc(T(0));
      for (int64_t c = 0; c < nc; c += L) {
        const int64_t count = std::min<int64_t>(L, nc - c);
        const V valid = lane_mask<T>(count);
        const V g = V::loadu(gr + c, count);
        const V b = cside_ ? V::loadu(cside_ + c0 + c, count) : V(T(0));
        const V w = V::loadu(gup + r * ldg + c, count);
        V val, fg, frow;
        derivatives(g, a, b, val, fg, frow);
        if constexpr (M::kDistanceBased) {
          const int64_t diag = r0 + r - c0 - c;
          if (symmetric_ && diag >= 0 && diag < count) {
            // exact self-comparison: d2 = 0, gradient 0 by convention
            const V on_diag = Vec<T>::arange(T(0), T(1)) == V(static_cast<T>(diag));
            val = V::blendv(val, V(M::h(T(0), s_)), on_diag);
            fg = V::blendv(fg, V(T(0)), on_diag);
            frow = V::blendv(frow, V(T(0)), on_diag);
          }
        }
        if (values) val.store(values + r * ldv + c, count);
        V::blendv(V(T(0)), w * fg, valid).store(gr + c, count);
        side_acc = side_acc + V::blendv(V(T(0)), w * frow, valid);
      }
      if (dside) dside[r] += hsum(side_acc);
    }
    engine::gemm_nn<T>(nr, d, nc, T(1), G, ldt, colp_ + c0 * d, d, T(1), drow, d);
  }

 private:
  inline V value(const V& g, const V& a, const V& b) const {
    if constexpr (M::kDistanceBased) {
      return M::h(at::vec::maximum(a + b - g - g, V(T(0))), s_);
    } else {
      return flipped_ ? M::value(g, b, a, s_) : M::value(g, a, b, s_);
    }
  }

  // value, d value / d g, and d value / d (row side feature)
  inline void derivatives(const V& g, const V& a, const V& b, V& val, V& fg, V& frow) const {
    if constexpr (M::kDistanceBased) {
      const V raw = a + b - g - g;
      const V zero(T(0));
      const V d2 = at::vec::maximum(raw, zero);
      val = M::h(d2, s_);
      V dh = M::dh(d2, val, s_);
      // Below the rounding floor of the GEMM form, d2 is noise: a sqrt-like h would turn it
      // into an arbitrary large gradient. Treat it as an exact zero there.
      const V floor = M::kSingularAtZero ? (a + b) * V(T(16) * std::numeric_limits<T>::epsilon()) : zero;
      dh = V::blendv(dh, zero, raw <= floor);
      fg = dh * V(T(-2));
      frow = dh;
    } else {
      V fa, fb;
      if (flipped_) {
        val = M::value(g, b, a, s_);
        M::grad(g, b, a, val, fg, fb, fa, s_);
        frow = fa;  // row side feature is b (the y side)
      } else {
        val = M::value(g, a, b, s_);
        M::grad(g, a, b, val, fg, fa, fb, s_);
        frow = fa;
      }
    }
  }

  const T *rowp_ = nullptr, *colp_ = nullptr, *rside_ = nullptr, *cside_ = nullptr;
  std::vector<double> scalars_;
  Scalars s_;
  bool flipped_ = false, symmetric_ = false;
};

template <typename T>
engine::SourcePtr<T> make_source(const SourceSpec& spec, const Operands<T>& ops);

}  // namespace CPU_CAPABILITY
}  // namespace tp::cpu
