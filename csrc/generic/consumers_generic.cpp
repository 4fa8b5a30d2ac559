// Device-generic consumers: the same engines written with ATen ops on tiles, so tensors on
// any device (CUDA, XPU, MPS, ...) work before custom kernels exist for them. The metric
// definitions are the same templates the CPU engines use, evaluated with V = at::Tensor.
// Memory stays O(tile): tiles are sized so a [B, nr, nc, d] intermediate has at most
// kTileBudget elements.
#include "generic/consumers.h"

#include <c10/util/Exception.h>

#include <limits>
#include <type_traits>

#include "metrics/adapters.h"
#include "metrics/elementwise.h"
#include "metrics/inner_product.h"
#include "metrics/kernels.h"
#include "metrics/distances.h"
#include "metrics/boolean.h"
#include "metrics/kernel_list.h"
#include "reductions/logsumexp.h"
#include "reductions/softmax.h"
#include "reductions/tensor_tile.h"
#include "reductions/topk.h"

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
  bool transposed = false, symmetric = false;
};

struct Evaluator {
  virtual ~Evaluator() = default;
  virtual at::Tensor values(const Tile& t) const = 0;
  // Returns the tile's values; accumulates into drow [B, nr, d] and dside [B, nr] (if defined).
  virtual at::Tensor vjp(const Tile& t, const at::Tensor& gup, at::Tensor& drow, at::Tensor& dside) const = 0;
  // Matched pairs: value_p = K(x_p, y_p) for x, y [B, P, d], sides a, b [B, P] (or
  // undefined); self_mask [B, P] (or undefined) marks exact self-comparisons.
  virtual at::Tensor paired_values(const at::Tensor& x, const at::Tensor& y, const at::Tensor& a,
                                   const at::Tensor& b, const at::Tensor& self_mask) const = 0;
  virtual engine::Grads4 paired_vjp(const at::Tensor& x, const at::Tensor& y, const at::Tensor& a,
                                    const at::Tensor& b, const at::Tensor& self_mask, const at::Tensor& gup) const = 0;
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
    X = t.transposed ? c : r;
    Y = t.transposed ? r : c;
  }

  void accumulate(const Tile& t, at::Tensor* terms, at::Tensor* acc) const {
    at::Tensor X, Y;
    operands(t, X, Y);
    accumulate(X, Y, terms, acc);
  }

  // Terms of broadcastable X, Y [..., d] and their reduction over the last dimension.
  void accumulate(const at::Tensor& X, const at::Tensor& Y, at::Tensor* terms, at::Tensor* acc) const {
    M::term(X, Y, terms, s);
    const auto shape = at::infer_size(X.sizes(), Y.sizes());
    for (int i = 0; i < M::kAcc; ++i) {
      // broadcast to the full shape even when a term does not depend on both sides
      terms[i] = terms[i].expand(shape);
      if constexpr (M::kMax) {
        acc[i] = shape.back() == 0 ? at::zeros(terms[i].sizes().slice(0, shape.size() - 1), terms[i].options())
                                   : at::clamp_min(terms[i].amax(-1), 0.0);
      } else {
        acc[i] = terms[i].sum(-1);
      }
    }
  }

  // each feature's share of a max-reduced value's derivative (terms [..., d], max [...])
  static at::Tensor tie_shares(const at::Tensor& terms, const at::Tensor& max) {
    const at::Tensor m = max.unsqueeze(-1);
    const at::Tensor ties = (terms == m).sum(-1, /*keepdim=*/true).to(terms.scalar_type());
    return metrics::tie_share(terms, m, ties.reciprocal());
  }

  // d value / d x and d value / d y for each feature, weighted by gup [...]
  void weighted_grads(const at::Tensor& X, const at::Tensor& Y, at::Tensor* terms, at::Tensor* acc,
                      const at::Tensor& gup, at::Tensor& gx, at::Tensor& gy) const {
    const at::Tensor value = M::finalize(acc, s);
    at::Tensor ctx[kCtxSize];
    M::grad_context(acc, value, ctx, s);
    for (int i = 0; i < M::kCtx; ++i) ctx[i] = ctx[i].unsqueeze(-1);
    at::Tensor w = gup.unsqueeze(-1);
    if constexpr (M::kMax) w = w * tie_shares(terms[0], acc[0]);
    gx = w * M::dx(X, Y, ctx, s);
    gy = w * M::dy(X, Y, ctx, s);
  }

  at::Tensor paired_values(const at::Tensor& x, const at::Tensor& y, const at::Tensor&, const at::Tensor&,
                           const at::Tensor&) const override {
    at::Tensor terms[M::kAcc], acc[M::kAcc];
    accumulate(x, y, terms, acc);  // differences are exact: self-comparisons need no mask
    return M::finalize(acc, s);
  }

  engine::Grads4 paired_vjp(const at::Tensor& x, const at::Tensor& y, const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, const at::Tensor& gup) const override {
    at::Tensor terms[M::kAcc], acc[M::kAcc], gx, gy;
    accumulate(x, y, terms, acc);
    weighted_grads(x, y, terms, acc, gup, gx, gy);
    return {gx, gy, at::Tensor(), at::Tensor()};
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
    at::Tensor g = t.transposed ? M::dy(X, Y, ctx, s) : M::dx(X, Y, ctx, s);
    if constexpr (M::kMax) g = g * tie_shares(terms[0], acc[0]);
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

  // value, d/dg, d/d(x side), d/d(y side) from g = x'.y' and the sides (x side first);
  // `self` marks exact self-comparisons (distance-based kernels: d2 = 0, gradient 0).
  void evaluate(const at::Tensor& g, const at::Tensor& ax, const at::Tensor& by, const at::Tensor& self,
                at::Tensor& val, at::Tensor& fg, at::Tensor& fx, at::Tensor& fy) const {
    metrics::inner_product_derivatives<M>(g, ax, by, eps(g), val, fg, fx, fy, s);
    if constexpr (math::fixes_self<M>()) {
      if (self.defined()) metrics::exact_self<M>(self, val, fg, fx, fy, s);
    }
  }

  static double eps(const at::Tensor& g) {
    return g.scalar_type() == at::kFloat ? double(std::numeric_limits<float>::epsilon())
                                         : std::numeric_limits<double>::epsilon();
  }

  at::Tensor paired_values(const at::Tensor& x, const at::Tensor& y, const at::Tensor& a, const at::Tensor& b,
                           const at::Tensor& self_mask) const override {
    const at::Tensor g = (x * y).sum(-1);
    const at::Tensor zero = at::zeros({}, g.options());
    at::Tensor val, fg, fx, fy;
    evaluate(g, a.defined() ? a : zero, b.defined() ? b : zero, self_mask, val, fg, fx, fy);
    return val;
  }

  engine::Grads4 paired_vjp(const at::Tensor& x, const at::Tensor& y, const at::Tensor& a, const at::Tensor& b,
                            const at::Tensor& self_mask, const at::Tensor& gup) const override {
    const at::Tensor g = (x * y).sum(-1);
    const at::Tensor zero = at::zeros({}, g.options());
    at::Tensor val, fg, fx, fy;
    evaluate(g, a.defined() ? a : zero, b.defined() ? b : zero, self_mask, val, fg, fx, fy);
    const at::Tensor wg = (gup * fg).unsqueeze(-1);
    return {wg * y, wg * x, a.defined() ? gup * fx : at::Tensor(), b.defined() ? gup * fy : at::Tensor()};
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
      at::Tensor v = t.transposed ? M::value(g, cb, ra, s) : M::value(g, ra, cb, s);
      if constexpr (math::fixes_self<M>()) {
        if (t.symmetric) v = at::where(diagonal(t, g), math::self_value<M>(at::zeros({}, g.options()), s), v);
      }
      return v;
    }
  }

  at::Tensor vjp(const Tile& t, const at::Tensor& gup, at::Tensor& drow, at::Tensor& dside) const override {
    const at::Tensor g = at::matmul(t.rowx, t.colx.transpose(1, 2));
    at::Tensor ra, cb;
    sides(t, g, ra, cb);
    // the kernel's x side is the column side when transposed (rows are y)
    const bool swap = t.transposed && !M::kDistanceBased;
    at::Tensor val, fg, fa, fb;
    metrics::inner_product_derivatives<M>(g, swap ? cb : ra, swap ? ra : cb, eps(g), val, fg, fa, fb, s);
    if constexpr (math::fixes_self<M>()) {
      if (t.symmetric) metrics::exact_self<M>(diagonal(t, g), val, fg, fa, fb, s);
    }
    const at::Tensor frow = swap ? fb : fa;
    drow.add_(at::matmul(gup * fg, t.colx));
    if (dside.defined()) dside.add_((gup * frow).sum(-1));
    return val;
  }
};

// ---- Boolean family (metrics/boolean.h): counts on tiles, then the metric's formula -----
// Not differentiable (the catalog detaches their operands): the vjps only raise.
[[noreturn]] inline void boolean_not_differentiable() {
  TORCH_CHECK(false, "torchpair: Boolean and equality comparisons are not differentiable");
}

// popcount of every int64 word (SWAR with ATen integer ops, so it runs on any device).
// Arithmetic shifts are harmless: every shifted value is masked, and the final byte sum
// (at most 64) has a clear sign bit.
inline at::Tensor popcount64(const at::Tensor& v) {
  at::Tensor x = v - v.bitwise_right_shift(1).bitwise_and(int64_t(0x5555555555555555LL));
  x = x.bitwise_and(int64_t(0x3333333333333333LL)) + x.bitwise_right_shift(2).bitwise_and(int64_t(0x3333333333333333LL));
  x = (x + x.bitwise_right_shift(4)).bitwise_and(int64_t(0x0f0f0f0f0f0f0f0fLL));
  return (x * int64_t(0x0101010101010101LL)).bitwise_right_shift(56);
}

// The Evaluator plumbing shared by the non-differentiable (Boolean / equality) families:
// tiles and matched pairs both evaluate Derived::evaluate(x, y) on broadcast operands.
template <typename Derived>
struct NonDifferentiableEvaluator : Evaluator {
  at::Tensor values(const Tile& t) const override {
    const at::Tensor r = t.rowx.unsqueeze(2), c = t.colx.unsqueeze(1);
    const auto& self = static_cast<const Derived&>(*this);
    return t.transposed ? self.evaluate(c, r) : self.evaluate(r, c);
  }
  at::Tensor vjp(const Tile&, const at::Tensor&, at::Tensor&, at::Tensor&) const override {
    boolean_not_differentiable();
  }
  at::Tensor paired_values(const at::Tensor& x, const at::Tensor& y, const at::Tensor&, const at::Tensor&,
                           const at::Tensor&) const override {
    return static_cast<const Derived&>(*this).evaluate(x, y);
  }
  engine::Grads4 paired_vjp(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, const at::Tensor&) const override {
    boolean_not_differentiable();
  }
};

template <typename M>
struct PackedEvaluator final : NonDifferentiableEvaluator<PackedEvaluator<M>> {
  double features;
  at::ScalarType value_type;
  PackedEvaluator(const std::vector<double>& sc, at::ScalarType vt) : features(sc.at(0)), value_type(vt) {
    this->elementwise = true;  // a tile's [B, nr, nc, words] intermediate counts against the budget
  }

  // formula of broadcastable words x [..., W], y [..., W] (x is the kernel's x operand)
  at::Tensor evaluate(const at::Tensor& x, const at::Tensor& y) const {
    const auto opts = x.options().dtype(value_type);
    const at::Tensor tt = popcount64(x.bitwise_and(y)).sum(-1).to(value_type);
    const at::Tensor nx = popcount64(x).sum(-1).to(value_type), ny = popcount64(y).sum(-1).to(value_type);
    const at::Tensor tf = nx - tt, ft = ny - tt;
    const at::Tensor ff = at::full({}, features, opts) - nx - ny + tt;
    return M::value(tt, tf, ft, ff);
  }
};

template <typename M>
struct EqualityEvaluator final : NonDifferentiableEvaluator<EqualityEvaluator<M>> {
  bool weighted;
  at::ScalarType value_type;
  EqualityEvaluator(const std::vector<double>& sc, at::ScalarType vt) : weighted(sc.at(0) == 1.0), value_type(vt) {
    this->elementwise = true;
  }

  // x [..., d], y [..., d] float64 ([values | weights] when weighted; x's weights are used)
  at::Tensor evaluate(const at::Tensor& x, const at::Tensor& y) const {
    const int64_t D = weighted ? x.size(-1) / 2 : x.size(-1);
    const at::Tensor differ = x.narrow(-1, 0, D).ne(y.narrow(-1, 0, D));
    at::Tensor neq, total;
    if (weighted) {
      const at::Tensor w = x.narrow(-1, D, D);
      neq = at::where(differ, w, at::zeros({}, w.options())).sum(-1);
      total = w.sum(-1).expand_as(neq);
    } else {
      neq = differ.sum(-1).to(at::kDouble);
      total = at::full_like(neq, double(D));
    }
    neq = neq.to(value_type);
    total = total.to(value_type);
    const at::Tensor zero = at::zeros_like(neq);
    return M::value(total - neq, neq, zero, zero);
  }
};

std::unique_ptr<Evaluator> make_evaluator(const engine::SourceSpec& spec, at::ScalarType value_type) {
  using engine::KernelId;
  switch (spec.kernel) {
#define TP_PACKED(id, def) \
  case KernelId::id:       \
    return std::make_unique<PackedEvaluator<metrics::def>>(spec.scalars, value_type);
#define TP_EQUALITY(id, def) \
  case KernelId::id:         \
    return std::make_unique<EqualityEvaluator<metrics::def>>(spec.scalars, value_type);
    TORCHPAIR_PACKED_KERNELS(TP_PACKED)
    TORCHPAIR_EQUALITY_KERNELS(TP_EQUALITY)
#undef TP_PACKED
#undef TP_EQUALITY
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

// The sweep over one orientation: rows from y when transposed.
struct Sweep {
  at::Tensor rowop, colop, rside, cside;
  bool transposed, symmetric;
  int64_t row_chunk, col_chunk;

  Sweep(const Request& req, bool walk_transposed, const Evaluator& ev) : transposed(walk_transposed), symmetric(req.spec.symmetric) {
    rowop = walk_transposed ? req.y : req.x;
    colop = walk_transposed ? req.x : req.y;
    rside = walk_transposed ? req.b : req.a;
    cside = walk_transposed ? req.a : req.b;
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
    t.transposed = transposed;
    t.symmetric = symmetric;
    return t;
  }

  template <typename F>
  void for_each_row_chunk(const F& f) const {
    for (int64_t r0 = 0; r0 < rows(); r0 += row_chunk) f(r0, std::min(row_chunk, rows() - r0));
  }
  template <typename F>
  void for_each_col_chunk(const F& f) const {
    for (int64_t c0 = 0; c0 < cols(); c0 += col_chunk) f(c0, std::min(col_chunk, cols() - c0));
  }
  template <typename F>
  void for_each(const F& f) const {
    for_each_row_chunk([&](int64_t r0, int64_t nr) {
      for_each_col_chunk([&](int64_t c0, int64_t nc) { f(r0, nr, c0, nc); });
    });
  }
};

// gup(transposed, r0, nr, c0, nc) -> dL/dK tile [B, nr, nc] in the sweep's orientation (a gup
// that needs the tile's values takes (evaluator, tile) as extra first arguments);
// after(r0, nr, c0, nc, values) sees the transposed sweep's values when want_values.
template <typename Gup>
at::Tensor call_gup(const Gup& gup, const Evaluator& ev, const Tile& t, bool transposed, int64_t r0, int64_t nr,
                    int64_t c0, int64_t nc) {
  if constexpr (std::is_invocable_v<Gup, const Evaluator&, const Tile&, bool, int64_t, int64_t, int64_t, int64_t>)
    return gup(ev, t, transposed, r0, nr, c0, nc);
  else
    return gup(transposed, r0, nr, c0, nc);
}

// Which tiles a sweep visits (as the CPU walker's walk policies): every tile, or only the
// tiles reaching the strict upper triangle (own orientation) / lower triangle (the
// transposed operator) of the condensed pdist result. f(r0, nr, c0, nc).
struct AllTiles {
  template <typename F>
  void operator()(const Sweep& sw, bool, const F& f) const {
    sw.for_each(f);
  }
};

struct TriangleTiles {
  template <typename F>
  void operator()(const Sweep& sw, bool own, const F& f) const {
    sw.for_each([&](int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
      if (own ? (c0 + nc - 1 > r0) : (c0 < r0 + nr - 1)) f(r0, nr, c0, nc);
    });
  }
};

template <typename Gup, typename After, typename Tiles = AllTiles>
engine::Grads4 backward_sweeps(const Request& req, std::array<bool, 4> mask, bool want_values, const Gup& gup,
                               const After& after, const Tiles& tiles = Tiles{}) {
  engine::Grads4 g;
  auto ev = make_evaluator(req.spec, req.value_type);
  const bool need_x = mask[0] || mask[2], need_y = mask[1] || mask[3];
  for (int pass = 0; pass < 2; ++pass) {
    const bool transposed = pass == 0 ? req.spec.transposed : !req.spec.transposed;
    const bool need_rows = transposed ? need_y : need_x;
    const bool need_values = pass == 1 && want_values;
    if (!need_rows && !need_values) continue;
    Sweep sw(req, transposed, *ev);
    at::Tensor drow = at::zeros_like(sw.rowop);
    at::Tensor dside = sw.rside.defined() ? at::zeros_like(sw.rside) : at::Tensor();
    tiles(sw, transposed == req.spec.transposed, [&](int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
      at::Tensor drow_blk = drow.narrow(1, r0, nr);
      at::Tensor dside_blk = dside.defined() ? dside.narrow(1, r0, nr) : at::Tensor();
      const Tile tile = sw.tile(r0, nr, c0, nc);
      const at::Tensor values = ev->vjp(tile, call_gup(gup, *ev, tile, transposed, r0, nr, c0, nc), drow_blk, dside_blk);
      if (need_values) after(r0, nr, c0, nc, values);
    });
    (transposed ? g[1] : g[0]) = drow;
    (transposed ? g[3] : g[2]) = dside;
  }
  return g;
}

}  // namespace

at::Tensor dense(const Request& req) {
  auto ev = make_evaluator(req.spec, req.value_type);
  Sweep sw(req, req.spec.transposed, *ev);
  at::Tensor out = at::empty({req.batch(), sw.rows(), sw.cols()}, req.value_options());
  sw.for_each([&](int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
    out.narrow(1, r0, nr).narrow(2, c0, nc).copy_(ev->values(sw.tile(r0, nr, c0, nc)));
  });
  return out;
}

engine::Grads4 dense_backward(const at::Tensor& grad, const Request& req, std::array<bool, 4> mask) {
  return backward_sweeps(
      req, mask, false,
      [&](bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
        return transposed == req.spec.transposed ? grad.narrow(1, r0, nr).narrow(2, c0, nc)
                                           : grad.narrow(1, c0, nc).narrow(2, r0, nr).transpose(1, 2);
      },
      [](int64_t, int64_t, int64_t, int64_t, const at::Tensor&) {});
}

at::Tensor matmul(const Request& req, const at::Tensor& v) {
  auto ev = make_evaluator(req.spec, req.value_type);
  Sweep sw(req, req.spec.transposed, *ev);
  at::Tensor out = at::zeros({req.batch(), sw.rows(), v.size(2)}, req.value_options());
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
      [&](bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
        return transposed == req.spec.transposed ? at::matmul(grad.narrow(1, r0, nr), v.narrow(1, c0, nc).transpose(1, 2))
                                           : at::matmul(v.narrow(1, r0, nr), grad.narrow(1, c0, nc).transpose(1, 2));
      },
      [&](int64_t r0, int64_t nr, int64_t c0, int64_t nc, const at::Tensor& values) {
        dv.narrow(1, r0, nr).add_(at::matmul(values, grad.narrow(1, c0, nc)));
      });
  return {g[0], g[1], g[2], g[3], dv};
}

// scale * values + weight[.., j0 : j0 + nj] (the weight of the operator's columns, which
// are the last dimension of values when cols_last): the values a row reduction folds (only
// the logsumexp takes a scale or weight), and the argument of the logsumexp's gradient.
at::Tensor reduce_argument(const engine::RowReduce& r, const at::Tensor& values, int64_t j0, int64_t nj,
                           bool cols_last) {
  at::Tensor t = r.scale == 1.0 ? values : values * r.scale;
  if (r.weight.defined()) {
    const at::Tensor w = r.weight.narrow(1, j0, nj);
    t = t + (cols_last ? w.unsqueeze(1) : w.unsqueeze(2));
  }
  return t;
}

// A row chunk's state of reduction R over its column chunks, then its finalized rows.
template <class R>
at::Tensor row_reduce_walk(const Request& req, const engine::RowReduce& reduction) {
  auto ev = make_evaluator(req.spec, req.value_type);
  Sweep sw(req, req.spec.transposed, *ev);
  const auto opts = req.value_options().dtype(engine::row_reduction_dtype(reduction.kind, req.value_type));
  auto start = [&](int64_t nr) { return R::start(at::zeros({req.batch(), nr, 1}, opts), reduction); };
  if (sw.cols() == 0) return start(sw.rows()).finalize().squeeze(-1).contiguous();
  at::Tensor out = at::empty({req.batch(), sw.rows()}, opts);
  sw.for_each_row_chunk([&](int64_t r0, int64_t nr) {
    R state = start(nr);
    sw.for_each_col_chunk([&](int64_t c0, int64_t nc) {
      at::Tensor values = reduce_argument(reduction, ev->values(sw.tile(r0, nr, c0, nc)), c0, nc, true);
      state.fold(values);
    });
    out.narrow(1, r0, nr).copy_(state.finalize().squeeze(-1));
  });
  return out;
}

at::Tensor row_reduce(const Request& req, const engine::RowReduce& reduction) {
  return engine::visit_row_reduction(reduction.kind, [&](auto tag) {
    return row_reduce_walk<typename decltype(tag)::template type<at::Tensor>>(req, reduction);
  });
}

engine::Grads5 row_reduce_backward(const at::Tensor& grad, const Request& req, const engine::RowReduce& reduction,
                                   const at::Tensor& result, std::array<bool, 5> mask) {
  const std::array<bool, 4> mask4{mask[0], mask[1], mask[2], mask[3]};
  const auto none = [](int64_t, int64_t, int64_t, int64_t, const at::Tensor&) {};
  if (reduction.kind == engine::RowReduction::kSum) {
    auto g = backward_sweeps(
        req, mask4, false,
        [&](bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
          return transposed == req.spec.transposed ? grad.narrow(1, r0, nr).unsqueeze(2).expand({-1, nr, nc})
                                             : grad.narrow(1, c0, nc).unsqueeze(1).expand({-1, nr, nc});
        },
        none);
    return {g[0], g[1], g[2], g[3], at::Tensor()};
  }
  // the differentiable reductions are the sum and the logsumexp (the impl checks the table)
  TORCH_CHECK(reduction.kind == engine::RowReduction::kLogSumExp, "torchpair: reduction \"",
              engine::row_reduction_name(reduction.kind), "\" has no backward sweep");
  // logsumexp of scale K_rc + w_c (reductions/softmax.h): dL/dK_rc = grad_r scale p_rc,
  // dL/dw_c = sum_r grad_r p_rc.
  const bool want_w = mask[4] && reduction.weight.defined();
  at::Tensor dw = want_w ? at::zeros_like(reduction.weight) : at::Tensor();
  const at::Tensor scale = at::full({}, reduction.scale, result.options());
  // (argument, lse, grad) of a tile in the operator's orientation [B, op rows, op cols]
  auto operands = [&](const at::Tensor& values, bool own, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
    const at::Tensor k = own ? values : values.transpose(1, 2);
    const int64_t i0 = own ? r0 : c0, ni = own ? nr : nc, j0 = own ? c0 : r0, nj = own ? nc : nr;
    return std::make_tuple(reduce_argument(reduction, k, j0, nj, true), result.narrow(1, i0, ni).unsqueeze(2),
                           grad.narrow(1, i0, ni).unsqueeze(2));
  };
  auto g = backward_sweeps(
      req, mask4, false,
      [&](const Evaluator& ev, const Tile& t, bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
        const bool own = transposed == req.spec.transposed;
        auto [arg, l, gr] = operands(ev.values(t), own, r0, nr, c0, nc);
        if (want_w && own) dw.narrow(1, c0, nc).add_((gr * reductions::softmax_weight(arg, l)).sum(1));
        const at::Tensor gk = reductions::logsumexp_grad(arg, l, gr, scale);
        return own ? gk : gk.transpose(1, 2);
      },
      none);
  const bool own_pass_ran = req.spec.transposed ? (mask4[1] || mask4[3]) : (mask4[0] || mask4[2]);
  if (want_w && !own_pass_ran) {
    // dw accumulates in the operator's own orientation; that sweep did not run
    auto ev = make_evaluator(req.spec, req.value_type);
    Sweep sw(req, req.spec.transposed, *ev);
    sw.for_each([&](int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
      auto [arg, l, gr] = operands(ev->values(sw.tile(r0, nr, c0, nc)), true, r0, nr, c0, nc);
      dw.narrow(1, c0, nc).add_((gr * reductions::softmax_weight(arg, l)).sum(1));
    });
  }
  return {g[0], g[1], g[2], g[3], dw};
}

// Running top-k: each column chunk's candidates merged with the best so far under the one
// ordering rule (reductions/topk.h).
std::tuple<at::Tensor, at::Tensor> topk(const Request& req, int64_t k, bool largest, bool nan_first) {
  auto ev = make_evaluator(req.spec, req.value_type);
  Sweep sw(req, req.spec.transposed, *ev);
  const auto long_opts = req.value_options().dtype(at::kLong);
  at::Tensor values = at::empty({req.batch(), sw.rows(), k}, req.value_options());
  at::Tensor indices = at::empty({req.batch(), sw.rows(), k}, long_opts);
  if (values.numel() == 0) return {values, indices};
  sw.for_each_row_chunk([&](int64_t r0, int64_t nr) {
    at::Tensor best_v, best_i;
    sw.for_each_col_chunk([&](int64_t c0, int64_t nc) {
      at::Tensor v = ev->values(sw.tile(r0, nr, c0, nc));
      at::Tensor i = at::arange(c0, c0 + nc, long_opts).expand_as(v);
      if (best_v.defined()) {
        v = at::cat({best_v, v}, -1);
        i = at::cat({best_i, i}, -1);
      }
      std::tie(best_v, best_i) = reductions::merge_topk(v, i, std::min<int64_t>(k, v.size(-1)), largest, nan_first);
    });
    values.narrow(1, r0, nr).copy_(best_v);
    indices.narrow(1, r0, nr).copy_(best_i);
  });
  return {values, indices};
}

// The online logsumexp of each row chunk (reductions/logsumexp.h); its rescaling factor also
// rescales the running product.
std::tuple<at::Tensor, at::Tensor> softmax_matmul(const Request& req, const at::Tensor& v) {
  auto ev = make_evaluator(req.spec, req.value_type);
  Sweep sw(req, req.spec.transposed, *ev);
  const int64_t C = v.size(2);
  at::Tensor out = at::zeros({req.batch(), sw.rows(), C}, req.value_options());
  at::Tensor lse = at::full({req.batch(), sw.rows()}, -std::numeric_limits<double>::infinity(), req.value_options());
  if (sw.cols() == 0) return {out, lse};
  sw.for_each_row_chunk([&](int64_t r0, int64_t nr) {
    auto state = reductions::LogSumExp<at::Tensor>::empty(at::zeros({req.batch(), nr, 1}, req.value_options()));
    at::Tensor acc = at::zeros({req.batch(), nr, C}, req.value_options());
    sw.for_each_col_chunk([&](int64_t c0, int64_t nc) {
      at::Tensor P = ev->values(sw.tile(r0, nr, c0, nc));
      const at::Tensor factor = state.fold(P);  // P := exp(K - shift)
      acc = acc * factor + at::matmul(P, v.narrow(1, c0, nc));
    });
    out.narrow(1, r0, nr).copy_(acc / state.sum);
    lse.narrow(1, r0, nr).copy_(state.finalize().squeeze(-1));
  });
  return {out, lse};
}

engine::Grads5 softmax_matmul_backward(const at::Tensor& grad, const Request& req, const at::Tensor& v,
                                       const at::Tensor& out, const at::Tensor& lse, std::array<bool, 5> mask) {
  const at::Tensor delta = (grad * out).sum(-1);
  at::Tensor dv = mask[4] ? at::zeros_like(v) : at::Tensor();
  auto g = backward_sweeps(
      req, {mask[0], mask[1], mask[2], mask[3]}, mask[4],
      [&](const Evaluator& ev, const Tile& t, bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
        const bool own = transposed == req.spec.transposed;
        const at::Tensor K = ev.values(t);
        if (own) {  // dL/dK_rc = p_rc (grad_r . v_c - delta_r)
          const at::Tensor gv = at::matmul(grad.narrow(1, r0, nr), v.narrow(1, c0, nc).transpose(1, 2));
          return reductions::softmax_product_grad(K, lse.narrow(1, r0, nr).unsqueeze(2), gv,
                                                  delta.narrow(1, r0, nr).unsqueeze(2));
        }
        const at::Tensor gv = at::matmul(v.narrow(1, r0, nr), grad.narrow(1, c0, nc).transpose(1, 2));
        return reductions::softmax_product_grad(K, lse.narrow(1, c0, nc).unsqueeze(1), gv,
                                                delta.narrow(1, c0, nc).unsqueeze(1));
      },
      [&](int64_t r0, int64_t nr, int64_t c0, int64_t nc, const at::Tensor& values) {
        // the transposed sweep: rows are V's rows, dV_r += sum_c p_cr grad_c
        const at::Tensor p = reductions::softmax_weight(values, lse.narrow(1, c0, nc).unsqueeze(1));
        dv.narrow(1, r0, nr).add_(at::matmul(p, grad.narrow(1, c0, nc)));
      });
  return {g[0], g[1], g[2], g[3], dv};
}

// ---- paired values: value_p = K(x_p, y_p) for matched rows ---------------------------------
at::Tensor paired(const Request& req, const at::Tensor& self_mask) {
  auto ev = make_evaluator(req.spec, req.value_type);
  return ev->paired_values(req.x, req.y, req.a, req.b, self_mask);
}

engine::Grads4 paired_backward(const at::Tensor& grad, const Request& req, const at::Tensor& self_mask) {
  auto ev = make_evaluator(req.spec, req.value_type);
  return ev->paired_vjp(req.x, req.y, req.a, req.b, self_mask, grad);
}

}  // namespace tp::generic

// ---- pdist: the condensed upper triangle ------------------------------------------------
namespace tp::generic {
namespace {

// Condensed positions of a tile's pairs (row i, column j) with j > i (upper), or of a
// transposed tile's pairs (row j, column i) with i < j; `valid` marks them, `index` is 0 elsewhere.
void condensed_index(int64_t n, int64_t r0, int64_t nr, int64_t c0, int64_t nc, bool upper,
                     const at::TensorOptions& opts, at::Tensor& index, at::Tensor& valid) {
  const auto lo = opts.dtype(at::kLong);
  const at::Tensor r = at::arange(r0, r0 + nr, lo).unsqueeze(1), c = at::arange(c0, c0 + nc, lo).unsqueeze(0);
  const at::Tensor i = upper ? r : c, j = upper ? c : r;
  valid = j > i;
  index = at::where(valid, i * n - at::div(i * (i + 1), 2, "floor") + (j - i - 1), at::zeros({}, lo));
}

}  // namespace

at::Tensor pdist(const Request& req) {
  const int64_t B = req.batch(), n = req.x.size(1);
  at::Tensor out = at::empty({B, n * (n - 1) / 2}, req.value_options());
  if (out.numel() == 0) return out;
  auto ev = make_evaluator(req.spec, req.value_type);
  Sweep sw(req, false, *ev);
  TriangleTiles{}(sw, true, [&](int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
    at::Tensor index, valid;
    condensed_index(n, r0, nr, c0, nc, true, out.options(), index, valid);
    const at::Tensor values = ev->values(sw.tile(r0, nr, c0, nc));  // [B, nr, nc]
    out.index_copy_(1, index.masked_select(valid), values.masked_select(valid.unsqueeze(0)).view({B, -1}));
  });
  return out;
}

engine::Grads4 pdist_backward(const at::Tensor& grad, const Request& req, std::array<bool, 4> mask) {
  const int64_t B = req.batch(), n = req.x.size(1);
  if (B == 0 || n < 2) return engine::Grads4();
  return backward_sweeps(
      req, mask, false,
      [&](bool transposed, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
        at::Tensor index, valid;
        condensed_index(n, r0, nr, c0, nc, !transposed, grad.options(), index, valid);
        return at::where(valid, grad.index_select(1, index.flatten()).view({B, nr, nc}), at::zeros({}, grad.options()));
      },
      [](int64_t, int64_t, int64_t, int64_t, const at::Tensor&) {}, TriangleTiles{});
}

}  // namespace tp::generic
