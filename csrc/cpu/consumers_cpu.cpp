// CPU consumers = tile producer + fold, compiled per CPU capability.
//
// Forward: parallel over (batch, row block); each work unit walks the column blocks,
// producing a tile in thread-local scratch and folding it into its rows' state.
// Backward: two streamed sweeps that recompute tiles. The first walks the operator's own
// orientation and accumulates the gradient of the row operand; the second walks the
// flipped operator and accumulates the column operand's (and V's). Nothing N x M is kept.
#include "cpu/sweep.h"
// sweep.h (through sources.h) must come first: it opens the inline capability namespace.
#include "cpu/consumers.h"

namespace tp::cpu {
inline namespace CPU_CAPABILITY {
namespace {

template <typename T>
at::Tensor dense_impl(const Request& req) {
  const int64_t B = req.x.size(0);
  const int64_t rows = req.spec.flipped ? req.y.size(1) : req.x.size(1);
  const int64_t cols = req.spec.flipped ? req.x.size(1) : req.y.size(1);
  at::Tensor out = at::empty({B, rows, cols}, req.value_options());
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
  at::Tensor out = at::zeros({B, rows, C}, req.value_options());
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
  at::Tensor out = at::zeros({B, rows}, req.value_options());
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
  AT_DISPATCH_FLOATING_TYPES(req.value_type, name, [&] { return __VA_ARGS__; })

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
