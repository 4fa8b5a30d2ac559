// The LibTorch C++ API (namespace tp): thin wrappers over the dispatcher operators, so C++
// and Python share one implementation, with autograd and autocast.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include <algorithm>
#include <mutex>

#include "catalog/catalog.h"
#include "ops/ops.h"
#include "torchpair/torchpair.h"

namespace tp {

// The materialized matrix of a lazy = false expression (untransposed), computed once. The mutex
// makes the first consumer call safe from several threads at once: one computes, the others
// wait and then share the result. (Not std::call_once: a throwing first call must leave it
// retryable, and libstdc++'s call_once has had bugs with exceptions.)
struct PairwiseExpression::Materialized {
  std::mutex mutex;
  at::Tensor matrix;
};

PairwiseExpression::PairwiseExpression(at::Tensor x, std::optional<at::Tensor> y, std::string metric, bool lazy,
                                       PairwiseOperationOptions options, bool transposed)
    : x_(std::move(x)),
      y_(std::move(y)),
      metric_(std::move(metric)),
      lazy_(lazy),
      options_(std::move(options)),
      transposed_(transposed) {
  if (y_.has_value() && !y_->defined()) y_.reset();
  if (!lazy_) materialized_ = std::make_shared<Materialized>();
}

at::Tensor PairwiseExpression::dense() const {
  at::Tensor k;
  if (lazy_) {
    k = ops::pairwise(x_, y_, metric_, options_.comparison);
  } else {
    std::lock_guard<std::mutex> lock(materialized_->mutex);
    if (!materialized_->matrix.defined()) materialized_->matrix = ops::pairwise(x_, y_, metric_, options_.comparison);
    k = materialized_->matrix;
  }
  return transposed_ ? k.transpose(-1, -2) : k;
}

at::Tensor PairwiseExpression::matmul(const at::Tensor& v) const {
  if (!lazy_) return at::matmul(dense(), v);
  return ops::lazy_matmul(x_, y_, v, metric_, transposed_, options_.comparison);
}

int64_t PairwiseExpression::normalize_dim(int64_t dim, const char* what) const {
  const int64_t nd = int64_t(sizes().size());
  TORCH_CHECK_VALUE(dim >= -nd && dim < nd, "tp::PairwiseExpression::", what, ": 'dim' ", dim,
                    " is out of range for a ", nd, "-D expression");
  const int64_t d = dim < 0 ? dim + nd : dim;
  TORCH_CHECK_VALUE(d >= nd - 2, "tp::PairwiseExpression::", what,
                    ": 'dim' must be one of the last two dimensions (-1 per row, -2 per column), got ", dim);
  return d - nd;  // -1 or -2
}

at::Tensor PairwiseExpression::reduce(const char* reduction, std::optional<int64_t> dim) const {
  std::optional<int64_t> d;
  if (dim.has_value()) d = normalize_dim(*dim, reduction);
  if (!lazy_) {
    const at::Tensor k = dense();
    const std::string r = reduction;
    if (!d.has_value()) {  // every dimension, batch included (at::Tensor::sum())
      if (r == "sum") return k.sum();
      if (r == "mean") return k.mean();
      return at::logsumexp(k.reshape({-1}), 0);
    }
    if (r == "sum") return k.sum(*d);
    if (r == "mean") return k.mean(*d);
    return at::logsumexp(k, *d);
  }
  at::Tensor out = ops::lazy_reduce(x_, y_, metric_, reduction, d, transposed_, options_.comparison);
  if (d.has_value() || out.dim() == 0) return out;
  // The operator reduces the two matrix dims per batch element; the batch reduces here.
  const std::string r = reduction;
  if (r == "sum") return out.sum();
  if (r == "mean") return out.mean();  // every batch element has the same number of entries
  return at::logsumexp(out.reshape({-1}), 0);
}

at::Tensor PairwiseExpression::sum(std::optional<int64_t> dim) const { return reduce("sum", dim); }
at::Tensor PairwiseExpression::mean(std::optional<int64_t> dim) const { return reduce("mean", dim); }
at::Tensor PairwiseExpression::logsumexp(std::optional<int64_t> dim) const { return reduce("logsumexp", dim); }

at::Tensor PairwiseExpression::logsumexp(int64_t dim, double scale, const std::optional<at::Tensor>& log_weight) const {
  const int64_t d = normalize_dim(dim, "logsumexp");
  if (!lazy_) {
    at::Tensor arg = dense() * scale;
    if (log_weight.has_value()) arg = arg + (d == -1 ? log_weight->unsqueeze(-2) : log_weight->unsqueeze(-1));
    return at::logsumexp(arg, {d});
  }
  return ops::lazy_reduce(x_, y_, metric_, "logsumexp", d, transposed_, options_.comparison, scale, log_weight);
}

at::Tensor PairwiseExpression::count(double threshold, int64_t dim) const {
  const int64_t d = normalize_dim(dim, "count");
  if (!lazy_) return dense().le(threshold).sum(d);
  return ops::lazy_reduce(x_, y_, metric_, "count", d, transposed_, options_.comparison, 1.0, std::nullopt, threshold);
}

// The operator returns [..., rows, k] for the reduced dim; k goes where dim was (as at::topk
// puts it), so a reduction over the rows (dim -2) gives [..., k, M].
std::tuple<at::Tensor, at::Tensor> PairwiseExpression::select(const char* what, int64_t k, int64_t dim, bool largest,
                                                              const char* nan) const {
  const int64_t d = normalize_dim(dim, what);
  auto [values, indices] = ops::lazy_topk(x_, y_, metric_, k, d, largest, true, transposed_, nan,
                                          options_.comparison);
  if (d == -2) return {values.transpose(-1, -2), indices.transpose(-1, -2)};
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> PairwiseExpression::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  if (!lazy_) return at::topk(dense(), k, normalize_dim(dim, "topk"), largest, sorted);
  return select("topk", k, dim, largest, "largest");
}

std::tuple<at::Tensor, at::Tensor> PairwiseExpression::min(int64_t dim) const {
  if (!lazy_) return at::min(dense(), normalize_dim(dim, "min"));
  auto [values, indices] = select("min", 1, dim, false, "propagate");
  const int64_t d = normalize_dim(dim, "min");
  return {values.squeeze(d), indices.squeeze(d)};
}

std::tuple<at::Tensor, at::Tensor> PairwiseExpression::max(int64_t dim) const {
  if (!lazy_) return at::max(dense(), normalize_dim(dim, "max"));
  auto [values, indices] = select("max", 1, dim, true, "propagate");
  const int64_t d = normalize_dim(dim, "max");
  return {values.squeeze(d), indices.squeeze(d)};
}

at::Tensor PairwiseExpression::argmin(int64_t dim) const { return std::get<1>(min(dim)); }
at::Tensor PairwiseExpression::argmax(int64_t dim) const { return std::get<1>(max(dim)); }

at::Tensor PairwiseExpression::softmax_matmul(const at::Tensor& v, int64_t dim) const {
  const int64_t d = normalize_dim(dim, "softmax_matmul");
  if (!lazy_) {
    const at::Tensor p = at::softmax(dense(), d);
    return at::matmul(d == -1 ? p : p.transpose(-1, -2), v);
  }
  return ops::lazy_softmax_matmul(x_, y_, v, metric_, d, transposed_, options_.comparison);
}

PairwiseExpression PairwiseExpression::t() const {
  PairwiseExpression e(x_, y_, metric_, lazy_, options_, !transposed_);
  e.materialized_ = materialized_;  // K and K^T share one matrix (and its mutex)
  return e;
}

std::vector<int64_t> PairwiseExpression::sizes() const {
  const at::Tensor& y = y_.has_value() ? *y_ : x_;
  std::vector<int64_t> xb(x_.sizes().begin(), x_.sizes().end() - 2), yb(y.sizes().begin(), y.sizes().end() - 2);
  auto batch = at::infer_size(xb, yb);
  std::vector<int64_t> s(batch.begin(), batch.end());
  const int64_t n = x_.size(-2), m = y.size(-2);
  s.push_back(transposed_ ? m : n);
  s.push_back(transposed_ ? n : m);
  return s;
}

at::Tensor pairwise(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric,
                    const PairwiseOperationOptions& options) {
  std::optional<at::Tensor> yy = (y.has_value() && y->defined()) ? y : std::nullopt;
  return ops::pairwise(x, yy, metric, options.comparison);
}

PairwiseExpression pairwise_expression(const at::Tensor& x, const std::optional<at::Tensor>& y,
                                       const std::string& metric, bool lazy, const PairwiseOperationOptions& options) {
  catalog::lookup(metric, "pairwise_expression");  // an unknown metric fails here, not at first use
  // The operator's own validation (parameters, dtypes, shapes) on zero-row views of the
  // operands, so a bad expression fails where it is built, as in Python (which uses meta
  // tensors; their kernels live in Python, so C++ uses empty views: no tile is computed).
  auto check_operand = [](const char* name, const at::Tensor& t) {
    TORCH_CHECK_VALUE(t.defined(), "tp::pairwise_expression: '", name, "' is an undefined tensor");
    TORCH_CHECK_VALUE(t.dim() >= 2, "tp::pairwise_expression: '", name,
                      "' must have shape [..., rows, features], got ", t.sizes());
  };
  check_operand("X", x);
  std::optional<at::Tensor> yy = (y.has_value() && y->defined()) ? y : std::nullopt;
  if (yy.has_value()) check_operand("Y", *yy);
  {
    at::NoGradGuard no_grad;
    std::optional<at::Tensor> y0;
    if (yy.has_value()) y0 = yy->narrow(-2, 0, 0);
    ops::lazy_reduce(x.narrow(-2, 0, 0), y0, metric, "sum", -1, false, options.comparison);
  }
  return PairwiseExpression(x, yy, metric, lazy, options);
}

std::tuple<at::Tensor, at::Tensor> knn(const at::Tensor& x, const std::optional<at::Tensor>& y, int64_t k,
                                       const std::string& metric, const PairwiseOperationOptions& options) {
  std::optional<at::Tensor> yy = (y.has_value() && y->defined()) ? y : std::nullopt;
  return ops::knn(x, yy, k, metric, options.comparison);
}

at::Tensor hausdorff(const at::Tensor& x, const at::Tensor& y, const std::string& metric, bool directed,
                     const PairwiseOperationOptions& options) {
  return ops::hausdorff(x, y, metric, directed, options.comparison);
}

at::Tensor chamfer(const at::Tensor& x, const at::Tensor& y, const std::string& metric, const std::string& reduction,
                   const PairwiseOperationOptions& options) {
  return ops::chamfer(x, y, metric, reduction, options.comparison);
}

at::Tensor mmd(const at::Tensor& x, const at::Tensor& y, const std::string& metric, bool unbiased,
               const PairwiseOperationOptions& options) {
  return ops::mmd(x, y, metric, unbiased, options.comparison);
}

at::Tensor energy_distance(const at::Tensor& x, const at::Tensor& y, const std::string& metric,
                           const PairwiseOperationOptions& options) {
  return ops::energy_distance(x, y, metric, options.comparison);
}

at::Tensor pdist(const at::Tensor& x, const std::string& metric, const PairwiseOperationOptions& options) {
  return ops::pdist(x, metric, options.comparison);
}

TransportResult emd(const std::optional<at::Tensor>& a, const std::optional<at::Tensor>& b, const at::Tensor& M,
                    std::optional<int64_t> max_iter, bool normalize, std::optional<double> mass_tol) {
  auto [plan, cost, u, v, status] = ops::emd(a, b, M, max_iter, normalize, mass_tol);
  return {plan, cost, u, v, status};
}

at::Tensor emd2(const std::optional<at::Tensor>& a, const std::optional<at::Tensor>& b, const at::Tensor& M,
                std::optional<int64_t> max_iter, bool normalize, std::optional<double> mass_tol) {
  return emd(a, b, M, max_iter, normalize, mass_tol).cost;
}

at::Tensor sinkhorn_divergence(const at::Tensor& x, const at::Tensor& y, const std::optional<at::Tensor>& a,
                               const std::optional<at::Tensor>& b, const SinkhornDivergenceOptions& s,
                               const PairwiseOperationOptions& options) {
  return std::get<0>(ops::sinkhorn_divergence(x, y, a, b, s.p, s.blur, s.scaling, s.reach, s.metric, s.diameter,
                                              s.debias, s.tol, s.max_iter, s.unrolled, true, std::nullopt, true,
                                              options.comparison));
}

namespace seq {
namespace {

// The operators' scalar list for a metric: its catalog parameters in order
// (csrc/catalog/sequences.cpp, as Python's torchpair.sequences does); the operator checks the
// values. A parameter the metric does not take is an error.
std::vector<double> scalars_of(const std::string& metric, const SequenceOptions& o) {
  const catalog::MetricInfo* row = nullptr;
  for (const auto& r : catalog::sequence_metrics())
    if (r.name == metric) row = &r;
  auto takes = [&](const char* name) {
    if (row == nullptr) return true;  // unknown metric: the operator names it
    for (const auto& p : row->params)
      if (p.name == name) return true;
    return false;
  };
  auto reject = [&](const char* name) {
    TORCH_CHECK_TYPE(false, "tp::seq: metric '", metric, "' does not take parameter '", name, "'");
  };
  if (o.weights.has_value() && !takes("weights")) reject("weights");
  if (o.pad.has_value() && !takes("pad")) reject("pad");
  if (o.prefix_weight.has_value() && !takes("prefix_weight")) reject("prefix_weight");
  std::vector<double> scalars;
  if (row == nullptr) return scalars;
  for (const auto& p : row->params) {
    if (p.name == "weights") {
      const auto w = o.weights.value_or(std::array<int64_t, 3>{1, 1, 1});
      scalars.insert(scalars.end(), {double(w[0]), double(w[1]), double(w[2])});
    } else if (p.name == "pad") {
      scalars.push_back(o.pad.value_or(false) ? 1.0 : 0.0);
    } else if (p.name == "prefix_weight") {
      scalars.push_back(o.prefix_weight.value_or(0.1));
    }
  }
  return scalars;
}

template <typename Sig>
c10::TypedOperatorHandle<Sig> seq_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

}  // namespace

at::Tensor pairwise(const at::Tensor& x, const at::Tensor& x_lengths, const at::Tensor& y,
                    const at::Tensor& y_lengths, const std::string& metric, const SequenceOptions& options) {
  static auto op = seq_op<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                     c10::string_view, at::ArrayRef<double>, bool)>("torchpair::_seq_dense");
  // the core operator takes one batch dim: [1, N, L] / [1, N]
  return op.call(x.unsqueeze(0), x_lengths.unsqueeze(0), y.unsqueeze(0), y_lengths.unsqueeze(0), metric,
                 scalars_of(metric, options), options.normalized)
      .squeeze(0);
}

at::Tensor pdist(const at::Tensor& x, const at::Tensor& x_lengths, const std::string& metric,
                 const SequenceOptions& options) {
  static auto op = seq_op<at::Tensor(const at::Tensor&, const at::Tensor&, c10::string_view, at::ArrayRef<double>,
                                     bool)>("torchpair::_seq_pdist");
  return op.call(x.unsqueeze(0), x_lengths.unsqueeze(0), metric, scalars_of(metric, options), options.normalized)
      .squeeze(0);
}

std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& x, const at::Tensor& x_lengths, const at::Tensor& y,
                                        const at::Tensor& y_lengths, int64_t k, const std::string& metric,
                                        bool largest, const SequenceOptions& options) {
  static auto op = seq_op<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                             const at::Tensor&, c10::string_view,
                                                             at::ArrayRef<double>, bool, int64_t, bool)>(
      "torchpair::_seq_topk");
  auto [values, indices] = op.call(x.unsqueeze(0), x_lengths.unsqueeze(0), y.unsqueeze(0), y_lengths.unsqueeze(0),
                                   metric, scalars_of(metric, options), options.normalized, k, largest);
  return {values.reshape({x.size(0), k}), indices.reshape({x.size(0), k})};
}

}  // namespace seq

std::vector<std::string> metrics() {
  std::vector<std::string> names;
  for (const auto& row : catalog::all()) names.push_back(row.name);
  for (const auto& row : catalog::sequence_metrics())
    if (std::find(names.begin(), names.end(), row.name) == names.end()) names.push_back(row.name);
  return names;
}

std::string metric_info_json(const std::string& name) {
  for (const auto& row : catalog::all()) {
    if (row.name == name) return catalog::to_json(row);
    for (const auto& alias : row.aliases)
      if (alias == name) return catalog::to_json(row);
  }
  for (const auto& row : catalog::sequence_metrics())
    if (row.name == name) return catalog::to_json(row);
  return catalog::to_json(catalog::lookup(name, "metric_info"));  // the unknown-name error
}

std::string built_torch_version() { return TORCH_VERSION; }

}  // namespace tp
