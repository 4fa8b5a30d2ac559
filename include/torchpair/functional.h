#pragma once
#include <ATen/Tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "torchpair/expression.h"
#include "torchpair/options.h"

namespace tp {

// K = metric(X, Y) as a dense [..., N, M] tensor. Y undefined/nullopt means X against itself.
at::Tensor pairwise(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric,
                    const PairwiseOperationOptions& options = {});
// scipy's name for the same operation.
inline at::Tensor cdist(const at::Tensor& x, const std::optional<at::Tensor>& y, const std::string& metric,
                        const PairwiseOperationOptions& options = {}) {
  return pairwise(x, y, metric, options);
}

// The expression object with consumers (lazy or materialized).
PairwiseExpression pairwise_expression(const at::Tensor& x, const std::optional<at::Tensor>& y,
                                       const std::string& metric, bool lazy = true,
                                       const PairwiseOperationOptions& options = {});

// The metric catalog: canonical names, and one metric's metadata as JSON.
std::vector<std::string> metrics();
std::string metric_info_json(const std::string& name);

// The torch release the library was built against ("2.13.0").
std::string built_torch_version();

}  // namespace tp
