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
