#pragma once
// Products of a tile with a few (C) columns, in registers: the folds of `matmul` and
// `softmax_matmul` and their backward. A GEMM call with N = C of 2..16 spends more in its
// packing and edge handling than in arithmetic; these kernels read the tile once and keep
// one vector accumulator per output column (or per tile row) in registers instead.
//
// The C columns arrive transposed ([C, cols], one contiguous row per output column, made
// once per call by the consumer), so every accumulator loads contiguous lanes of the tile
// and of its column. Kernels are templates on the column count (a chunk of at most
// kSmallChunk, so the accumulators, the broadcasts and the loads all fit the register file
// of AVX2 as well as AVX512); a wider C is walked in chunks.
//
//   SmallRowDot   acc[r, j] += sum_c A[r, c] Bt[j, c]   (K @ V, forward; one row block)
//   small_row_dot                                       (the same, one tile, no state)
//   small_outer   out[r, c]  = sum_j G[r, j] Bt[j, c]   (dL/dK = grad_r . v_c)
//   small_col_dot out[c, j] += sum_r A[r, c] G[r, j]    (dV = K^T grad)
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include <algorithm>
#include <cstdlib>
#include <type_traits>

#include "cpu/sources.h"

namespace tp::cpu {
inline namespace CPU_CAPABILITY {

constexpr int64_t kSmallChunk = 8;

// Largest C that takes these kernels; wider products go to the GEMM.
// TORCHPAIR_SMALL_PRODUCT_MAX overrides it (0 sends every C to the GEMM): the benchmark
// compares both paths in one process with it.
inline int64_t small_product_max() {
  if (const char* env = std::getenv("TORCHPAIR_SMALL_PRODUCT_MAX")) return std::atoll(env);
  return 16;
}
inline bool use_small_product(int64_t C) { return C >= 1 && C <= small_product_max(); }

namespace small_detail {

// Calls f(std::integral_constant<int, K>{}) for a runtime 1 <= k <= kSmallChunk.
template <typename F>
inline void dispatch_chunk(int64_t k, const F& f) {
  switch (k) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    default: return f(std::integral_constant<int, 8>{});
  }
}

// Rows handled together: they share each load of Bt (or of A), as long as their
// accumulators still fit beside the loads (16 vector registers below AVX512, 32 with it).
template <typename T, int K>
constexpr int rows_together() {
  constexpr int regs = sizeof(Vec<T>) >= 64 ? 32 : 16;
  return (4 * K + 6 <= regs) ? 4 : (2 * K + 4 <= regs) ? 2 : 1;
}

// vacc[(r * C + j)] += A[r, 0:nc] * Bt[j, 0:nc] lane-wise, for K columns j0..j0+K.
template <typename T, int K, int R>
inline void row_dot_rows(int64_t nc, const T* a, int64_t lda, const T* bt, int64_t ldb, Vec<T>* vacc, int64_t C) {
  using V = Vec<T>;
  constexpr int64_t L = V::size();
  V s[R][K];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < K; ++j) s[i][j] = vacc[i * C + j];
  int64_t c = 0;
  for (; c + L <= nc; c += L) {
    V x[R];
    for (int i = 0; i < R; ++i) x[i] = V::loadu(a + i * lda + c);
    for (int j = 0; j < K; ++j) {
      const V b = V::loadu(bt + j * ldb + c);
      for (int i = 0; i < R; ++i) s[i][j] = at::vec::fmadd(x[i], b, s[i][j]);
    }
  }
  if (c < nc) {  // the tail: lanes past nc load as 0 in both operands
    const int64_t count = nc - c;
    V x[R];
    for (int i = 0; i < R; ++i) x[i] = V::loadu(a + i * lda + c, count);
    for (int j = 0; j < K; ++j) {
      const V b = V::loadu(bt + j * ldb + c, count);
      for (int i = 0; i < R; ++i) s[i][j] = at::vec::fmadd(x[i], b, s[i][j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < K; ++j) vacc[i * C + j] = s[i][j];
}

template <typename T>
inline T reduce_lanes(const Vec<T>& v) {
  return at::vec::vec_reduce_all<T>([](const Vec<T>& p, const Vec<T>& q) { return p + q; }, v);
}

}  // namespace small_detail

// The forward fold of one row block: lane-wise accumulators for nr rows x C columns live
// in per-thread scratch across the column blocks (reduced across lanes once, at finish),
// so a column block costs only its multiply-adds.
template <typename T>
class SmallRowDot {
 public:
  using V = Vec<T>;
  // scratch slot `slot` holds the accumulators for the row block's lifetime.
  SmallRowDot(int slot, int64_t nr, int64_t C) : nr_(nr), C_(C), vacc_(aligned_vectors_impl<T>(slot, nr * C)) {
    std::fill(vacc_, vacc_ + nr * C, V(T(0)));
  }

  // acc[r, j] += sum_c A[r, c] Bt[j, c] over c in [0, nc); A [nr, nc] (stride lda), Bt
  // [C, nc] (stride ldb).
  void add(int64_t nc, const T* a, int64_t lda, const T* bt, int64_t ldb) {
    for (int64_t j0 = 0; j0 < C_; j0 += kSmallChunk) {
      small_detail::dispatch_chunk(std::min(kSmallChunk, C_ - j0), [&](auto kc) {
        constexpr int K = decltype(kc)::value;
        constexpr int R = small_detail::rows_together<T, K>();
        int64_t r = 0;
        for (; r + R <= nr_; r += R)
          small_detail::row_dot_rows<T, K, R>(nc, a + r * lda, lda, bt + j0 * ldb, ldb, vacc_ + r * C_ + j0, C_);
        for (; r < nr_; ++r)
          small_detail::row_dot_rows<T, K, 1>(nc, a + r * lda, lda, bt + j0 * ldb, ldb, vacc_ + r * C_ + j0, C_);
      });
    }
  }

  // Multiplies row r's accumulators by f (softmax's rescale to a new running maximum).
  void scale_row(int64_t r, T f) {
    const V vf(f);
    for (int64_t j = 0; j < C_; ++j) vacc_[r * C_ + j] = vacc_[r * C_ + j] * vf;
  }

  // out[r * C + j] += the accumulated sum.
  void finish(T* out) const {
    for (int64_t i = 0; i < nr_ * C_; ++i) out[i] += small_detail::reduce_lanes<T>(vacc_[i]);
  }

 private:
  int64_t nr_, C_;
  V* vacc_;
};

// acc[r * C + j] += sum_c A[r, c] Bt[j, c] for one tile (no state kept across tiles).
template <typename T>
void small_row_dot(int64_t nr, int64_t nc, int64_t C, const T* a, int64_t lda, const T* bt, int64_t ldb, T* acc) {
  using V = Vec<T>;
  V vacc[kSmallChunk];
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t j0 = 0; j0 < C; j0 += kSmallChunk) {
      const int64_t k = std::min(kSmallChunk, C - j0);
      std::fill(vacc, vacc + k, V(T(0)));
      small_detail::dispatch_chunk(k, [&](auto kc) {
        small_detail::row_dot_rows<T, decltype(kc)::value, 1>(nc, a + r * lda, lda, bt + j0 * ldb, ldb, vacc, k);
      });
      for (int64_t j = 0; j < k; ++j) acc[r * C + j0 + j] += small_detail::reduce_lanes<T>(vacc[j]);
    }
}

// out[r * ld + c] = sum_j G[r, j] Bt[j, c] for r < nr, c < nc: G [nr, C] row-major, Bt
// [C, nc] (stride ldb). Each output row is written once per chunk of C.
template <typename T>
void small_outer(int64_t nr, int64_t nc, int64_t C, const T* g, const T* bt, int64_t ldb, T* out, int64_t ld) {
  using V = Vec<T>;
  constexpr int64_t L = V::size();
  for (int64_t j0 = 0; j0 < C; j0 += kSmallChunk) {
    const bool first = j0 == 0;
    small_detail::dispatch_chunk(std::min(kSmallChunk, C - j0), [&](auto kc) {
      constexpr int K = decltype(kc)::value;
      constexpr int R = small_detail::rows_together<T, K>() >= 2 ? 2 : 1;
      auto rows = [&](auto rc, int64_t r) {
        constexpr int RR = decltype(rc)::value;
        V w[RR][K];
        for (int i = 0; i < RR; ++i)
          for (int j = 0; j < K; ++j) w[i][j] = V(g[(r + i) * C + j0 + j]);
        for (int64_t c = 0; c < nc; c += L) {
          const int64_t count = std::min<int64_t>(L, nc - c);
          V s[RR];
          for (int i = 0; i < RR; ++i) s[i] = first ? V(T(0)) : V::loadu(out + (r + i) * ld + c, count);
          for (int j = 0; j < K; ++j) {
            const V b = V::loadu(bt + (j0 + j) * ldb + c, count);
            for (int i = 0; i < RR; ++i) s[i] = at::vec::fmadd(w[i][j], b, s[i]);
          }
          for (int i = 0; i < RR; ++i) s[i].store(out + (r + i) * ld + c, count);
        }
      };
      int64_t r = 0;
      for (; r + R <= nr; r += R) rows(std::integral_constant<int, R>{}, r);
      for (; r < nr; ++r) rows(std::integral_constant<int, 1>{}, r);
    });
  }
}

// out[c * C + j] += sum_r A[r, c] G[r, j] for c < nc: A [nr, nc] (stride lda), G [nr, C]
// row-major. A strip of lanes of A's columns accumulates over every row in registers, and
// is added to its C outputs once.
template <typename T>
void small_col_dot(int64_t nr, int64_t nc, int64_t C, const T* a, int64_t lda, const T* g, T* out) {
  using V = Vec<T>;
  constexpr int64_t L = V::size();
  alignas(64) T lanes[kSmallChunk][L];
  for (int64_t j0 = 0; j0 < C; j0 += kSmallChunk) {
    small_detail::dispatch_chunk(std::min(kSmallChunk, C - j0), [&](auto kc) {
      constexpr int K = decltype(kc)::value;
      for (int64_t c = 0; c < nc; c += L) {
        const int64_t count = std::min<int64_t>(L, nc - c);
        V s[K];
        for (int j = 0; j < K; ++j) s[j] = V(T(0));
        for (int64_t r = 0; r < nr; ++r) {
          const V x = V::loadu(a + r * lda + c, count);
          const T* gr = g + r * C + j0;
          for (int j = 0; j < K; ++j) s[j] = at::vec::fmadd(x, V(gr[j]), s[j]);
        }
        for (int j = 0; j < K; ++j) s[j].store(lanes[j]);
        for (int64_t l = 0; l < count; ++l)
          for (int j = 0; j < K; ++j) out[(c + l) * C + j0 + j] += lanes[j][l];
      }
    });
  }
}

// The two products of a backward through `K @ V` (matmul, softmax_matmul), for grad
// [B, rows, C] and V [B, cols, C] (contiguous), in either orientation of the sweep (own:
// the tile is K's rows r0.. x columns c0..; otherwise K^T's, whose rows are V's rows).
// Small C takes the register kernels above, with grad and V transposed once here; a wider
// C the GEMM.
template <typename T>
class ColumnProduct {
 public:
  ColumnProduct(const at::Tensor& grad, const at::Tensor& v)
      : rows_(grad.size(1)), cols_(v.size(1)), C_(grad.size(2)), small_(use_small_product(C_)),
        gp_(grad.data_ptr<T>()), vp_(v.data_ptr<T>()) {
    if (small_) {
      gt_ = grad.transpose(1, 2).contiguous();
      vt_ = v.transpose(1, 2).contiguous();
    }
  }

  // buf[r * ld + c] = dL/dK on the tile: grad_r . v_c (own) or v_r . grad_c.
  void grad_k(int64_t b, bool own, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) const {
    const T* gb = gp_ + b * rows_ * C_;
    const T* vb = vp_ + b * cols_ * C_;
    if (small_) {
      if (own)
        small_outer<T>(nr, nc, C_, gb + r0 * C_, vt_.data_ptr<T>() + b * C_ * cols_ + c0, cols_, buf, ld);
      else
        small_outer<T>(nr, nc, C_, vb + r0 * C_, gt_.data_ptr<T>() + b * C_ * rows_ + c0, rows_, buf, ld);
    } else if (own) {
      engine::gemm_nt<T>(nr, nc, C_, T(1), gb + r0 * C_, C_, vb + c0 * C_, C_, T(0), buf, ld);
    } else {
      engine::gemm_nt<T>(nr, nc, C_, T(1), vb + r0 * C_, C_, gb + c0 * C_, C_, T(0), buf, ld);
    }
  }

  // dV's share of the tile `values` (K's values, or whatever stands in for them):
  // dextra[c] += sum_r values(r, c) grad[r] (own), or, the transposed sweep's rows being
  // V's rows, dextra[r] += sum_c values(r, c) grad[c].
  void grad_v(int64_t b, bool own, int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* values, int64_t ldv,
              T* dextra) const {
    if (small_) {
      if (own)
        small_col_dot<T>(nr, nc, C_, values, ldv, gp_ + (b * rows_ + r0) * C_, dextra);
      else
        small_row_dot<T>(nr, nc, C_, values, ldv, gt_.data_ptr<T>() + b * C_ * rows_ + c0, rows_, dextra);
    } else if (own) {
      engine::gemm_tn<T>(nc, C_, nr, T(1), values, ldv, gp_ + (b * rows_ + r0) * C_, C_, T(1), dextra, C_);
    } else {
      engine::gemm_nn<T>(nr, C_, nc, T(1), values, ldv, gp_ + (b * rows_ + c0) * C_, C_, T(1), dextra, C_);
    }
  }

 private:
  int64_t rows_, cols_, C_;
  bool small_;
  const T* gp_;
  const T* vp_;
  at::Tensor gt_, vt_;  // [B, C, rows], [B, C, cols]
};

}  // namespace CPU_CAPABILITY
}  // namespace tp::cpu
