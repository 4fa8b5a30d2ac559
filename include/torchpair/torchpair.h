#pragma once
// torchpair: pairwise comparisons for PyTorch / LibTorch.
//   #include <torchpair/torchpair.h>
//   tp::PairwiseOperationOptions options;
//   options.comparison.gamma = 0.2;
//   auto K = tp::pairwise_expression(X, Y, "rbf", true, options);
//   auto output = K.matmul(V);  // [N, C]
// Link the imported CMake target torchpair::torchpair (find_package(torchpair CONFIG)).
#include "torchpair/expression.h"
#include "torchpair/functional.h"
#include "torchpair/options.h"
#include "torchpair/sequences.h"
#include "torchpair/sets.h"
#include "torchpair/version.h"
