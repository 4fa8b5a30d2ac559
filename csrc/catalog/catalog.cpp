#include "catalog/catalog.h"

#include <c10/util/Exception.h>

#include <sstream>

#include "catalog/prepare.h"

namespace tp::catalog {
namespace {

const ParamInfo kGamma{"gamma", "float", "1 / n_features", "kernel width; must be finite and >= 0"};

// One row per metric. Keep names, aliases and defaults in step with scipy/sklearn.
std::vector<MetricInfo> build() {
  std::vector<MetricInfo> rows;
  rows.push_back({"euclidean", {"l2"}, "distance", "distance", {}, true, "float32/float64",
                  "input dtype", "sqrt(sum_k (x_k - y_k)^2)", &prepare_euclidean});
  rows.push_back({"sqeuclidean", {}, "distance", "distance", {}, true, "float32/float64", "input dtype",
                  "sum_k (x_k - y_k)^2", &prepare_sqeuclidean});
  rows.push_back({"rbf", {}, "kernel", "similarity", {kGamma}, true, "float32/float64", "input dtype",
                  "exp(-gamma * |x - y|^2)", &prepare_rbf});
  // Boolean family (prepare_boolean.cpp): not differentiable, any bool/integer/floating input.
  const std::string bin = "bool, integer or floating (nonzero = True)";
  const std::string bout = "float32 (float64 if an input is float64)";
  auto boolean = [&](const char* name, const char* kind, const char* doc, PrepareFn fn,
                     std::vector<ParamInfo> params = {}, std::string input = "", std::string output = "") {
    rows.push_back({name, {}, "boolean", kind, std::move(params), false, input.empty() ? bin : input,
                    output.empty() ? bout : output, doc, fn});
  };
  boolean("dice", "distance", "(TF + FT) / (2 TT + TF + FT)", &prepare_dice);
  boolean("jaccard", "distance", "(TF + FT) / (TT + TF + FT)", &prepare_jaccard);
  boolean("kulczynski1", "similarity", "TT / (TF + FT)", &prepare_kulczynski1);
  boolean("rogerstanimoto", "distance", "R / (TT + FF + R), R = 2 (TF + FT)", &prepare_rogerstanimoto);
  boolean("russellrao", "distance", "(D - TT) / D", &prepare_russellrao);
  boolean("sokalmichener", "distance", "R / (TT + FF + R), R = 2 (TF + FT)", &prepare_sokalmichener);
  boolean("sokalsneath", "distance", "R / (TT + R), R = 2 (TF + FT)", &prepare_sokalsneath);
  boolean("yule", "distance", "2 TF FT / (TT FF + TF FT)", &prepare_yule);
  boolean("tanimoto", "similarity", "TT / (TT + TF + FT) = 1 - jaccard", &prepare_tanimoto);
  boolean("matching", "distance", "(TF + FT) / D (sklearn's name for Boolean hamming)", &prepare_matching);
  const ParamInfo kWeights{"w", "tensor", "None (all 1)", "per-feature weights [D], finite and >= 0 (scipy's w)"};
  boolean("hamming", "distance", "sum_k w_k [x_k != y_k] / sum_k w_k (values compared; NaN != NaN)",
          &prepare_hamming, {kWeights}, "any bool, integer or floating dtype (values compared)");
  boolean("equal", "similarity", "all_k x_k == y_k (rows identical)", &prepare_equal, {},
          "any bool, integer or floating dtype (values compared)", "bool");
  return rows;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

const std::vector<MetricInfo>& all() {
  static const std::vector<MetricInfo> rows = build();
  return rows;
}

const MetricInfo& lookup(const std::string& name, const char* op) {
  for (const auto& row : all()) {
    if (row.name == name) return row;
    for (const auto& alias : row.aliases)
      if (alias == name) return row;
  }
  std::ostringstream valid;
  for (const auto& row : all()) valid << (&row == &all().front() ? "" : ", ") << row.name;
  TORCH_CHECK_VALUE(false, "torchpair.", op, ": unknown metric '", name, "' (argument 'metric'); valid metrics: ",
                    valid.str());
}

void check_params(const MetricInfo& info, const ComparisonOptions& o, const char* op) {
  auto takes = [&](const char* p) {
    for (const auto& param : info.params)
      if (param.name == p) return true;
    return false;
  };
  auto reject = [&](const char* p) {
    std::ostringstream names;
    for (const auto& param : info.params) names << (&param == &info.params.front() ? "" : ", ") << param.name;
    TORCH_CHECK_VALUE(false, "torchpair.", op, ": metric '", info.name, "' does not take parameter '", p, "'",
                      info.params.empty() ? std::string(" (it takes no parameters)")
                                          : " (its parameters: " + names.str() + ")");
  };
#define TP_CHECK_PARAM(name) \
  if (o.name.has_value() && !takes(#name)) reject(#name);
  TORCHPAIR_SCALAR_PARAMS(TP_CHECK_PARAM)
  TORCHPAIR_TENSOR_PARAMS(TP_CHECK_PARAM)
#undef TP_CHECK_PARAM
}

std::string to_json(const MetricInfo& info) {
  std::ostringstream s;
  s << "{\"name\":" << quote(info.name) << ",\"aliases\":[";
  for (size_t i = 0; i < info.aliases.size(); ++i) s << (i ? "," : "") << quote(info.aliases[i]);
  s << "],\"family\":" << quote(info.family) << ",\"kind\":" << quote(info.kind) << ",\"params\":[";
  for (size_t i = 0; i < info.params.size(); ++i) {
    const auto& p = info.params[i];
    s << (i ? "," : "") << "{\"name\":" << quote(p.name) << ",\"type\":" << quote(p.type)
      << ",\"default\":" << quote(p.default_doc) << ",\"doc\":" << quote(p.doc) << "}";
  }
  s << "],\"differentiable\":" << (info.differentiable ? "true" : "false") << ",\"input\":" << quote(info.input)
    << ",\"output\":" << quote(info.output) << ",\"doc\":" << quote(info.doc) << "}";
  return s.str();
}

std::string catalog_json() {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < all().size(); ++i) s << (i ? "," : "") << to_json(all()[i]);
  s << "]";
  return s.str();
}

}  // namespace tp::catalog
