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

// ---- condensed distances and exact optimal transport ------------------------------------
// scipy's pdist: the condensed upper triangle [..., N(N-1)/2] of X [..., N, D] against itself,
// in scipy's order, computing only that half (torchpair::pdist).
at::Tensor pdist(const at::Tensor& x, const std::string& metric = "euclidean",
                 const PairwiseOperationOptions& options = {});

// The result of an exact transport problem (torchpair::emd): plan [..., n, m], cost [...],
// dual potentials u [..., n], v [..., m] (centred to sum 0) and status [...] (0 optimal,
// 1 stopped at max_iter, with a warning).
struct TransportResult {
  at::Tensor plan, cost, u, v, status;
};
// POT's ot.emd / ot.emd2: a [..., n], b [..., m] (nullopt: uniform), M [..., n, m]; float64
// network simplex on the CPU (CUDA inputs are copied there and back). Differentiable w.r.t.
// M (the plan) and a, b (the duals).
TransportResult emd(const std::optional<at::Tensor>& a, const std::optional<at::Tensor>& b, const at::Tensor& M,
                    std::optional<int64_t> max_iter = std::nullopt, bool normalize = false,
                    std::optional<double> mass_tol = std::nullopt);
// The optimal cost alone, [...].
at::Tensor emd2(const std::optional<at::Tensor>& a, const std::optional<at::Tensor>& b, const at::Tensor& M,
                std::optional<int64_t> max_iter = std::nullopt, bool normalize = false,
                std::optional<double> mass_tol = std::nullopt);

// ---- entropic optimal transport --------------------------------------------------------
// The options of tp::sinkhorn_divergence (Python's keyword arguments, GeomLoss' names):
// the cost is |x - y|^p / p (metric unset; p = 1 or 2) or the catalog metric (its
// parameters in the PairwiseOperationOptions; the minkowski exponent is options.comparison.p),
// eps = blur^p, eps-scaling from diameter^p (unset: the bounding-box diagonal, or the largest
// cost) by scaling^p per iteration, reach (rho = reach^p) for unbalanced transport; tol:
// keep iterating at eps = blur^p until the marginal error is below it (at most max_iter
// more, with a warning); unrolled: autograd through the iterations instead of the converged
// potentials.
struct SinkhornDivergenceOptions {
  double p = 2.0;
  double blur = 0.05;
  double scaling = 0.5;
  std::optional<double> reach;
  std::optional<std::string> metric;
  std::optional<double> diameter;
  bool debias = true;
  std::optional<double> tol;
  int64_t max_iter = 1000;
  bool unrolled = false;
};
// The debiased Sinkhorn divergence S = OT(a, b) - OT(a, a)/2 - OT(b, b)/2 between the point
// clouds x [..., N, D] (weights a [..., N], nullopt: uniform) and y [..., M, D], streamed
// (never N x M), [...]; differentiable w.r.t. x, y, a, b (torchpair::sinkhorn_divergence,
// the operator tp.sinkhorn_divergence calls in Python).
at::Tensor sinkhorn_divergence(const at::Tensor& x, const at::Tensor& y,
                               const std::optional<at::Tensor>& a = std::nullopt,
                               const std::optional<at::Tensor>& b = std::nullopt,
                               const SinkhornDivergenceOptions& sinkhorn = {},
                               const PairwiseOperationOptions& options = {});

// Token sequences (tp.seq in Python) have no C++ entry point yet: call the registered
// operators torchpair::_seq_dense / _seq_pdist / _seq_topk through the dispatcher.

}  // namespace tp
