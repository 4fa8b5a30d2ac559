#include "catalog/catalog.h"

#include <c10/util/Exception.h>

#include <sstream>

#include "catalog/prepare.h"

namespace tp::catalog {
namespace {

// The rows of every family, in catalog order (tp.metrics() lists them in this order; the
// "valid metrics" of an unknown-name error too). Each family's rows live next to their
// prepare functions (csrc/catalog/prepare*.cpp).
std::vector<MetricInfo> build() {
  std::vector<MetricInfo> rows;
  for (auto family_rows : {&squared_distance_rows, &kernel_rows, &distance_rows, &boolean_rows})
    for (auto& row : family_rows()) {
      TORCH_INTERNAL_ASSERT(row.prepare != nullptr, "catalog row '", row.name, "' has no prepare function");
      rows.push_back(std::move(row));
    }
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

const char* family_name(Family family) {
  switch (family) {
    case Family::kDistance: return "distance";
    case Family::kKernel: return "kernel";
    case Family::kBoolean: return "boolean";
    case Family::kSequence: return "sequence";
  }
  TORCH_INTERNAL_ASSERT(false, "unknown metric family");
}

const char* output_dtype_name(OutputDtype rule) {
  switch (rule) {
    case OutputDtype::kInput: return "input";
    case OutputDtype::kFloat32OrFloat64: return "float32_or_float64";
    case OutputDtype::kBool: return "bool";
    case OutputDtype::kInt64OrFloat64: return "int64_or_float64";
    case OutputDtype::kFloat64: return "float64";
  }
  TORCH_INTERNAL_ASSERT(false, "unknown output dtype rule");
}

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

ComputeMode compute_mode_of(const ComparisonOptions& o, const char* op) {
  if (!o.compute_mode.has_value()) return ComputeMode::kIfNecessary;
  const std::string& m = *o.compute_mode;
  if (m == "use_mm_for_euclid_dist_if_necessary") return ComputeMode::kIfNecessary;
  if (m == "use_mm_for_euclid_dist") return ComputeMode::kGemm;
  if (m == "donot_use_mm_for_euclid_dist") return ComputeMode::kDirect;
  TORCH_CHECK_VALUE(false, "torchpair.", op, ": 'compute_mode' must be \"use_mm_for_euclid_dist_if_necessary\", "
                    "\"use_mm_for_euclid_dist\" or \"donot_use_mm_for_euclid_dist\" (torch.cdist's), got \"", m, "\"");
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
    // An unexpected keyword argument: TypeError, as Python (and scipy) raise for one.
    TORCH_CHECK_TYPE(false, "torchpair.", op, ": metric '", info.name, "' does not take parameter '", p, "'",
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
  s << "],\"family\":" << quote(family_name(info.family)) << ",\"kind\":" << quote(info.kind) << ",\"params\":[";
  for (size_t i = 0; i < info.params.size(); ++i) {
    const auto& p = info.params[i];
    s << (i ? "," : "") << "{\"name\":" << quote(p.name) << ",\"type\":" << quote(p.type)
      << ",\"default\":" << quote(p.default_doc) << ",\"default_value\":" << p.default_json
      << ",\"doc\":" << quote(p.doc) << "}";
  }
  s << "],\"differentiable\":" << (info.differentiable ? "true" : "false") << ",\"input\":" << quote(info.input)
    << ",\"output\":" << quote(info.output) << ",\"output_dtype\":" << quote(output_dtype_name(info.output_dtype))
    << ",\"doc\":" << quote(info.doc) << "}";
  return s.str();
}

std::string catalog_json() {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < all().size(); ++i) s << (i ? "," : "") << to_json(all()[i]);
  for (const auto& row : sequence_metrics()) s << "," << to_json(row);
  s << "]";
  return s.str();
}

}  // namespace tp::catalog
