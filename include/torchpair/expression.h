#pragma once
#include <ATen/Tensor.h>

#include <optional>
#include <string>

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
  // Sum over dim -1 (per row, [..., N]), -2 (per column, [..., M]) or everything (nullopt).
  at::Tensor sum(std::optional<int64_t> dim = std::nullopt) const;
  // The materialized [..., N, M] matrix.
  at::Tensor dense() const;
  // K^T, lazily.
  PairwiseExpression t() const;

  bool lazy() const { return lazy_; }
  const std::string& metric() const { return metric_; }
  // [..., N, M] (batch dims broadcast between X and Y).
  std::vector<int64_t> sizes() const;

 private:
  int64_t normalize_dim(int64_t dim) const;

  at::Tensor x_;
  std::optional<at::Tensor> y_;
  std::string metric_;
  bool lazy_;
  PairwiseOperationOptions options_;
  bool transposed_;
  mutable at::Tensor materialized_;  // lazy = false only
};

}  // namespace tp
