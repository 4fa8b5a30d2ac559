#pragma once
#include <ATen/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "torchpair/options.h"

namespace tp {

// A pairwise expression K = metric(X, Y) with consumers, the C++ twin of Python's
// tp.LazyPairwise / tp.pairwise_expression. With lazy = true every consumer streams over
// tiles through the torchpair dispatcher operators and never holds the [..., N, M] matrix;
// with lazy = false the matrix is materialized once and consumers use ATen on it.
// Autograd, autocast and every device work exactly as from Python.
class PairwiseExpression {
 public:
  PairwiseExpression(at::Tensor x, std::optional<at::Tensor> y, std::string metric, bool lazy,
                     PairwiseOperationOptions options, bool transposed = false);

  // K @ V: V [..., M, C] (or [..., M]) -> [..., N, C] (or [..., N]).
  at::Tensor matmul(const at::Tensor& v) const;
  // Sum over dim -1 (per row, [..., N]), -2 (per column, [..., M]) or, with nullopt, over every
  // dimension, batch included (a 0-d tensor, as at::Tensor::sum()).
  at::Tensor sum(std::optional<int64_t> dim = std::nullopt) const;
  // Mean over dim (-1, -2 or every dimension, batch included); NaN over an empty set, as at::mean.
  at::Tensor mean(std::optional<int64_t> dim = std::nullopt) const;
  // log(sum(exp(K))) over dim (-1, -2 or every dimension, batch included), computed online;
  // -inf over an empty set.
  at::Tensor logsumexp(std::optional<int64_t> dim = std::nullopt) const;
  // log(sum(exp(scale * K + log_weight))) along dim (-1 or -2): log_weight [..., L] weighs the
  // reduced dimension (L entries), e.g. log b_j + g_j / eps in a Sinkhorn half-step.
  at::Tensor logsumexp(int64_t dim, double scale, const std::optional<at::Tensor>& log_weight = std::nullopt) const;
  // How many entries along dim (-1 per row, -2 per column) are <= threshold: int64 counts
  // (radius-neighbour counts); NaN never counts. Not differentiable.
  at::Tensor count(double threshold, int64_t dim = -1) const;
  // The k largest (largest = false: smallest) entries along dim (-1 or -2), like at::topk:
  // (values, indices) with k in place of dim, best first, ties to the lowest index, NaN ranks
  // as the largest value. Values are differentiable. Lazy results are always sorted.
  std::tuple<at::Tensor, at::Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                          bool sorted = true) const;
  // (values, indices) of the minimum / maximum along dim, like at::min(K, dim) / at::max(K, dim):
  // lowest index on ties, NaN propagates.
  std::tuple<at::Tensor, at::Tensor> min(int64_t dim = -1) const;
  std::tuple<at::Tensor, at::Tensor> max(int64_t dim = -1) const;
  at::Tensor argmin(int64_t dim = -1) const;
  at::Tensor argmax(int64_t dim = -1) const;
  // sum_j softmax_j(K_ij) V_j (dim -1), or sum_i softmax_i(K_ij) V_i (dim -2), streamed with an
  // online softmax.
  at::Tensor softmax_matmul(const at::Tensor& v, int64_t dim = -1) const;
  // The materialized [..., N, M] matrix.
  at::Tensor dense() const;
  // K^T, lazily.
  PairwiseExpression t() const;

  bool lazy() const { return lazy_; }
  const std::string& metric() const { return metric_; }
  // [..., N, M] (batch dims broadcast between X and Y).
  std::vector<int64_t> sizes() const;

 private:
  int64_t normalize_dim(int64_t dim, const char* what) const;
  at::Tensor reduce(const char* reduction, std::optional<int64_t> dim) const;
  std::tuple<at::Tensor, at::Tensor> select(const char* what, int64_t k, int64_t dim, bool largest,
                                            const char* nan) const;

  at::Tensor x_;
  std::optional<at::Tensor> y_;
  std::string metric_;
  bool lazy_;
  PairwiseOperationOptions options_;
  bool transposed_;
  // lazy = false only: the matrix, computed once by the first consumer call (under a mutex,
  // so several threads may make that first call at once) and shared with copies and t().
  struct Materialized;
  std::shared_ptr<Materialized> materialized_;
};

}  // namespace tp
