#pragma once
// Edit distances between token sequences: the C++ twins of tp.seq.pairwise / pdist /
// lazy(...).topk. Each calls its registered dispatcher operator (torchpair::_seq_dense,
// _seq_pdist, _seq_topk); results never carry a gradient.
//
// Inputs are 2-D (no batch dims): token ids x [N, L] (any integer dtype) with explicit lengths x_lengths [N]
// (Python's tp.encode / pad-id handling and batch broadcasting stay in Python). Raw
// distances are int64; normalized ones and jaro / jaro_winkler are float64 (rapidfuzz).
#include <ATen/Tensor.h>

#include <array>
#include <optional>
#include <string>
#include <tuple>

namespace tp::seq {

struct SequenceOptions {
  // levenshtein: (insertion, deletion, substitution), non-negative; default (1, 1, 1)
  std::optional<std::array<int64_t, 3>> weights;
  // hamming: count the length difference instead of requiring equal lengths (default false)
  std::optional<bool> pad;
  // jaro_winkler: in [0, 1], default 0.1
  std::optional<double> prefix_weight;
  // rapidfuzz's normalized distance in [0, 1] (float64)
  bool normalized = false;
};

at::Tensor pairwise(const at::Tensor& x, const at::Tensor& x_lengths, const at::Tensor& y,
                    const at::Tensor& y_lengths, const std::string& metric = "levenshtein",
                    const SequenceOptions& options = {});

// Condensed upper triangle [N(N-1)/2] in scipy's order.
at::Tensor pdist(const at::Tensor& x, const at::Tensor& x_lengths, const std::string& metric = "levenshtein",
                 const SequenceOptions& options = {});

// The k best columns per row, streamed (never N x M); largest = false: the k nearest.
std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& x, const at::Tensor& x_lengths, const at::Tensor& y,
                                        const at::Tensor& y_lengths, int64_t k, const std::string& metric,
                                        bool largest = false, const SequenceOptions& options = {});

}  // namespace tp::seq
