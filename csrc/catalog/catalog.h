#pragma once
// The metric catalog: the single source of truth for metric names, aliases, parameters,
// defaults and metadata. C++ reads it directly; Python reads it through the operator
// torchpair::_catalog (JSON), so tp.metrics() and tp.metric_info() never disagree with
// the native library.
//
// Adding a metric = one engine kernel definition (csrc/metrics/) + one row here with its
// prepare function (csrc/catalog/prepare.cpp). No consumer code changes.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "torchpair/options.h"

namespace tp::catalog {

// The engine choice of compute_mode (torch.cdist's names; include/torchpair/params.h).
enum class ComputeMode {
  kIfNecessary,  // "use_mm_for_euclid_dist_if_necessary": direct up to 16 features, GEMM above
  kGemm,         // "use_mm_for_euclid_dist"
  kDirect,       // "donot_use_mm_for_euclid_dist": difference-based, exact zeros for equal rows
};
// The mode of an options struct (unset: kIfNecessary); an unknown name raises c10::ValueError
// naming 'compute_mode' and the operator.
ComputeMode compute_mode_of(const ComparisonOptions& o, const char* op);

// What a public operator hands to a metric's prepare function: validated, batch-flattened
// [B, n, d] / [B, m, d] floating tensors (y is x itself when symmetric).
struct Inputs {
  at::Tensor x, y;
  bool symmetric = false;
  const char* op = "";  // the calling operator, for messages
  ComputeMode compute_mode = ComputeMode::kIfNecessary;
};

// The engine call a metric prepares: operands (possibly centred, scaled, normalised), side
// features, the engine kernel id and its scalars.
struct Prepared {
  at::Tensor x, y;
  at::Tensor a, b;  // undefined when the kernel has no side features
  std::string kernel;
  std::vector<double> scalars;
  bool symmetric = false;
  // Tile value (and result) dtype for kernels over non-floating operands (Boolean family);
  // unset: the operands' dtype.
  std::optional<at::ScalarType> dtype;
};

using PrepareFn = Prepared (*)(const Inputs&, const ComparisonOptions&);

struct ParamInfo {
  std::string name;
  std::string type;         // "float" or "tensor"
  std::string default_doc;  // the default, in words ("1 / n_features")
  std::string doc;
};

struct MetricInfo {
  std::string name;
  std::vector<std::string> aliases;
  std::string family;  // "distance", "kernel", "boolean", "sequence"
  std::string kind;    // "distance" or "similarity"
  std::vector<ParamInfo> params;
  bool differentiable = true;
  std::string input;   // accepted input dtypes, in words
  std::string output;  // output dtype, in words
  std::string doc;
  PrepareFn prepare = nullptr;
};

const std::vector<MetricInfo>& all();
// By canonical name or alias; unknown names raise c10::ValueError listing the valid names.
const MetricInfo& lookup(const std::string& name, const char* op);
// Raises c10::TypeError naming any parameter set in `o` that `info` does not take.
void check_params(const MetricInfo& info, const ComparisonOptions& o, const char* op);

std::string to_json(const MetricInfo& info);
std::string catalog_json();

}  // namespace tp::catalog
