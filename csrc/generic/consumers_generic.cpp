// Device-generic consumers: the same engines written with ATen ops on tiles, so tensors on
// any device (CUDA, XPU, MPS, ...) work before custom kernels exist for them. The metric
// definitions are the same templates the CPU engines use, evaluated with V = at::Tensor.
// Memory stays O(tile): tiles are sized so a [B, nr, nc, d] intermediate has at most
// kTileBudget elements.
#include "generic/consumers.h"

#include <c10/util/Exception.h>

#include <limits>

#include "metrics/elementwise.h"
#include "metrics/inner_product.h"
#include "metrics/kernel_list.h"

namespace tp::generic {
namespace {

using engine::Request;
using metrics::Scalars;

constexpr int64_t kTileBudget = int64_t(1) << 24;

// One [nr x nc] tile of the operator in a sweep's orientation.
struct Tile {
  at::Tensor rowx, colx;    // [B, nr, d], [B, nc, d]
  at::Tensor rside, cside;  // [B, nr], [B, nc] or undefined
  int64_t r0 = 0, c0 = 0;
  bool flipped = false, symmetric = false;
};

struct Evaluator {
  virtual ~Evaluator() = default;
  virtual at::Tensor values(const Tile& t) const = 0;
  // Returns the tile's values; accumulates into drow [B, nr, d] and dside [B, nr] (if defined).
  virtual at::Tensor vjp(const Tile& t, const at::Tensor& gup, at::Tensor& drow, at::Tensor& dside) const = 0;
  bool elementwise = false;
};

template <typename M>
struct ElementwiseEvaluator final : Evaluator {
  static constexpr int kCtxSize = M::kCtx > 0 ? M::kCtx : 1;
  std::vector<double> scalars;
  Scalars s;
  explicit ElementwiseEvaluator(std::vector<double> sc) : scalars(std::move(sc)) {
    s = Scalars{scalars.data(), int64_t(scalars.size())};
    elementwise = true;
  }

  void operands(const Tile& t, at::Tensor& X, at::Tensor& Y) const {
    const at::Tensor r = t.rowx.unsqueeze(2), c = t.colx.unsqueeze(1);
    X = t.flipped ? c : r;
    Y = t.flipped ? r : c;
  }

  void accumulate(const Tile& t, at::Tensor* terms, at::Tensor* acc) const {
    at::Tensor X, Y;
    operands(t, X, Y);
    M::term(X, Y, terms, s);
    for (int i = 0; i < M::kAcc; ++i) {
      // broadcast to the full tile even when a term does not depend on both sides
      terms[i] = terms[i].expand({t.rowx.size(0), t.rowx.size(1), t.colx.size(1), t.rowx.size(2)});
      if constexpr (M::kMax) {
        acc[i] = t.rowx.size(2) == 0 ? at::zeros(terms[i].sizes().slice(0, 3), terms[i].options())
                                     : at::clamp_min(terms[i].amax(-1), 0.0);
      } else {
        acc[i] = terms[i].sum(-1);
      }
    }
  }

  at::Tensor values(const Tile& t) const override {
    at::Tensor terms[M::kAcc], acc[M::kAcc];
    accumulate(t, terms, acc);
    return M::finalize(acc, s);
  }

  at::Tensor vjp(const Tile& t, const at::Tensor& gup, at::Tensor& drow, at::Tensor&) const override {
    at::Tensor terms[M::kAcc], acc[M::kAcc];
    accumulate(t, terms, acc);
    const at::Tensor value = M::finalize(acc, s);
    at::Tensor ctx[kCtxSize];
    M::grad_context(acc, value, ctx, s);
    for (int i = 0; i < M::kCtx; ++i) ctx[i] = ctx[i].unsqueeze(-1);
    at::Tensor X, Y;
    operands(t, X, Y);
    at::Tensor g = t.flipped ? M::dy(X, Y, ctx, s) : M::dx(X, Y, ctx, s);
    if constexpr (M::kMax) {
      const at::Tensor ties = (terms[0] == acc[0].unsqueeze(-1)).to(g.scalar_type());
      g = g * ties / ties.sum(-1, /*keepdim=*/true);
    }
    drow.add_((gup.unsqueeze(-1) * g).sum(2));
    return value;
  }
};

template <typename M>
struct InnerProductEvaluator final : Evaluator {
  std::vector<double> scalars;
  Scalars s;
  explicit InnerProductEvaluator(std::vector<double> sc) : scalars(std::move(sc)) {
    s = Scalars{scalars.data(), int64_t(scalars.size())};
  }

  void sides(const Tile& t, const at::Tensor& g, at::Tensor& ra, at::Tensor& cb) const {
    ra = t.rside.defined() ? t.rside.unsqueeze(2) : at::zeros({}, g.options());
    cb = t.cside.defined() ? t.cside.unsqueeze(1) : at::zeros({}, g.options());
  }

  at::Tensor diagonal(const Tile& t, const at::Tensor& g) const {
    const auto opts = g.options().dtype(at::kLong);
    const int64_t nr = g.size(1), nc = g.size(2);
    return (at::arange(t.r0, t.r0 + nr, opts).unsqueeze(1) == at::arange(t.c0, t.c0 + nc, opts).unsqueeze(0));
  }

  at::Tensor values(const Tile& t) const override {
    const at::Tensor g = at::matmul(t.rowx, t.colx.transpose(1, 2));
    at::Tensor ra, cb;
    sides(t, g, ra, cb);
    if constexpr (M::kDistanceBased) {
      at::Tensor v = M::h(at::clamp_min(ra + cb - 2 * g, 0.0), s);
      if (t.symmetric) v = at::where(diagonal(t, g), M::h(at::zeros({}, g.options()), s), v);
      return v;
    } else {
      return t.flipped ? M::value(g, cb, ra, s) : M::value(g, ra, cb, s);
    }
  }

  at::Tensor vjp(const Tile& t, const at::Tensor& gup, at::Tensor& drow, at::Tensor& dside) const override {
    const at::Tensor g = at::matmul(t.rowx, t.colx.transpose(1, 2));
    at::Tensor ra, cb;
    sides(t, g, ra, cb);
    at::Tensor val, fg, frow;
    if constexpr (M::kDistanceBased) {
      const at::Tensor raw = ra + cb - 2 * g;
      const at::Tensor d2 = at::clamp_min(raw, 0.0);
      val = M::h(d2, s);
      at::Tensor dh = M::dh(d2, val, s);
      const double eps = g.scalar_type() == at::kFloat ? double(std::numeric_limits<float>::epsilon())
                                                       : std::numeric_limits<double>::epsilon();
      const at::Tensor floor = M::kSingularAtZero ? (ra + cb) * (16 * eps) : at::zeros({}, g.options());
      dh = at::where(raw <= floor, at::zeros({}, g.options()), dh);
      if (t.symmetric) {
        const at::Tensor diag = diagonal(t, g);
        val = at::where(diag, M::h(at::zeros({}, g.options()), s), val);
        dh = at::where(diag, at::zeros({}, g.options()), dh);
      }
      fg = -2 * dh;
      frow = dh;
    } else {
      at::Tensor fa, fb;
      if (t.flipped) {
        val = M::value(g, cb, ra, s);
        M::grad(g, cb, ra, val, fg, fa, fb, s);
        frow = fb;
      } else {
        val = M::value(g, ra, cb, s);
        M::grad(g, ra, cb, val, fg, fa, fb, s);
        frow = fa;
      }
    }
    drow.add_(at::matmul(gup * fg, t.colx));
    if (dside.defined()) dside.add_((gup * frow).sum(-1));
    return val;
  }
};

std::unique_ptr<Evaluator> make_evaluator(const engine::SourceSpec& spec) {
  using engine::KernelId;
  switch (spec.kernel) {
#define TP_ELEMENTWISE(id, def) \
  case KernelId::id:            \
    return std::make_unique<ElementwiseEvaluator<metrics::def>>(spec.scalars);
#define TP_INNER_PRODUCT(id, def) \
  case KernelId::id:              \
    return std::make_unique<InnerProductEvaluator<metrics::def>>(spec.scalars);
    TORCHPAIR_ELEMENTWISE_KERNELS(TP_ELEMENTWISE)
    TORCHPAIR_INNER_PRODUCT_KERNELS(TP_INNER_PRODUCT)
#undef TP_ELEMENTWISE
#undef TP_INNER_PRODUCT
    default:
      break;
  }
  TORCH_CHECK(false, "torchpair: no device-generic evaluator for kernel ", engine::kernel_name(spec.kernel));
}

// The sweep over one orientation: rows from y when flipped.
struct Sweep {
  at::Tensor rowop, colop, rside, cside;
  bool flipped, symmetric;
  int64_t row_chunk, col_chunk;

  Sweep(const Request& req, bool flip, const Evaluator& ev) : flipped(flip), symmetric(req.spec.symmetric) {
    rowop = flip ? req.y : req.x;
    colop = flip ? req.x : req.y;
    rside = flip ? req.b : req.a;
    cside = flip ? req.a : req.b;
    const int64_t B = std::max<int64_t>(1, req.x.size(0));
    const int64_t per_pair = ev.elementwise ? std::max<int64_t>(1, req.x.size(2)) : 1;
    const int64_t pairs = std::max<int64_t>(1, kTileBudget / (B * per_pair));
    col_chunk = std::max<int64_t>(1, std::min<int64_t>(colop.size(1), 1024));
    row_chunk = std::max<int64_t>(1, pairs / col_chunk);
  }
  int64_t rows() const { return rowop.size(1); }
  int64_t cols() const { return colop.size(1); }

  Tile tile(int64_t r0, int64_t nr, int64_t c0, int64_t nc) const {
    Tile t;
    t.rowx = rowop.narrow(1, r0, nr);
    t.colx = colop.narrow(1, c0, nc);
    if (rside.defined()) t.rside = rside.narrow(1, r0, nr);
    if (cside.defined()) t.cside = cside.narrow(1, c0, nc);
    t.r0 = r0;
    t.c0 = c0;
    t.flipped = flipped;
    t.symmetric = symmetric;
    return t;
  }

  template <typename F>
  void for_each(const F& f) const {
    for (int64_t r0 = 0; r0 < rows(); r0 += row_chunk)
      for (int64_t c0 = 0; c0 < cols(); c0 += col_chunk)
        f(r0, std::min(row_chunk, rows() - r0), c0, std::min(col_chunk, cols() - c0));
  }
};

// gup(flipped, r0, nr, c0, nc) -> dL/dK tile [B, nr, nc] in the sweep's orientation;
// after(r0, nr, c0, nc, values) sees the flipped sweep's values when want_values.
template <typename Gup, typename After>
engine::Grads4 backward_sweeps(const Request& req, std::array<bool, 4> mask, bool want_values, const Gup& gup,
                               const After& after) {
  engine::Grads4 g;
  auto ev = make_evaluator(req.spec);
  const bool need_x = mask[0] || mask[2], need_y = mask[1] || mask[3];
  for (int pass = 0; pass < 2; ++pass) {
    const bool flipped = pass == 0 ? req.spec.flipped : !req.spec.flipped;
    const bool need_rows = flipped ? need_y : need_x;
    const bool need_values = pass == 1 && want_values;
    if (!need_rows && !need_values) continue;
    Sweep sw(req, flipped, *ev);
    at::Tensor drow = at::zeros_like(sw.rowop);
    at::Tensor dside = sw.rside.defined() ? at::zeros_like(sw.rside) : at::Tensor();
    sw.for_each([&](int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
      at::Tensor drow_blk = drow.narrow(1, r0, nr);
      at::Tensor dside_blk = dside.defined() ? dside.narrow(1, r0, nr) : at::Tensor();
      const at::Tensor values = ev->vjp(sw.tile(r0, nr, c0, nc), gup(flipped, r0, nr, c0, nc), drow_blk, dside_blk);
      if (need_values) after(r0, nr, c0, nc, values);
    });
    (flipped ? g[1] : g[0]) = drow;
    (flipped ? g[3] : g[2]) = dside;
  }
  return g;
}

}  // namespace

at::Tensor dense(const Request& req) {
  auto ev = make_evaluator(req.spec);
  Sweep sw(req, req.spec.flipped, *ev);
  at::Tensor out = at::empty({req.batch(), sw.rows(), sw.cols()}, req.x.options());
  sw.for_each([&](int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
    out.narrow(1, r0, nr).narrow(2, c0, nc).copy_(ev->values(sw.tile(r0, nr, c0, nc)));
  });
  return out;
}

engine::Grads4 dense_backward(const at::Tensor& grad, const Request& req, std::array<bool, 4> mask) {
  return backward_sweeps(
      req, mask, false,
      [&](bool flipped, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
        return flipped == req.spec.flipped ? grad.narrow(1, r0, nr).narrow(2, c0, nc)
                                           : grad.narrow(1, c0, nc).narrow(2, r0, nr).transpose(1, 2);
      },
      [](int64_t, int64_t, int64_t, int64_t, const at::Tensor&) {});
}

at::Tensor matmul(const Request& req, const at::Tensor& v) {
  auto ev = make_evaluator(req.spec);
  Sweep sw(req, req.spec.flipped, *ev);
  at::Tensor out = at::zeros({req.batch(), sw.rows(), v.size(2)}, req.x.options());
  sw.for_each([&](int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
    out.narrow(1, r0, nr).add_(at::matmul(ev->values(sw.tile(r0, nr, c0, nc)), v.narrow(1, c0, nc)));
  });
  return out;
}

engine::Grads5 matmul_backward(const at::Tensor& grad, const Request& req, const at::Tensor& v,
                               std::array<bool, 5> mask) {
  at::Tensor dv = mask[4] ? at::zeros_like(v) : at::Tensor();
  auto g = backward_sweeps(
      req, {mask[0], mask[1], mask[2], mask[3]}, mask[4],
      [&](bool flipped, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
        return flipped == req.spec.flipped ? at::matmul(grad.narrow(1, r0, nr), v.narrow(1, c0, nc).transpose(1, 2))
                                           : at::matmul(v.narrow(1, r0, nr), grad.narrow(1, c0, nc).transpose(1, 2));
      },
      [&](int64_t r0, int64_t nr, int64_t c0, int64_t nc, const at::Tensor& values) {
        dv.narrow(1, r0, nr).add_(at::matmul(values, grad.narrow(1, c0, nc)));
      });
  return {g[0], g[1], g[2], g[3], dv};
}

at::Tensor row_sum(const Request& req) {
  auto ev = make_evaluator(req.spec);
  Sweep sw(req, req.spec.flipped, *ev);
  at::Tensor out = at::zeros({req.batch(), sw.rows()}, req.x.options());
  sw.for_each([&](int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
    out.narrow(1, r0, nr).add_(ev->values(sw.tile(r0, nr, c0, nc)).sum(-1));
  });
  return out;
}

engine::Grads4 row_sum_backward(const at::Tensor& grad, const Request& req, std::array<bool, 4> mask) {
  return backward_sweeps(
      req, mask, false,
      [&](bool flipped, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
        return flipped == req.spec.flipped ? grad.narrow(1, r0, nr).unsqueeze(2).expand({-1, nr, nc})
                                           : grad.narrow(1, c0, nc).unsqueeze(1).expand({-1, nr, nc});
      },
      [](int64_t, int64_t, int64_t, int64_t, const at::Tensor&) {});
}

}  // namespace tp::generic
