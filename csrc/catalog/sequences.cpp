// The token-sequence metrics (tp.seq) as catalog rows, and the one check of their parameters.
#include "catalog/sequences.h"

#include <c10/util/Exception.h>

#include <cmath>
#include <string>
#include <vector>

#include "catalog/catalog.h"

namespace tp::catalog {
namespace {

struct SequenceRow {
  MetricInfo info;
  seq::Metric metric;
  int64_t scalars;  // the length of the operators' scalar list
};

std::vector<SequenceRow> build() {
  const char* input = "integer token ids [..., N, L] (lengths from x_lengths/y_lengths or the first pad_id)";
  const char* raw = "int64 (float64 when normalized)";
  const ParamInfo weights{"weights", "int[3]", "(1, 1, 1)",
                          "(insertion, deletion, substitution) costs, non-negative integers", "[1, 1, 1]"};
  const ParamInfo pad{"pad", "bool", "False",
                      "count the length difference (else sequences of equal length are required)", "false"};
  const ParamInfo prefix_weight{"prefix_weight", "float", "0.1", "weight of the common prefix, in [0, 1]", "0.1"};
  auto row = [&](const char* name, seq::Metric metric, std::vector<ParamInfo> params, int64_t scalars,
                 const char* doc, bool floating = false) {
    MetricInfo info{name, {}, Family::kSequence, "distance", std::move(params), false, input,
                    floating ? "float64" : raw, doc, nullptr};
    info.output_dtype = floating ? OutputDtype::kFloat64 : OutputDtype::kInt64OrFloat64;
    return SequenceRow{std::move(info), metric, scalars};
  };
  using M = seq::Metric;
  return {
      row("levenshtein", M::levenshtein, {weights}, 3,
          "weighted edit distance (insertions, deletions, substitutions); normalized by rapidfuzz's maximum"),
      row("osa", M::osa, {}, 0, "optimal string alignment (adjacent transpositions, no substring edited twice)"),
      row("damerau_levenshtein", M::damerau_levenshtein, {}, 0, "unrestricted Damerau-Levenshtein distance"),
      row("indel", M::indel, {}, 0, "insertions + deletions; normalized by len1 + len2"),
      row("lcs", M::lcs, {}, 0, "max(len) - longest common subsequence"),
      row("hamming", M::hamming, {pad}, 1, "differing positions (+ the length difference with pad=True)"),
      row("jaro", M::jaro, {}, 0, "1 - Jaro similarity", true),
      row("jaro_winkler", M::jaro_winkler, {prefix_weight}, 1, "1 - Jaro-Winkler similarity", true),
      row("prefix", M::prefix, {}, 0, "max(len) - common prefix length"),
      row("postfix", M::postfix, {}, 0, "max(len) - common suffix length"),
  };
}

const std::vector<SequenceRow>& table() {
  static const std::vector<SequenceRow> rows = build();
  return rows;
}

}  // namespace

const std::vector<MetricInfo>& sequence_metrics() {
  static const std::vector<MetricInfo> rows = [] {
    std::vector<MetricInfo> out;
    for (const auto& r : table()) out.push_back(r.info);
    return out;
  }();
  return rows;
}

seq::Params resolve_sequence(const char* op, c10::string_view metric, at::ArrayRef<double> scalars,
                             bool normalized) {
  seq::Params p;
  p.normalized = normalized;
  const SequenceRow* found = nullptr;
  std::string names;
  for (const auto& e : table()) {
    if (metric == e.info.name) found = &e;
    names += names.empty() ? "" : ", ";
    names += e.info.name;
  }
  TORCH_CHECK_VALUE(found, "torchpair.", op, ": unknown sequence metric '", metric, "' (argument 'metric'); one of ",
                    names);
  p.metric = found->metric;
  TORCH_CHECK_VALUE(int64_t(scalars.size()) == found->scalars, "torchpair.", op, ": metric '", metric, "' takes ",
                    found->scalars, " scalars (argument 'scalars'), got ", scalars.size());
  switch (p.metric) {
    case seq::Metric::levenshtein:
      for (size_t i = 0; i < 3; ++i) {
        const double w = scalars[i];
        TORCH_CHECK_VALUE(std::isfinite(w) && w >= 0 && w == std::floor(w) && w < 9.0e15, "torchpair.", op,
                          ": 'weights' must be non-negative integers (insertion, deletion, substitution), got ",
                          scalars);
      }
      p.ins = int64_t(scalars[0]);
      p.del = int64_t(scalars[1]);
      p.sub = int64_t(scalars[2]);
      break;
    case seq::Metric::hamming:
      TORCH_CHECK_VALUE(scalars[0] == 0.0 || scalars[0] == 1.0, "torchpair.", op,
                        ": 'pad' must be a bool (0 or 1 in 'scalars'), got ", scalars[0]);
      p.pad = scalars[0] != 0.0;
      break;
    case seq::Metric::jaro_winkler:
      TORCH_CHECK_VALUE(scalars[0] >= 0.0 && scalars[0] <= 1.0, "torchpair.", op,
                        ": 'prefix_weight' must be in [0, 1], got ", scalars[0]);
      p.prefix_weight = scalars[0];
      break;
    default:
      break;
  }
  return p;
}

}  // namespace tp::catalog
