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
  {  // ---- issue 3b: kernels (sklearn names and defaults; csrc/catalog/prepare_kernels.cpp) ----
    const ParamInfo coef0{"coef0", "float", "1", "additive constant; must be finite", "1"};
    const ParamInfo chi2_gamma{"gamma", "float", "1", "kernel width; must be finite and >= 0", "1"};
    const ParamInfo length_scale{"length_scale", "float", "1", "one length scale for all features; finite, > 0", "1"};
    const ParamInfo length_scales{"length_scales", "tensor", "none",
                                  "one length scale per feature ([D]; Python: an array length_scale), > 0; "
                                  "differentiable"};
    const char* f = "float32/float64";
    const char* out = "input dtype";
    rows.push_back({"linear", {}, "kernel", "similarity", {}, true, f, out, "x . y", &prepare_linear});
    rows.push_back({"polynomial", {"poly"}, "kernel", "similarity",
                    {{"degree", "float", "3", "exponent; finite, >= 1 (integers are exact for negative bases)", "3"},
                     kGamma, coef0},
                    true, f, out, "(gamma * x . y + coef0)^degree", &prepare_polynomial});
    rows.push_back({"sigmoid", {}, "kernel", "similarity", {kGamma, coef0}, true, f, out,
                    "tanh(gamma * x . y + coef0)", &prepare_sigmoid});
    rows.push_back({"cosine_similarity", {}, "kernel", "similarity", {}, true, f, out,
                    "x . y / (|x| |y|); 0 for a row of norm 0 (sklearn)", &prepare_cosine_similarity});
    rows.push_back({"laplacian", {}, "kernel", "similarity", {kGamma}, true, f, out, "exp(-gamma * sum_k |x_k - y_k|)",
                    &prepare_laplacian});
    rows.push_back({"chi2", {}, "kernel", "similarity", {chi2_gamma}, true, f, out,
                    "exp(-gamma * sum_k (x_k - y_k)^2 / (x_k + y_k)); terms with x_k + y_k = 0 are 0; features >= 0",
                    &prepare_chi2});
    rows.push_back({"additive_chi2", {}, "kernel", "similarity", {}, true, f, out,
                    "-sum_k (x_k - y_k)^2 / (x_k + y_k); terms with x_k + y_k = 0 are 0; features >= 0",
                    &prepare_additive_chi2});
    rows.push_back({"matern", {}, "kernel", "similarity",
                    {{"nu", "float", "1.5", "smoothness: 0.5, 1.5, 2.5 or inf", "1.5"}, length_scale, length_scales}, true, f,
                    out, "sklearn.gaussian_process.kernels.Matern(length_scale, nu)", &prepare_matern});
    rows.push_back({"rational_quadratic", {}, "kernel", "similarity",
                    {{"alpha", "float", "1", "scale mixture parameter; finite, > 0", "1"}, length_scale}, true, f, out,
                    "(1 + |x - y|^2 / (2 alpha length_scale^2))^(-alpha) (sklearn RationalQuadratic)",
                    &prepare_rational_quadratic});
  }
  // ---- numeric distances (scipy names; prepare functions in prepare_distances.cpp) ----
  {
    const ParamInfo kP{"p", "float", "2", "the order of the norm; >= 1, or inf", "2"};
    const ParamInfo kW{"w", "tensor", "None (all 1)", "per-feature weights [n_features], >= 0, differentiable"};
    const ParamInfo kV{"V", "tensor", "variances (ddof=1) of the stacked rows (scipy)",
                       "per-feature variances [n_features], >= 0, differentiable"};
    const ParamInfo kVI{"VI", "tensor", "pseudo-inverse of the covariance of the stacked rows",
                        "inverse covariance [n_features, n_features], differentiable"};
    const ParamInfo kBase{"base", "float", "e", "logarithm base; > 0 and != 1", "2.718281828459045"};
    auto dist = [&](const char* name, std::vector<std::string> aliases, std::vector<ParamInfo> params,
                    const char* input, const char* doc, PrepareFn fn) {
      rows.push_back({name, std::move(aliases), "distance", "distance", std::move(params), true, input,
                      "input dtype", doc, fn});
    };
    const char* fp = "float32/float64";
    dist("cityblock", {"manhattan", "l1"}, {}, fp, "sum_k |x_k - y_k|", &prepare_cityblock);
    dist("chebyshev", {"linf"}, {}, fp, "max_k |x_k - y_k|", &prepare_chebyshev);
    dist("minkowski", {}, {kP, kW}, fp, "(sum_k w_k |x_k - y_k|^p)^(1/p)", &prepare_minkowski);
    dist("seuclidean", {}, {kV}, fp, "sqrt(sum_k (x_k - y_k)^2 / V_k)", &prepare_seuclidean);
    dist("mahalanobis", {}, {kVI}, fp, "sqrt((x - y) VI (x - y)^T)", &prepare_mahalanobis);
    dist("cosine", {}, {}, fp, "1 - x.y / (|x| |y|)", &prepare_cosine);
    dist("correlation", {}, {}, fp, "cosine distance of the rows centred to mean 0", &prepare_correlation);
    dist("braycurtis", {}, {}, fp, "sum_k |x_k - y_k| / sum_k |x_k + y_k|", &prepare_braycurtis);
    dist("canberra", {}, {}, fp, "sum_k |x_k - y_k| / (|x_k| + |y_k|)", &prepare_canberra);
    dist("jensenshannon", {}, {kBase}, "float32/float64 (non-negative; rows are normalised to sum 1)",
         "sqrt(JS divergence of the normalised rows / log(base))", &prepare_jensenshannon);
    dist("haversine", {}, {}, "float32/float64 [..., 2] (latitude, longitude in radians)",
         "great-circle distance on the unit sphere", &prepare_haversine);
    dist("nan_euclidean", {}, {}, "float32/float64 (NaN marks a missing value)",
         "sqrt(D / present * sum over present coordinates (x_k - y_k)^2)", &prepare_nan_euclidean);
    dist("hellinger", {}, {}, "float32/float64 (non-negative)", "sqrt(sum_k (sqrt(x_k) - sqrt(y_k))^2 / 2)",
         &prepare_hellinger);
    dist("snr", {}, {}, fp, "var(x - y) / var(x) (signal-to-noise ratio distance)", &prepare_snr);
  }
  // Boolean family (prepare_boolean.cpp): not differentiable, any bool/integer/floating input.
  const std::string bin = "bool, integer or floating (nonzero = True)";
  const std::string bout = "float32 (float64 if an input is float64)";
  auto boolean = [&](const char* name, const char* kind, const char* doc, PrepareFn fn,
                     std::vector<ParamInfo> params = {}, std::string input = "", std::string output = "") {
    rows.push_back({name, {}, "boolean", kind, std::move(params), false, input.empty() ? bin : input,
                    output.empty() ? bout : output, doc, fn});
    rows.back().output_dtype = output.empty() ? "float32_or_float64" : output;
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
      << ",\"default\":" << quote(p.default_doc) << ",\"default_value\":" << p.default_json
      << ",\"doc\":" << quote(p.doc) << "}";
  }
  s << "],\"differentiable\":" << (info.differentiable ? "true" : "false") << ",\"input\":" << quote(info.input)
    << ",\"output\":" << quote(info.output) << ",\"output_dtype\":" << quote(info.output_dtype)
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
