#pragma once
// The sequence metrics and the resolved parameters of one call (csrc/ops/sequences.cpp
// resolves them; the engines in csrc/cpu/sequences_cpu.cpp evaluate them).
#include <cstdint>

namespace tp::seq {

enum class Metric : int {
  levenshtein = 0,
  osa,
  damerau_levenshtein,
  indel,
  lcs,
  hamming,
  jaro,
  jaro_winkler,
  prefix,
  postfix,
};

// The resolved parameters of one call.
struct Params {
  Metric metric = Metric::levenshtein;
  int64_t ins = 1, del = 1, sub = 1;  // levenshtein weights
  bool pad = false;                   // hamming: allow unequal lengths
  double prefix_weight = 0.1;         // jaro_winkler
  bool normalized = false;
  // Whether the metric needs the pattern's bit masks.
  bool uses_pattern() const {
    switch (metric) {
      case Metric::levenshtein:
      case Metric::osa:
      case Metric::indel:
      case Metric::lcs:
      case Metric::jaro:
      case Metric::jaro_winkler:
        return true;
      default:
        return false;
    }
  }
  // Results are floating (normalized distances, jaro) or int64 (raw edit distances).
  bool floating() const { return normalized || metric == Metric::jaro || metric == Metric::jaro_winkler; }
};

}  // namespace tp::seq
