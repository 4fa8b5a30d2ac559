// The LibTorch C++ API (namespace tp): thin wrappers over the dispatcher operators, so C++
// and Python share one implementation, with autograd and autocast.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include "catalog/catalog.h"
#include "ops/ops.h"
#include "torchpair/torchpair.h"

namespace tp {

PairwiseExpression::PairwiseExpression(at::Tensor x, std::optional<at::Tensor> y, std::string metric, bool lazy,
                                       PairwiseOperationOptions options, bool transposed)
    : x_(std::move(x)),
      y_(std::move(y)),
      metric_(std::move(metric)),
      lazy_(lazy),
      options_(std::move(options)),
      transposed_(transposed) {
  if (y_.has_value() && !y_->defined()) y_.reset();
}

at::Tensor PairwiseExpression::dense() const {
  if (!lazy_ && materialized_.defined()) return transposed_ ? materialized_.transpose(-1, -2) : materialized_;
  at::Tensor k = ops::pairwise(x_, y_, metric_, options_.comparison);
  if (!lazy_) materialized_ = k;
  return transposed_ ? k.transpose(-1, -2) : k;
}

at::Tensor PairwiseExpression::matmul(const at::Tensor& v) const {
  if (!lazy_) return at::matmul(dense(), v);
  return ops::lazy_matmul(x_, y_, v, metric_, transposed_, options_.comparison);
}

int64_t PairwiseExpression::normalize_dim(int64_t dim) const {
  const int64_t nd = int64_t(sizes().size());
  TORCH_CHECK_VALUE(dim >= -nd && dim < nd, "tp::PairwiseExpression::sum: 'dim' ", dim, " is out of range for ", nd,
                    " dimensions");
  const int64_t d = dim < 0 ? dim + nd : dim;
  TORCH_CHECK_VALUE(d >= nd - 2, "tp::PairwiseExpression::sum: 'dim' must be one of the last two dimensions, got ",
                    dim);
  return d - nd;  // -1 or -2
}

at::Tensor PairwiseExpression::sum(std::optional<int64_t> dim) const {
  if (!lazy_) {
    const at::Tensor k = dense();
    return dim.has_value() ? k.sum(normalize_dim(*dim)) : k.sum({-2, -1});
  }
  std::optional<int64_t> d;
  if (dim.has_value()) d = normalize_dim(*dim);
  return ops::lazy_sum(x_, y_, metric_, d, transposed_, options_.comparison);
}

PairwiseExpression PairwiseExpression::t() const {
  PairwiseExpression e(x_, y_, metric_, lazy_, options_, !transposed_);
  e.materialized_ = materialized_;
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
  return PairwiseExpression(x, y, metric, lazy, options);
}

std::vector<std::string> metrics() {
  std::vector<std::string> names;
  for (const auto& row : catalog::all()) names.push_back(row.name);
  return names;
}

std::string metric_info_json(const std::string& name) {
  return catalog::to_json(catalog::lookup(name, "metric_info"));
}

std::string built_torch_version() { return TORCH_VERSION; }

}  // namespace tp
