// Set-level consumers (CompositeImplicitAutograd): kNN, Hausdorff, Chamfer, MMD and energy
// distance, built on the streamed consumers, so they never hold N x M and differentiate
// through streamed backward passes. Batched over the leading dimensions of x and y.
// Conventions for empty sets and non-differentiable points: docs/conventions.md.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <limits>

#include "ops/ops.h"

namespace tp::ops {
namespace {

using Opt = std::optional<at::Tensor>;

void check_pair(const char* op, const at::Tensor& x, const at::Tensor& y) {
  for (const auto& [name, t] : {std::pair<const char*, const at::Tensor*>{"x", &x}, {"y", &y}})
    TORCH_CHECK_TYPE(!t->defined() || (!t->is_nested() && t->layout() == at::kStrided), "torchpair.", op, ": '", name,
                     "' must be a dense (strided) tensor, got ",
                     t->is_nested() ? std::string("a nested tensor") : c10::str("layout ", t->layout()));
  TORCH_CHECK_VALUE(x.defined() && x.dim() >= 2, "torchpair.", op, ": 'x' must have shape [..., N, D]");
  TORCH_CHECK_VALUE(y.defined() && y.dim() >= 2, "torchpair.", op, ": 'y' must have shape [..., M, D]");
}

void require_kind(const char* op, const std::string& metric, const char* kind, const char* why) {
  TORCH_CHECK_VALUE(metric_kind(metric, op) == kind, "torchpair.", op, ": 'metric' must be a ", kind, " (", why,
                    "), got '", metric, "' which is a ", metric_kind(metric, op));
}

// The batch shape shared by x and y (for results of empty sets).
at::Tensor full_batch(const at::Tensor& x, const at::Tensor& y, double value) {
  std::vector<c10::SymInt> xb(x.sym_sizes().begin(), x.sym_sizes().end() - 2);
  std::vector<c10::SymInt> yb(y.sym_sizes().begin(), y.sym_sizes().end() - 2);
  auto batch = at::infer_size_symdimvector(xb, yb);
  const auto dtype = at::isFloatingType(x.scalar_type()) ? x.scalar_type() : at::kFloat;
  return at::full_symint(batch, value, x.options().dtype(dtype));
}

// sqrt with derivative 0 at (and below) 0, where the true one is unbounded; NaN (from NaN or
// inf in the data) propagates instead of becoming 0
at::Tensor safe_sqrt(const at::Tensor& v) {
  const at::Tensor positive = v > 0;
  const at::Tensor rest = at::where(at::isnan(v), v, at::zeros_like(v));
  return at::where(positive, at::sqrt(at::where(positive, v, at::ones_like(v))), rest);
}

std::tuple<at::Tensor, at::Tensor> knn_op(const at::Tensor& x, const Opt& y, int64_t k,
                                          c10::string_view metric TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const std::string m(metric);
  // nearest = smallest distance, or largest similarity
  const bool largest = metric_kind(m, "knn") == "similarity";
  return lazy_topk(x, y, m, k, -1, largest, true, false, "largest", opts);
}

// max over the first set of the distance to the nearest point of the second
at::Tensor directed(const at::Tensor& x, const at::Tensor& y, const std::string& metric, int64_t dim,
                    const ComparisonOptions& o) {
  const at::Tensor nearest = std::get<0>(lazy_topk(x, y, metric, 1, dim, false, true, false, "propagate", o));
  return nearest.squeeze(-1).amax(-1);
}

at::Tensor hausdorff_op(const at::Tensor& x, const at::Tensor& y, c10::string_view metric,
                        bool is_directed TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const char* op = "hausdorff";
  const std::string m(metric);
  check_pair(op, x, y);
  require_kind(op, m, "distance", "the Hausdorff distance is defined from distances");
  const bool x_empty = x.sym_size(-2) == 0, y_empty = y.sym_size(-2) == 0;
  // sup over an empty set is 0; the distance to an empty set is +inf
  if (x_empty && (is_directed || y_empty)) return full_batch(x, y, 0.0);
  if (x_empty || y_empty) return full_batch(x, y, std::numeric_limits<double>::infinity());
  const at::Tensor forward = directed(x, y, m, -1, opts);
  if (is_directed) return forward;
  return at::maximum(forward, directed(x, y, m, -2, opts));
}

at::Tensor chamfer_op(const at::Tensor& x, const at::Tensor& y, c10::string_view metric,
                      c10::string_view reduction TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const char* op = "chamfer";
  const std::string m(metric);
  check_pair(op, x, y);
  TORCH_CHECK_VALUE(reduction == "mean" || reduction == "sum", "torchpair.chamfer: 'reduction' must be \"mean\" or "
                    "\"sum\", got \"", reduction, "\"");
  require_kind(op, m, "distance", "the Chamfer distance sums nearest-neighbour distances");
  const bool x_empty = x.sym_size(-2) == 0, y_empty = y.sym_size(-2) == 0;
  if (x_empty && y_empty) return full_batch(x, y, 0.0);
  if (x_empty || y_empty) return full_batch(x, y, std::numeric_limits<double>::infinity());
  auto side = [&](int64_t dim) {
    const at::Tensor nearest = std::get<0>(lazy_topk(x, y, m, 1, dim, false, true, false, "propagate", opts));
    return reduction == "mean" ? nearest.squeeze(-1).mean(-1) : nearest.squeeze(-1).sum(-1);
  };
  return side(-1) + side(-2);
}

at::Tensor mmd_op(const at::Tensor& x, const at::Tensor& y, c10::string_view metric, bool unbiased TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const char* op = "mmd";
  const std::string m(metric);
  check_pair(op, x, y);
  require_kind(op, m, "similarity", "MMD is defined by a kernel");
  const int64_t need = unbiased ? 2 : 1;
  TORCH_CHECK_VALUE(x.sym_size(-2) >= need, "torchpair.mmd: 'x' needs at least ", need, " samples", unbiased ? " (unbiased)" : "",
                    ", got ", x.sym_size(-2));
  TORCH_CHECK_VALUE(y.sym_size(-2) >= need, "torchpair.mmd: 'y' needs at least ", need, " samples", unbiased ? " (unbiased)" : "",
                    ", got ", y.sym_size(-2));
  const at::Tensor kxy = lazy_reduce(x, y, m, "mean", std::nullopt, false, opts);
  if (!unbiased) {
    return lazy_reduce(x, std::nullopt, m, "mean", std::nullopt, false, opts) +
           lazy_reduce(y, std::nullopt, m, "mean", std::nullopt, false, opts) - 2 * kxy;
  }
  // U-statistics: the within-set sums leave out the diagonal K(x_i, x_i)
  auto within = [&](const at::Tensor& s) {
    const at::Tensor total = lazy_reduce(s, std::nullopt, m, "sum", std::nullopt, false, opts);
    const at::Tensor diag = self_values(op, s, m, opts).sum(-1);
    const c10::SymInt n = s.sym_size(-2);
    return (total - diag).div(c10::Scalar(n * (n - 1)));
  };
  return within(x) + within(y) - 2 * kxy;
}

at::Tensor energy_distance_op(const at::Tensor& x, const at::Tensor& y, c10::string_view metric TP_PARAM_DECLS) {
  TP_PACK_PARAMS(opts);
  const char* op = "energy_distance";
  const std::string m(metric);
  check_pair(op, x, y);
  require_kind(op, m, "distance", "the energy distance is defined from distances");
  TORCH_CHECK_VALUE(x.sym_size(-2) >= 1, "torchpair.energy_distance: 'x' needs at least 1 sample");
  TORCH_CHECK_VALUE(y.sym_size(-2) >= 1, "torchpair.energy_distance: 'y' needs at least 1 sample");
  // scipy.stats.energy_distance: sqrt(2 E d(X, Y) - E d(X, X') - E d(Y, Y')) (V-statistics)
  // d(x, y) first (in its own statement: C++ leaves the order of operands unspecified), so a
  // bad 'y' is reported as 'y' by the cross term rather than as the 'x' of d(y, y')
  const at::Tensor dxy = lazy_reduce(x, y, m, "mean", std::nullopt, false, opts);
  const at::Tensor e2 = 2 * dxy - lazy_reduce(x, std::nullopt, m, "mean", std::nullopt, false, opts) -
                        lazy_reduce(y, std::nullopt, m, "mean", std::nullopt, false, opts);
  return safe_sqrt(e2);
}

}  // namespace
}  // namespace tp::ops

TORCH_LIBRARY_IMPL(torchpair, CompositeImplicitAutograd, m) {
  m.impl("knn", &tp::ops::knn_op);
  m.impl("hausdorff", &tp::ops::hausdorff_op);
  m.impl("chamfer", &tp::ops::chamfer_op);
  m.impl("mmd", &tp::ops::mmd_op);
  m.impl("energy_distance", &tp::ops::energy_distance_op);
}
