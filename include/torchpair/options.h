#pragma once
#include <ATen/Tensor.h>

#include <optional>
#include <string>

#include "torchpair/params.h"

namespace tp {

// Metric parameters. Unset means the same default as the Python API (sklearn/scipy
// conventions, e.g. gamma = 1 / n_features for rbf). A parameter the chosen metric does not
// take is an error (c10::TypeError naming it, as Python's unexpected keyword argument), never silently ignored.
struct ComparisonOptions {
#define TP_DECLARE_SCALAR(name) std::optional<double> name;
#define TP_DECLARE_TENSOR(name) std::optional<at::Tensor> name;
#define TP_DECLARE_STRING(name) std::optional<std::string> name;
  TORCHPAIR_SCALAR_PARAMS(TP_DECLARE_SCALAR)
  TORCHPAIR_TENSOR_PARAMS(TP_DECLARE_TENSOR)
  // Execution option (every metric takes it): compute_mode, torch.cdist's switch between the
  // GEMM and the difference-based engines (include/torchpair/params.h). It lives here, not in
  // PairwiseOperationOptions, because the engine is chosen by the metric's preparation.
  TORCHPAIR_STRING_PARAMS(TP_DECLARE_STRING)
#undef TP_DECLARE_SCALAR
#undef TP_DECLARE_TENSOR
#undef TP_DECLARE_STRING
};

// Options of one pairwise operation: the comparison's parameters, plus execution options
// as they are added.
struct PairwiseOperationOptions {
  ComparisonOptions comparison;
};

}  // namespace tp
