#pragma once
// The linear-scan metrics (hamming, prefix, postfix): one generic engine, vectorized across
// columns. These metrics do a few token comparisons per pair (random strings differ at the
// first token), so the per-pair cost is all overhead unless a pair is a SIMD lane: y's
// tokens are laid out position-major ("transposed": token t of W consecutive columns is one
// vector load of int32 ids), and a row of x is compared position by position against the
// broadcast of its token t, W columns at a time:
//   prefix   equal positions while every earlier one is equal, stopping when no lane is
//            still equal (usually after one or two vectors)
//   postfix  prefix of the reversed sequences (both layouts are built reversed)
//   hamming  equal positions below the shorter length
// and the distance max(m, n) - equal is written straight into the caller's row (int64, or
// float64 divided by max(m, n) when normalized). The layouts are built once per call
// (O(tokens), int32 ids from TokenIds) and shared read-only by every thread.
#include <ATen/cpu/vec/vec.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "sequences/seq_layout.h"
#include "sequences/seq_params.h"

namespace tp::seq {
inline namespace CPU_CAPABILITY {

inline bool is_linear(const Params& p) {
  return p.metric == Metric::hamming || p.metric == Metric::prefix || p.metric == Metric::postfix;
}

class LinearScan {
 public:
  using Vec = at::vec::Vectorized<int32_t>;
  static constexpr int W = Vec::size();
  // prefix/postfix lay out only the first kDepth positions: random sequences differ within
  // the first few, and the rare lane still equal past them continues on the int64 tokens.
  static constexpr int64_t kDepth = 16;

  // same: Y is X (pdist).
  LinearScan(const Params& p, const Side& X, const Side& Y, int64_t B, bool same)
      : X_(X), Y_(Y), count_all_(p.metric == Metric::hamming), rev_(p.metric == Metric::postfix), N_(X.rows),
        M_(Y.rows) {
    auto longest = [&](const Side& S) {
      int64_t mx = 0;
      for (int64_t q = 0; q < B * S.rows; ++q) mx = std::max(mx, S.len[q]);
      return mx;
    };
    const int64_t cap = count_all_ ? std::numeric_limits<int64_t>::max() : kDepth;
    Dx_ = std::max<int64_t>(std::min(longest(X), cap), 1);
    Dy_ = std::min(longest(Y), cap);
    Mp_ = M_ + kChunk * W;  // the loads of a chunk starting at any column < M stay inside the row
    // Position t of a sequence of n tokens (from the end for postfix).
    auto pos = [&](int64_t n, int64_t t) { return rev_ ? n - 1 - t : t; };
    auto laid_out = [&](const Side& S, int64_t depth, auto&& f) {
      for (int64_t q = 0; q < B * S.rows; ++q) {
        const int64_t n = std::min(S.len[q], depth);
        for (int64_t t = 0; t < n; ++t) f(S.tok[q * S.L + pos(S.len[q], t)]);
      }
    };
    TokenIds ids;
    ids.build([&](auto&& f) {
      laid_out(X, Dx_, f);
      if (!same) laid_out(Y, Dy_, f);
    });
    x_.assign(B * N_ * Dx_, 0);
    xlen_.resize(B * N_);
    for (int64_t q = 0; q < B * N_; ++q) {
      const int64_t m = X.len[q];
      const int64_t* s = X.tok + q * X.L;
      xlen_[q] = int32_t(m);
      for (int64_t t = 0; t < std::min(m, Dx_); ++t) x_[q * Dx_ + t] = ids(s[pos(m, t)]);
    }
    yt_.assign(B * std::max<int64_t>(Dy_, 1) * Mp_, 0);
    ylen_.assign(B * Mp_, 0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < M_; ++j) {
        const int64_t n = Y.length(b, j);
        const int64_t* s = Y.row(b, j);
        ylen_[b * Mp_ + j] = int32_t(n);
        int32_t* col = &yt_[b * Dy_ * Mp_ + j];
        for (int64_t t = 0; t < std::min(n, Dy_); ++t) col[t * Mp_] = ids(s[pos(n, t)]);
      }
  }

  // d(x_i, y_j) of batch element b for the columns j in [c0, c1): dst[j - c0].
  template <typename V>
  void row(int64_t b, int64_t i, int64_t c0, int64_t c1, V* dst) const {
    const int32_t* xr = &x_[(b * N_ + i) * Dx_];
    const int32_t m = xlen_[b * N_ + i];
    const int32_t* yt = &yt_[b * Dy_ * Mp_];
    const int32_t* yl = &ylen_[b * Mp_];
    const Vec mv(m), zero(0), one(1);
    const int64_t kmax = std::min<int64_t>(m, Dy_);  // the positions any lane may compare
    if (count_all_) {
      // hamming: position-major over a chunk of kChunk vectors (the layout's rows stream
      // through, the counters stay in registers)
      for (int64_t j0 = c0; j0 < c1; j0 += kChunk * W) {
        Vec same[kChunk], k[kChunk];
        for (int v = 0; v < kChunk; ++v) {
          k[v] = at::vec::minimum(Vec::loadu(yl + j0 + v * W), mv);
          same[v] = zero;
        }
        Vec tv = zero;
        for (int64_t t = 0; t < kmax; ++t) {
          const Vec xt(xr[t]);
          const int32_t* yrow = yt + t * Mp_ + j0;
          for (int v = 0; v < kChunk; ++v) same[v] = same[v] - ((Vec::loadu(yrow + v * W) == xt) & (tv < k[v]));
          tv = tv + one;
        }
        for (int v = 0; v < kChunk && j0 + v * W < c1; ++v)
          emit(Vec::loadu(yl + j0 + v * W), mv, same[v], j0 + v * W, c0, c1, dst);
      }
      return;
    }
    alignas(64) int32_t sbuf[W], abuf[W];
    for (int64_t j0 = c0; j0 < c1; j0 += W) {
      const Vec n = Vec::loadu(yl + j0);
      const Vec k = at::vec::minimum(n, mv);  // positions to compare, per lane
      Vec same = zero;                        // equal positions counted, per lane
      Vec active = zero < k;
      int64_t t = 0;
      for (; t < kmax && any_set(active); ++t) {
        const Vec eq = (Vec::loadu(yt + t * Mp_ + j0) == Vec(xr[t])) & active;
        same = same - eq;  // eq is -1 where equal
        active = eq & (Vec(int32_t(t + 1)) < k);
      }
      if (t == Dy_ && any_set(active)) {  // lanes equal through the laid-out depth
        active.store(abuf);
        same.store(sbuf);
        for (int q = 0; q < W && j0 + q < c1; ++q)
          if (abuf[q]) sbuf[q] = int32_t(common_from(b, i, j0 + q, sbuf[q]));
        same = Vec::loadu(sbuf);
      }
      emit(n, mv, same, j0, c0, c1, dst);
    }
  }

 private:
  static constexpr int kChunk = 8;  // hamming: vectors of columns per pass over the positions

  // The distances max(m, n) - same of the columns [j0, j0 + W) (those below c1) into dst.
  template <typename V>
  static void emit(const Vec& n, const Vec& mv, const Vec& same, int64_t j0, int64_t c0, int64_t c1, V* dst) {
    alignas(64) int32_t dbuf[W], mbuf[W];
    const Vec mx = at::vec::maximum(n, mv);
    (mx - same).store(dbuf);
    const int64_t cnt = std::min<int64_t>(W, c1 - j0);
    V* out = dst + (j0 - c0);
    if constexpr (std::is_same_v<V, double>) {
      mx.store(mbuf);
      for (int64_t q = 0; q < cnt; ++q) out[q] = mbuf[q] ? double(dbuf[q]) / double(mbuf[q]) : 0.0;
    } else if (cnt == W) {
      for (int q = 0; q < W; ++q) out[q] = dbuf[q];
    } else {
      for (int64_t q = 0; q < cnt; ++q) out[q] = dbuf[q];
    }
  }

  // The common prefix (postfix) of x_i and y_j, known to be at least `from` long.
  int64_t common_from(int64_t b, int64_t i, int64_t j, int64_t from) const {
    const int64_t m = X_.length(b, i), n = Y_.length(b, j), k = std::min(m, n);
    const int64_t* s = X_.row(b, i);
    const int64_t* u = Y_.row(b, j);
    int64_t c = from;
    if (rev_)
      while (c < k && s[m - 1 - c] == u[n - 1 - c]) ++c;
    else
      while (c < k && s[c] == u[c]) ++c;
    return c;
  }

  Side X_, Y_;
  bool count_all_, rev_;
  int64_t N_, M_, Dx_ = 1, Dy_ = 0, Mp_ = 0;
  std::vector<int32_t> x_, xlen_, yt_, ylen_;  // x_ [B*N][Dx_]; yt_ [B][Dy_][Mp_]; ylen_ [B][Mp_]
};

}  // namespace CPU_CAPABILITY
}  // namespace tp::seq
