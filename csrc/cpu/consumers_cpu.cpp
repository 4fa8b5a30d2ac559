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

// The two sweeps of a backward pass. gup(b, flipped, r0, nr, c0, nc, buf, ld) fills dL/dK
// for the tile in the sweep's orientation; after(b, flipped, r0, nr, c0, nc, values, ldv)
// sees the tile's values when want_values (used for dV).
template <typename T, typename Gup, typename After>
void backward_sweeps(const Request& req, const std::array<bool, 4>& mask, bool want_values_flipped, Grads4& g,
                     const Gup& gup, const After& after) {
  const auto opts = req.x.options();
  const bool need_x = mask[0] || mask[2], need_y = mask[1] || mask[3];
  for (int pass = 0; pass < 2; ++pass) {
    const bool flipped = pass == 0 ? req.spec.flipped : !req.spec.flipped;
    const bool rows_are_y = flipped;
    const bool need_rows = rows_are_y ? need_y : need_x;
    const bool need_values = pass == 1 && want_values_flipped;
    if (!need_rows && !need_values) continue;
    const at::Tensor& row_t = rows_are_y ? req.y : req.x;
    const at::Tensor& side_t = rows_are_y ? req.b : req.a;
    at::Tensor drow = at::zeros_like(row_t);
    at::Tensor dside = side_t.defined() ? at::zeros_like(side_t) : at::Tensor();
    auto src = make_sources<T>(req, flipped);
    const int64_t rows = src.empty() ? 0 : src[0]->rows(), d = row_t.size(2);
    T* drow_p = drow.data_ptr<T>();
    T* dside_p = dside.defined() ? dside.data_ptr<T>() : nullptr;
    for_each_row_block<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
      const int64_t ld = s.col_block();
      T* gbuf = scratch<T>(0, s.row_block() * ld);
      T* vbuf = need_values ? scratch<T>(1, s.row_block() * ld) : nullptr;
      for_each_col_block<T>(s, [&](int64_t c0, int64_t nc) {
        gup(b, flipped, r0, nr, c0, nc, gbuf, ld);
        s.vjp_rows(r0, nr, c0, nc, gbuf, ld, drow_p + (b * rows + r0) * d,
                   dside_p ? dside_p + b * rows + r0 : nullptr, vbuf, ld);
        if (need_values) after(b, flipped, r0, nr, c0, nc, vbuf, ld);
      });
    });
    if (rows_are_y) {
      g[1] = drow;
      g[3] = dside;
    } else {
      g[0] = drow;
      g[2] = dside;
    }
  }
}

template <typename T>
at::Tensor dense_impl(const Request& req) {
  const int64_t B = req.x.size(0);
  const int64_t rows = req.spec.flipped ? req.y.size(1) : req.x.size(1);
  const int64_t cols = req.spec.flipped ? req.x.size(1) : req.y.size(1);
  at::Tensor out = at::empty({B, rows, cols}, req.x.options());
  if (out.numel() == 0) return out;
  auto src = make_sources<T>(req, req.spec.flipped);
  T* o = out.data_ptr<T>();
  for_each_row_block<T>(src, [&](int64_t b, const TileSource<T>& s, int64_t r0, int64_t nr) {
    const int64_t ld = s.col_block();
    T* tile = scratch<T>(0, s.row_block() * ld);
    for_each_col_block<T>(s, [&](int64_t c0, int64_t nc) {
      s.produce(r0, nr, c0, nc, tile, ld);
      for (int64_t r = 0; r < nr; ++r)
        std::copy(tile + r * ld, tile + r * ld + nc, o + (b * rows + r0 + r) * cols + c0);
    });
  });
  return out;
}

template <typename T>
Grads4 dense_backward_impl(const at::Tensor& grad_in, const Request& req, std::array<bool, 4> mask) {
  Grads4 g;
  const at::Tensor grad = grad_in.contiguous();
  const T* gp = grad.data_ptr<T>();
  const int64_t rows = grad.size(1), cols = grad.size(2);  // the operator's orientation
  backward_sweeps<T>(
      req, mask, false, g,
      [&](int64_t b, bool flipped, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
        const T* base = gp + b * rows * cols;
        if (flipped == req.spec.flipped) {
          for (int64_t r = 0; r < nr; ++r) std::copy(base + (r0 + r) * cols + c0, base + (r0 + r) * cols + c0 + nc, buf + r * ld);
        } else {  // the sweep walks the transpose of grad
          for (int64_t r = 0; r < nr; ++r)
            for (int64_t c = 0; c < nc; ++c) buf[r * ld + c] = base[(c0 + c) * cols + r0 + r];
        }
      },
      [](int64_t, bool, int64_t, int64_t, int64_t, int64_t, const T*, int64_t) {});
  return g;
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
  at::Tensor dv = mask[4] ? at::zeros_like(v) : at::Tensor();
  T* dvp = mask[4] ? dv.data_ptr<T>() : nullptr;
  Grads4 g;
  backward_sweeps<T>(
      req, {mask[0], mask[1], mask[2], mask[3]}, mask[4], g,
      [&](int64_t b, bool flipped, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
        const T* gb = gp + b * rows * C;
        const T* vb = vp + b * cols * C;
        if (flipped == req.spec.flipped)  // dL/dK_rc = grad_r . v_c
          engine::gemm_nt<T>(nr, nc, C, T(1), gb + r0 * C, C, vb + c0 * C, C, T(0), buf, ld);
        else  // the transposed tile: dL/dK_cr = v_r . grad_c
          engine::gemm_nt<T>(nr, nc, C, T(1), vb + r0 * C, C, gb + c0 * C, C, T(0), buf, ld);
      },
      [&](int64_t b, bool, int64_t r0, int64_t nr, int64_t c0, int64_t nc, const T* values, int64_t ldv) {
        // dV[r] += sum_c K^T(r, c) grad[c]; the sweep's rows are the operator's columns.
        engine::gemm_nn<T>(nr, C, nc, T(1), values, ldv, gp + (b * rows + c0) * C, C, T(1),
                           dvp + (b * cols + r0) * C, C);
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
  Grads4 g;
  backward_sweeps<T>(
      req, mask, false, g,
      [&](int64_t b, bool flipped, int64_t r0, int64_t nr, int64_t c0, int64_t nc, T* buf, int64_t ld) {
        const T* gb = gp + b * rows;
        for (int64_t r = 0; r < nr; ++r)
          for (int64_t c = 0; c < nc; ++c) buf[r * ld + c] = flipped == req.spec.flipped ? gb[r0 + r] : gb[c0 + c];
      },
      [](int64_t, bool, int64_t, int64_t, int64_t, int64_t, const T*, int64_t) {});
  return g;
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
