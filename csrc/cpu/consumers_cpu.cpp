// CPU consumers = tile producer + fold, compiled per CPU capability.
//
// Forward: parallel over (batch, row block); each work unit walks the column blocks,
// producing a tile in thread-local scratch and folding it into its rows' state.
// Backward: two streamed sweeps that recompute tiles. The first walks the operator's own
// orientation and accumulates the gradient of the row operand; the second walks the
// flipped operator and accumulates the column operand's (and V's). Nothing N x M is kept.
#include "cpu/sources.h"
// sources.h must come first: it opens the inline capability namespace.
#include "cpu/consumers.h"

#include <cstdlib>

namespace tp::cpu {
inline namespace CPU_CAPABILITY {
namespace {

template <typename T>
using Sources = std::vector<engine::SourcePtr<T>>;

template <typename T>
const T* ptr_or_null(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

template <typename T>
Sources<T> make_sources(const Request& req, bool flipped) {
  const int64_t B = req.x.size(0), n = req.x.size(1), m = req.y.size(1), d = req.x.size(2);
  SourceSpec spec = req.spec;
  spec.flipped = flipped;
  const T* x = req.x.data_ptr<T>();
  const T* y = req.y.data_ptr<T>();
  const T* a = ptr_or_null<T>(req.a);
  const T* b = ptr_or_null<T>(req.b);
  Sources<T> out;
  out.reserve(B);
  for (int64_t i = 0; i < B; ++i) {
    Operands<T> ops;
    ops.x = x + i * n * d;
    ops.y = y + i * m * d;
    ops.a = a ? a + i * n : nullptr;
    ops.b = b ? b + i * m : nullptr;
    ops.n = n;
    ops.m = m;
    ops.d = d;
    out.push_back(make_source<T>(spec, ops));
  }
  return out;
}

// f(batch, source, r0, nr) for every row block, in parallel.
template <typename T, typename F>
void for_each_row_block(const Sources<T>& src, const F& f) {
  if (src.empty() || src[0]->rows() == 0) return;
  const int64_t rows = src[0]->rows(), rb = src[0]->row_block();
  const int64_t nrb = (rows + rb - 1) / rb;
  const int64_t units = int64_t(src.size()) * nrb;
  at::parallel_for(0, units, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / nrb, r0 = (u % nrb) * rb;
      f(b, *src[b], r0, std::min(rb, rows - r0));
    }
  });
}

template <typename T, typename F>
void for_each_col_block(const TileSource<T>& s, const F& f) {
  const int64_t cols = s.cols(), cb = s.col_block();
  for (int64_t c0 = 0; c0 < cols; c0 += cb) f(c0, std::min(cb, cols - c0));
}

// Column-side gradients of a one-pass backward are accumulated per thread and summed at
// the end; above this many bytes of such buffers the backward falls back to two sweeps
// (the second over the flipped operator), which need none.
// TORCHPAIR_BACKWARD_BUFFER_BYTES overrides it (the tests use 0 to exercise two sweeps).
int64_t column_buffer_budget() {
  if (const char* env = std::getenv("TORCHPAIR_BACKWARD_BUFFER_BYTES")) return std::atoll(env);
  return int64_t(256) << 20;
}

// The backward sweep(s) of a row consumer. For each tile, gup(b, flipped, r0, nr, c0, nc,
// buf, ld) writes dL/dK in the sweep's orientation. With extra_cols > 0 (dV of matmul), the
// consumer also needs the operator's columns' share: extra(b, thread, flipped, r0, nr, c0,
// nc, values, ldv, dextra) where dextra points at the columns' [cols, extra_cols] buffer of
// this thread (one pass), or at the rows' own rows (two passes, flipped sweep).
template <typename T, typename Gup, typename Extra>
Grads4 backward(const Request& req, const std::array<bool, 4>& mask, int64_t extra_cols, at::Tensor* dextra_out,
                const Gup& gup, const Extra& extra) {
  Grads4 g;
  const int64_t B = req.batch(), rows = req.rows(), cols = req.cols(), d = req.x.size(2);
  const bool rows_are_y = req.spec.flipped;
  const bool need_x = mask[0] || mask[2], need_y = mask[1] || mask[3];
  const bool need_rows = rows_are_y ? need_y : need_x, need_cols = rows_are_y ? need_x : need_y;
  const bool need_extra = extra_cols > 0;
  const auto opts = req.x.options();
  const at::Tensor& row_t = rows_are_y ? req.y : req.x;
  const at::Tensor& col_t = rows_are_y ? req.x : req.y;
  const at::Tensor& rside_t = rows_are_y ? req.b : req.a;
  const at::Tensor& cside_t = rows_are_y ? req.a : req.b;
  at::Tensor drow, rside, dcol, cside, dextra;
  if (need_rows) {
    drow = at::zeros_like(row_t);
    if (rside_t.defined()) rside = at::zeros_like(rside_t);
  }
  const int nthreads = at::get_num_threads();
  const int64_t col_bytes = int64_t(nthreads) * B * cols * ((need_cols ? d + 1 : 0) + extra_cols) * int64_t(sizeof(T));
  const bool one_pass = col_bytes <= column_buffer_budget();

  if (one_pass) {
    at::Tensor dcol_t, cside_tl, extra_tl;  // per-thread column accumulators
    if (need_cols) {
      dcol_t = at::zeros({nthreads, B, cols, d}, opts);
      if (cside_t.defined()) cside_tl = at::zeros({nthreads, B, cols}, opts);
    }
    if (need_extra) extra_tl = at::zeros({nthreads, B, cols, extra_cols}, opts);
    auto src = make_sources<T>(req, req.spec.flipped);
    for_each_row_block<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
      const int tid = at::get_thread_num();
      const int64_t ld = s.col_block();
      T* gbuf = scratch<T>(0, s.row_block() * ld);
      T* vbuf = need_extra ? scratch<T>(1, s.row_block() * ld) : nullptr;
      T* dr = drow.defined() ? drow.data_ptr<T>() + (b * rows + r0) * d : nullptr;
      T* rs = rside.defined() ? rside.data_ptr<T>() + b * rows + r0 : nullptr;
      T* dc = dcol_t.defined() ? dcol_t.data_ptr<T>() + (int64_t(tid) * B + b) * cols * d : nullptr;
      T* cs = cside_tl.defined() ? cside_tl.data_ptr<T>() + (int64_t(tid) * B + b) * cols : nullptr;
      T* ex = extra_tl.defined() ? extra_tl.data_ptr<T>() + (int64_t(tid) * B + b) * cols * extra_cols : nullptr;
      for_each_col_block<T>(s, [&](int64_t c0, int64_t nc) {
        gup(b, req.spec.flipped, r0, nr, c0, nc, gbuf, ld);
        s.vjp(r0, nr, c0, nc, gbuf, ld, dr, rs, dc ? dc + c0 * d : nullptr, cs ? cs + c0 : nullptr, vbuf, ld);
        if (need_extra) extra(b, req.spec.flipped, r0, nr, c0, nc, vbuf, ld, ex + c0 * extra_cols);
      });
    });
    if (need_cols) {
      dcol = dcol_t.sum(0);
      if (cside_tl.defined()) cside = cside_tl.sum(0);
    }
    if (need_extra) dextra = extra_tl.sum(0);
  } else {
    // Pass 1: the operator's own orientation, row gradients only.
    if (need_rows) {
      auto src = make_sources<T>(req, req.spec.flipped);
      for_each_row_block<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
        const int64_t ld = s.col_block();
        T* gbuf = scratch<T>(0, s.row_block() * ld);
        T* dr = drow.data_ptr<T>() + (b * rows + r0) * d;
        T* rs = rside.defined() ? rside.data_ptr<T>() + b * rows + r0 : nullptr;
        for_each_col_block<T>(s, [&](int64_t c0, int64_t nc) {
          gup(b, req.spec.flipped, r0, nr, c0, nc, gbuf, ld);
          s.vjp(r0, nr, c0, nc, gbuf, ld, dr, rs, nullptr, nullptr, nullptr, ld);
        });
      });
    }
    // Pass 2: the flipped operator; its rows are our columns.
    if (need_cols || need_extra) {
      if (need_cols) {
        dcol = at::zeros_like(col_t);
        if (cside_t.defined()) cside = at::zeros_like(cside_t);
      }
      if (need_extra) dextra = at::zeros({B, cols, extra_cols}, opts);
      auto src = make_sources<T>(req, !req.spec.flipped);
      for_each_row_block<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
        const int64_t ld = s.col_block();
        T* gbuf = scratch<T>(0, s.row_block() * ld);
        T* vbuf = need_extra ? scratch<T>(1, s.row_block() * ld) : nullptr;
        T* dr = dcol.defined() ? dcol.data_ptr<T>() + (b * cols + r0) * d : nullptr;
        T* rs = cside.defined() ? cside.data_ptr<T>() + b * cols + r0 : nullptr;
        T* ex = need_extra ? dextra.data_ptr<T>() + (b * cols + r0) * extra_cols : nullptr;
        for_each_col_block<T>(s, [&](int64_t c0, int64_t nc) {
          gup(b, !req.spec.flipped, r0, nr, c0, nc, gbuf, ld);
          if (dr)
            s.vjp(r0, nr, c0, nc, gbuf, ld, dr, rs, nullptr, nullptr, vbuf, ld);
          else
            s.produce(r0, nr, c0, nc, vbuf, ld);
          if (need_extra) extra(b, !req.spec.flipped, r0, nr, c0, nc, vbuf, ld, ex);
        });
      });
    }
  }
  (rows_are_y ? g[1] : g[0]) = drow;
  (rows_are_y ? g[3] : g[2]) = rside;
  (rows_are_y ? g[0] : g[1]) = dcol;
  (rows_are_y ? g[2] : g[3]) = cside;
  if (dextra_out) *dextra_out = dextra;
  return g;
}

struct NoExtra {
  template <typename T>
  void operator()(int64_t, bool, int64_t, int64_t, int64_t, int64_t, const T*, int64_t, T*) const {}
};

// buf[r * ld + c] = a_r . b_c for [nr, k] and [nc, k] row-major a, b (an outer product
// when k = 1, where a BLAS call costs more than it computes).
template <typename T>
void outer_or_gemm(int64_t nr, int64_t nc, int64_t k, const T* a, const T* b, T* buf, int64_t ld) {
  if (k == 1) {
    using V = Vec<T>;
    constexpr int64_t L = V::size();
    for (int64_t r = 0; r < nr; ++r) {
      const V ar(a[r]);
      for (int64_t c = 0; c < nc; c += L) {
        const int64_t count = std::min<int64_t>(L, nc - c);
        (ar * V::loadu(b + c, count)).store(buf + r * ld + c, count);
      }
    }
    return;
  }
  engine::gemm_nt<T>(nr, nc, k, T(1), a, k, b, k, T(0), buf, ld);
}

template <typename T>
at::Tensor dense_impl(const Request& req) {
  const int64_t B = req.x.size(0);
  const int64_t rows = req.spec.flipped ? req.y.size(1) : req.x.size(1);
  const int64_t cols = req.spec.flipped ? req.x.size(1) : req.y.size(1);
  at::Tensor out = at::empty({B, rows, cols}, req.x.options());
  if (out.numel() == 0) return out;
  engine::advise_huge_pages(out.data_ptr(), out.nbytes());
  auto src = make_sources<T>(req, req.spec.flipped);
  T* o = out.data_ptr<T>();
  for_each_row_block<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
    const int64_t ld = s.col_block();
    T* tile = s.writes_exact_columns() ? nullptr : scratch<T>(0, s.row_block() * ld);
    for_each_col_block<T>(s, [&](int64_t c0, int64_t nc) {
      T* dst = o + (b * rows + r0) * cols + c0;
      if (!tile) return s.produce(r0, nr, c0, nc, dst, cols);
      s.produce(r0, nr, c0, nc, tile, ld);
      for (int64_t r = 0; r < nr; ++r) std::copy(tile + r * ld, tile + r * ld + nc, dst + r * cols);
    });
  });
  return out;
}

template <typename T>
Grads4 dense_backward_impl(const at::Tensor& grad_in, const Request& req, std::array<bool, 4> mask) {
  const at::Tensor grad = grad_in.contiguous();
  const T* gp = grad.data_ptr<T>();
  const int64_t rows = grad.size(1), cols = grad.size(2);  // the operator's orientation
  return backward<T>(
      req, mask, 0, nullptr,
      [&](int64_t b, bool flipped, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
        const T* base = gp + b * rows * cols;
        if (flipped == req.spec.flipped) {
          for (int64_t r = 0; r < nr; ++r)
            std::copy(base + (r0 + r) * cols + c0, base + (r0 + r) * cols + c0 + nc, buf + r * ld);
        } else {  // the flipped sweep walks the transpose of grad
          for (int64_t r = 0; r < nr; ++r)
            for (int64_t c = 0; c < nc; ++c) buf[r * ld + c] = base[(c0 + c) * cols + r0 + r];
        }
      },
      NoExtra{});
}

template <typename T>
at::Tensor matmul_impl(const Request& req, const at::Tensor& v_in) {
  const at::Tensor v = v_in.contiguous();
  const int64_t B = req.x.size(0);
  const int64_t rows = req.spec.flipped ? req.y.size(1) : req.x.size(1);
  const int64_t cols = req.spec.flipped ? req.x.size(1) : req.y.size(1);
  const int64_t C = v.size(2);
  at::Tensor out = at::zeros({B, rows, C}, req.x.options());
  if (out.numel() == 0 || cols == 0) return out;
  auto src = make_sources<T>(req, req.spec.flipped);
  const T* vp = v.data_ptr<T>();
  T* o = out.data_ptr<T>();
  for_each_row_block<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
    const int64_t ld = s.col_block();
    T* tile = scratch<T>(0, s.row_block() * ld);
    T* acc = o + (b * rows + r0) * C;
    const T* vb = vp + b * cols * C;
    for_each_col_block<T>(s, [&](int64_t c0, int64_t nc) {
      s.produce(r0, nr, c0, nc, tile, ld);
      if (C == 1) {
        using V = Vec<T>;
        constexpr int64_t L = V::size();
        for (int64_t r = 0; r < nr; ++r) {
          V sum(T(0));
          const T* t = tile + r * ld;
          for (int64_t c = 0; c < nc; c += L) {
            const int64_t count = std::min<int64_t>(L, nc - c);
            sum = at::vec::fmadd(V::loadu(t + c, count), V::loadu(vb + c0 + c, count), sum);
          }
          acc[r] += hsum(sum);
        }
      } else {
        engine::gemm_nn<T>(nr, C, nc, T(1), tile, ld, vb + c0 * C, C, T(1), acc, C);
      }
    });
  });
  return out;
}

template <typename T>
Grads5 matmul_backward_impl(const at::Tensor& grad_in, const Request& req, const at::Tensor& v_in,
                            std::array<bool, 5> mask) {
  const at::Tensor grad = grad_in.contiguous(), v = v_in.contiguous();
  const int64_t rows = grad.size(1), C = grad.size(2);
  const int64_t cols = v.size(1);
  const T* gp = grad.data_ptr<T>();
  const T* vp = v.data_ptr<T>();
  at::Tensor dv;
  auto g = backward<T>(
      req, {mask[0], mask[1], mask[2], mask[3]}, mask[4] ? C : 0, &dv,
      [&](int64_t b, bool flipped, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
        const T* gb = gp + b * rows * C;
        const T* vb = vp + b * cols * C;
        if (flipped == req.spec.flipped)  // dL/dK_rc = grad_r . v_c
          outer_or_gemm<T>(nr, nc, C, gb + r0 * C, vb + c0 * C, buf, ld);
        else  // the flipped sweep: dL/dK^T_rc = v_r . grad_c
          outer_or_gemm<T>(nr, nc, C, vb + r0 * C, gb + c0 * C, buf, ld);
      },
      [&](int64_t b, bool flipped, int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* values, int64_t ldv,
          T* dextra) {
        if (flipped == req.spec.flipped)  // dV[c] += sum_r K(r, c) grad[r]
          engine::gemm_tn<T>(nc, C, nr, T(1), values, ldv, gp + (b * rows + r0) * C, C, T(1), dextra, C);
        else  // the flipped sweep's rows are V's rows: dV[r] += sum_c K^T(r, c) grad[c]
          engine::gemm_nn<T>(nr, C, nc, T(1), values, ldv, gp + (b * rows + c0) * C, C, T(1), dextra, C);
      });
  return {g[0], g[1], g[2], g[3], dv};
}

template <typename T>
at::Tensor row_sum_impl(const Request& req) {
  const int64_t B = req.x.size(0);
  const int64_t rows = req.spec.flipped ? req.y.size(1) : req.x.size(1);
  at::Tensor out = at::zeros({B, rows}, req.x.options());
  if (out.numel() == 0) return out;
  auto src = make_sources<T>(req, req.spec.flipped);
  T* o = out.data_ptr<T>();
  for_each_row_block<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
    using V = Vec<T>;
    constexpr int64_t L = V::size();
    const int64_t ld = s.col_block();
    T* tile = scratch<T>(0, s.row_block() * ld);
    for_each_col_block<T>(s, [&](int64_t c0, int64_t nc) {
      s.produce(r0, nr, c0, nc, tile, ld);
      for (int64_t r = 0; r < nr; ++r) {
        V sum(T(0));
        for (int64_t c = 0; c < nc; c += L) sum = sum + V::loadu(tile + r * ld + c, std::min<int64_t>(L, nc - c));
        o[b * rows + r0 + r] += hsum(sum);
      }
    });
  });
  return out;
}

template <typename T>
Grads4 row_sum_backward_impl(const at::Tensor& grad_in, const Request& req, std::array<bool, 4> mask) {
  const at::Tensor grad = grad_in.contiguous();  // [B, rows]
  const int64_t rows = grad.size(1);
  const T* gp = grad.data_ptr<T>();
  return backward<T>(
      req, mask, 0, nullptr,
      [&](int64_t b, bool flipped, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
        const T* gb = gp + b * rows;
        for (int64_t r = 0; r < nr; ++r)
          for (int64_t c = 0; c < nc; ++c) buf[r * ld + c] = flipped == req.spec.flipped ? gb[r0 + r] : gb[c0 + c];
      },
      NoExtra{});
}

}  // namespace
}  // namespace CPU_CAPABILITY

namespace TP_ISA_NAMESPACE {

#define TP_FLOATING(name, ...) \
  AT_DISPATCH_FLOATING_TYPES(req.x.scalar_type(), name, [&] { return __VA_ARGS__; })

at::Tensor dense(const Request& req) { return TP_FLOATING("torchpair_dense", dense_impl<scalar_t>(req)); }
Grads4 dense_backward(const at::Tensor& grad, const Request& req, std::array<bool, 4> mask) {
  return TP_FLOATING("torchpair_dense_backward", dense_backward_impl<scalar_t>(grad, req, mask));
}
at::Tensor matmul(const Request& req, const at::Tensor& v) {
  return TP_FLOATING("torchpair_matmul", matmul_impl<scalar_t>(req, v));
}
Grads5 matmul_backward(const at::Tensor& grad, const Request& req, const at::Tensor& v, std::array<bool, 5> mask) {
  return TP_FLOATING("torchpair_matmul_backward", matmul_backward_impl<scalar_t>(grad, req, v, mask));
}
at::Tensor row_sum(const Request& req) { return TP_FLOATING("torchpair_row_sum", row_sum_impl<scalar_t>(req)); }
Grads4 row_sum_backward(const at::Tensor& grad, const Request& req, std::array<bool, 4> mask) {
  return TP_FLOATING("torchpair_row_sum_backward", row_sum_backward_impl<scalar_t>(grad, req, mask));
}

#undef TP_FLOATING
}  // namespace TP_ISA_NAMESPACE
}  // namespace tp::cpu
