#pragma once
// Set-level functions: the C++ twins of tp.knn, tp.hausdorff, tp.chamfer, tp.mmd and
// tp.energy_distance. Each calls the one registered dispatcher operator
// (torchpair::knn, ...), so autograd, autocast and every device work as from Python; none
// holds an N x M matrix. Leading (batch) dimensions of X and Y broadcast.
#include <ATen/Tensor.h>

#include <optional>
#include <string>
#include <tuple>

#include "torchpair/options.h"

namespace tp {

// The k nearest rows of Y for every row of X: (values, indices) [..., N, k], nearest first
// (smallest distance, or largest similarity for a kernel); ties to the lowest index.
// Y nullopt searches X itself.
std::tuple<at::Tensor, at::Tensor> knn(const at::Tensor& x, const std::optional<at::Tensor>& y, int64_t k,
                                       const std::string& metric = "euclidean",
                                       const PairwiseOperationOptions& options = {});

// max_i min_j d(x_i, y_j) when directed (scipy's directed_hausdorff value), else the max of
// both directions.
at::Tensor hausdorff(const at::Tensor& x, const at::Tensor& y, const std::string& metric = "euclidean",
                     bool directed = false, const PairwiseOperationOptions& options = {});

// mean_i min_j d(x_i, y_j) + mean_j min_i d(x_i, y_j); reduction "sum" sums instead.
at::Tensor chamfer(const at::Tensor& x, const at::Tensor& y, const std::string& metric = "sqeuclidean",
                   const std::string& reduction = "mean", const PairwiseOperationOptions& options = {});

// Squared maximum mean discrepancy with any kernel of the catalog (V-statistics; unbiased:
// U-statistics).
at::Tensor mmd(const at::Tensor& x, const at::Tensor& y, const std::string& metric = "rbf", bool unbiased = false,
               const PairwiseOperationOptions& options = {});

// sqrt(2 E d(X, Y) - E d(X, X') - E d(Y, Y')) (V-statistics).
at::Tensor energy_distance(const at::Tensor& x, const at::Tensor& y, const std::string& metric = "euclidean",
                           const PairwiseOperationOptions& options = {});

// ---- entry points added with their subsystems --------------------------------------
// pdist (issue 3a), transport (issue 9) and sequences (issue 8) go here, each a thin call
// of its registered dispatcher operator through csrc/ops/calls.cpp, as above.

}  // namespace tp
