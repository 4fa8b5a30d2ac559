// The seed snippet: a lazy RBF kernel times V, never materialized, from LibTorch.
#include <ATen/ATen.h>

#include <iostream>

#include <torchpair/torchpair.h>

int main() {
  at::manual_seed(0);
  const int64_t N = 1000, M = 2000, D = 16, C = 4;
  at::Tensor X = at::randn({N, D}), Y = at::randn({M, D}), V = at::randn({M, C});

  tp::PairwiseOperationOptions options;
  options.comparison.gamma = 0.2;
  auto K = tp::pairwise_expression(X, Y, "rbf", true, options);
  auto output = K.matmul(V);  // [N, C], streamed over tiles

  // The same thing with the N x M matrix, for comparison. compute_mode 2 computes the
  // distances directly: cdist's default, a matrix product past 25 rows, is the less exact
  // reference and can itself miss the 1e-4 checked below.
  at::Tensor reference = at::matmul(at::exp(-0.2 * at::cdist(X, Y, 2.0, /*compute_mode=*/2).pow(2)), V);
  const double err = (output - reference).abs().max().item<double>();
  std::cout << "tp::pairwise_expression(X, Y, \"rbf\").matmul(V): " << output.sizes()
            << ", max |difference| from the dense formula: " << err << "\n";
  // Other consumers, and K^T
  std::cout << "K.sum(-1)[:3] = " << K.sum(-1).slice(0, 0, 3) << "\n";
  std::cout << "K.t().argmax(-1)[:5] = " << K.t().argmax(-1).slice(0, 0, 5) << "\n";
  return err < 1e-4 ? 0 : 1;
}
