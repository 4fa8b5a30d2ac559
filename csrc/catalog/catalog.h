#pragma once
// The metric catalog: the single source of truth for metric names, aliases, parameters,
// defaults and metadata. C++ reads it directly; Python reads it through the operator
// torchpair::_catalog (JSON), so tp.metrics() and tp.metric_info() never disagree with
// the native library.
//
// Adding a metric = one engine kernel definition (csrc/metrics/) + its line in
// csrc/metrics/kernel_list.h + its prepare function and its row in the family's
// csrc/catalog/prepare_<family>.cpp (each family file contributes its own rows; catalog.cpp
// concatenates them). No consumer code changes.
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
  std::string type;         // "float", "tensor", "bool" or "int[3]"
  std::string default_doc;  // the default, in words ("1 / n_features")
  std::string doc;
  // The default as a JSON value; "null" when it depends on the data (gamma = 1 / n_features,
  // seuclidean's variances) or when absent means "none" (per-feature weights).
  std::string default_json = "null";
};

// A metric's family: decides input dtypes (Boolean metrics take any bool/integer/floating
// input, mixed between x and y; sequence metrics integer tokens) and the V dtype rules.
enum class Family { kDistance, kKernel, kBoolean, kSequence };
// The output dtype as a rule (tp.metric_info()["output_dtype"] names it).
enum class OutputDtype {
  kInput,             // "input": the operands' dtype
  kFloat32OrFloat64,  // "float32_or_float64": float64 if an input is float64, else float32
  kBool,              // "bool"
  kInt64OrFloat64,    // "int64_or_float64": int64; float64 for normalized sequence distances
  kFloat64,           // "float64"
};
// The names Python reads (the catalog JSON): "distance", "kernel", "boolean", "sequence"
// and the rule names above.
const char* family_name(Family family);
const char* output_dtype_name(OutputDtype rule);

struct MetricInfo {
  std::string name;
  std::vector<std::string> aliases;
  Family family;
  std::string kind;    // "distance" or "similarity"
  std::vector<ParamInfo> params;
  bool differentiable = true;
  std::string input;   // accepted input dtypes, in words
  std::string output;  // output dtype, in words (documentation; the rule is output_dtype)
  std::string doc;
  PrepareFn prepare = nullptr;
  OutputDtype output_dtype = OutputDtype::kInput;  // the machine-readable twin of `output`
};

// The metrics of the engine (every row has a prepare function).
const std::vector<MetricInfo>& all();
// The token-sequence metrics (tp.seq; csrc/catalog/sequences.cpp): Family::kSequence, no
// prepare function (integer recurrences, not engine kernels). `hamming` is also a Boolean
// metric of all(); the public API tells them apart by the input (docs: tp.seq routing).
const std::vector<MetricInfo>& sequence_metrics();
// By canonical name or alias; unknown names raise c10::ValueError listing the valid names.
const MetricInfo& lookup(const std::string& name, const char* op);
// Raises c10::TypeError naming any parameter set in `o` that `info` does not take.
void check_params(const MetricInfo& info, const ComparisonOptions& o, const char* op);

// The kernel whose values are the squares of `kernel`'s (euclidean_direct -> sqeuclidean_direct,
// euclidean_gemm -> sqeuclidean_gemm; nullptr for any other): selections rank on it and take
// square roots of the winners only.
const char* squared_kernel(const std::string& kernel);

// Whether no gradient (reverse or forward mode) can flow through t and no subsystem wraps it
// (tracing, functionalization, functorch, lazy conjugation): the condition of the eager
// no-grad fast paths (native preparation passes, internal views made below the autograd
// layers; docs/contracts.md).
bool untracked(const at::Tensor& t);

std::string to_json(const MetricInfo& info);
// Every row: all() then sequence_metrics().
std::string catalog_json();

}  // namespace tp::catalog
