#pragma once
// CPU tile producers of the Boolean family (metrics/boolean.h), compiled per CPU capability
// with the other sources (the AVX2/AVX512 copies are built with -mpopcnt):
//   PackedSource   : rows bit-packed into int64 words (64 features each, by the catalog's
//                    prepare step, once per call); the column operand re-packed into
//                    16-column panels; TT = sum_w popcount(x_w & y_w) by the popcount
//                    engine (cpu/popcount.h: AVX512-VPOPCNTDQ / AVX2 / scalar, chosen at run
//                    time), the other counts from per-row popcounts, then the metric's
//                    formula vectorized over columns.
//   EqualitySource : float64 values compared by value (hamming / equal on non-Boolean
//                    data, optionally weighted), vectorized over features.
// Neither is differentiable: the catalog hands them detached operands, so no autograd
// graph ever reaches vjp().
#include <cstdint>

#include "cpu/popcount.h"
#include "cpu/sources.h"
#include "metrics/boolean.h"

namespace tp::cpu {
inline namespace CPU_CAPABILITY {

[[noreturn]] inline void boolean_not_differentiable() {
  TORCH_CHECK(false, "torchpair: Boolean and equality comparisons are not differentiable");
}

inline int64_t popcount64(uint64_t w) { return int64_t(__builtin_popcountll(w)); }

template <typename T, typename M>
class PackedSource final : public TileSource<T> {
  using V = Vec<T>;
  static constexpr int64_t L = V::size();

 public:
  PackedSource(const SourceSpec& spec, const Operands& ops) : transposed_(spec.transposed) {
    this->rows_ = transposed_ ? ops.m : ops.n;
    this->cols_ = transposed_ ? ops.n : ops.m;
    this->dim_ = ops.d;  // words
    features_ = T(spec.scalars.at(0));
    rowp_ = Operands::as<uint64_t>(transposed_ ? ops.y : ops.x);
    const uint64_t* colp = Operands::as<uint64_t>(transposed_ ? ops.x : ops.y);
    kernel_ = popcount_kernel<T>();
    const int64_t W = this->dim_, cols = this->cols_;
    this->row_block_ = 64;
    // a tile's packed column words stay within ~256 KiB (L2-resident while its 64 rows sweep
    // them, one 16-column panel at a time from L1)
    const int64_t per_col = std::max<int64_t>(1, W) * 8;
    this->col_block_ = std::clamp<int64_t>((256 * 1024) / per_col / kPopPanel * kPopPanel, 64, 1024);
    const int64_t panels = (cols + kPopPanel - 1) / kPopPanel;
    panels_.resize(size_t(panels * W * kPopPanel));
    uint64_t* dst = panels_.data();
    at::parallel_for(0, panels, 8, [&](int64_t p0, int64_t p1) { pack_panels(colp, cols, W, dst, p0, p1); });
    row_count_ = counts(rowp_, this->rows_);
    col_count_ = counts(colp, cols);
  }

  bool writes_exact_columns() const override { return true; }

  void produce(int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* out, int64_t ldo) const override {
    const int64_t W = this->dim_;
    // TT counts (c0 is a multiple of col_block, hence of the panel width) ...
    kernel_(rowp_ + r0 * W, nr, W, panels_.data() + (c0 / kPopPanel) * W * kPopPanel, nc, out, ldo);
    // ... -> values, vectorized over columns: TF, FT, FF from the rows' and columns' counts
    const V D(features_);
    for (int64_t r = 0; r < nr; ++r) {
      T* o = out + r * ldo;
      const V nrow(row_count_[r0 + r]);
      for (int64_t c = 0; c < nc; c += L) {
        const int64_t count = std::min<int64_t>(L, nc - c);
        const V tt = V::loadu(o + c, count);
        const V ncol = V::loadu(col_count_.data() + c0 + c, count);
        // x is the kernel's x operand: rows are y when transposed
        const V nx = transposed_ ? ncol : nrow, ny = transposed_ ? nrow : ncol;
        const V tf = nx - tt, ft = ny - tt, ff = D - nx - ny + tt;
        M::value(tt, tf, ft, ff).store(o + c, count);
      }
    }
  }

  void vjp(int64_t, int64_t, int64_t, int64_t, const T*, int64_t, T*, T*, T*, T*, T*, int64_t) const override {
    boolean_not_differentiable();
  }

 private:
  // Per-row popcounts |row| (as T), padded by one vector for the epilogue's loads.
  std::vector<T> counts(const uint64_t* p, int64_t rows) const {
    const int64_t W = this->dim_;
    std::vector<T> out(size_t(rows) + size_t(L), T(0));
    T* o = out.data();
    at::parallel_for(0, rows, 1024, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t s = 0;
        for (int64_t w = 0; w < W; ++w) s += popcount64(p[r * W + w]);
        o[r] = T(s);
      }
    });
    return out;
  }

  const uint64_t* rowp_ = nullptr;
  std::vector<uint64_t> panels_;  // the column operand, [panel][W][kPopPanel] (cpu/popcount.h)
  PopcountKernel<T> kernel_ = nullptr;
  std::vector<T> row_count_, col_count_;
  T features_ = 0;
  bool transposed_ = false;
};

template <typename T, typename M>
class EqualitySource final : public TileSource<T> {
  using VD = Vec<double>;
  static constexpr int64_t LD = VD::size();

 public:
  EqualitySource(const SourceSpec& spec, const Operands& ops) : transposed_(spec.transposed) {
    weighted_ = spec.scalars.at(0) == 1.0;
    this->rows_ = transposed_ ? ops.m : ops.n;
    this->cols_ = transposed_ ? ops.n : ops.m;
    this->dim_ = ops.d;
    features_ = weighted_ ? ops.d / 2 : ops.d;
    rowp_ = Operands::as<double>(transposed_ ? ops.y : ops.x);
    colp_ = Operands::as<double>(transposed_ ? ops.x : ops.y);
    this->row_block_ = 16;
    this->col_block_ = 256;
  }

  bool writes_exact_columns() const override { return true; }

  void produce(int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* out, int64_t ldo) const override {
    const int64_t d = this->dim_, D = features_;
    for (int64_t r = 0; r < nr; ++r) {
      const double* xr = rowp_ + (r0 + r) * d;
      const double* w = weighted_ ? xr + D : nullptr;  // the weights (the same in every row)
      double total = double(D);
      if (w) {
        VD s(0.0);
        for (int64_t k = 0; k < D; k += LD) s = s + VD::loadu(w + k, std::min<int64_t>(LD, D - k));
        total = hsum(s);
      }
      for (int64_t c = 0; c < nc; ++c) {
        const double* yc = colp_ + (c0 + c) * d;
        VD acc(0.0);
        const VD one(1.0), zero(0.0);
        // tails load zeros into both rows: equal, so they count nothing
        for (int64_t k = 0; k < D; k += LD) {
          const int64_t cnt = std::min<int64_t>(LD, D - k);
          const VD differ = VD::loadu(xr + k, cnt) != VD::loadu(yc + k, cnt);
          acc = acc + VD::blendv(zero, w ? VD::loadu(w + k, cnt) : one, differ);
        }
        const T neq = T(hsum(acc)), all = T(total);
        // equality counts: TT = matches, TF = mismatches, FT = FF = 0 (see metrics/boolean.h)
        out[r * ldo + c] = M::value(T(all - neq), neq, T(0), T(0));
      }
    }
  }

  void vjp(int64_t, int64_t, int64_t, int64_t, const T*, int64_t, T*, T*, T*, T*, T*, int64_t) const override {
    boolean_not_differentiable();
  }

 private:
  const double *rowp_ = nullptr, *colp_ = nullptr;
  int64_t features_ = 0;
  bool weighted_ = false, transposed_ = false;
};

}  // namespace CPU_CAPABILITY
}  // namespace tp::cpu
